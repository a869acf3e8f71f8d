import Foundation
import MQTT
import Testing
import TestSupport

extension DurabilityIntegrationTests {
    /// Delivery `local`, `remote` and `both` with real brokers, a remote
    /// outage, and an ACL-denied publish.
    @Suite(.serialized) struct DeliveryTests {
        /// How long the remote broker stays down (the issue's figure).
        static let outage: Double = 60

        /// Three triggers with the same fences and rules, one per delivery mode, so each must
        /// produce the same events: `to-local` only on the main broker, `to-remote` only on the
        /// remote one, `to-both` on both. The remote broker is stopped for 60 s in the middle
        /// of the walk (its subscriber keeps a persistent session): local subscribers get the
        /// events live meanwhile; once it is back, the remote subscriber gets every `to-both`
        /// and `to-remote` event, per device in order, and the remote `to-both` stream in the
        /// same order as the local one (both outboxes are written in the same commit order).
        /// `outbox.inflight` is 10, so most of the backlog waits in the outbox, not in
        /// libmosquitto.
        @Test(.timeLimit(.minutes(4)))
        func remoteOutageLosesNothingAndLocalStaysLive() async throws {
            let local = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { local.stop() }
            let remote = try MosquittoProcess(.init(persistence: true, maxQueuedMessages: 1_000_000))
            defer { remote.stop() }
            let id = unique("gw-delivery")
            let directory = try TemporaryDirectory(prefix: "fences")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: directory))" },
                  broker: { port: \(local.port) },
                  remote: { port: \(remote.port) },
                  output: { statusInterval: 1 },
                  outbox: { inflight: 10 },
                  triggers: [
                    { name: "to-local", fences: ["garden-sections"], delivery: "local" },
                    { name: "to-remote", fences: ["garden-sections"], delivery: "remote" },
                    { name: "to-both", fences: ["garden-sections"], delivery: "both" },
                  ],
                }
                """)
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let localSubscriber = try await DurabilityRig.subscriber(
                port: local.port, clientId: unique("local-dispatch"), filter: "geotriggers/#")
            defer { localSubscriber.stop() }
            let remoteSubscriber = try await DurabilityRig.subscriber(
                port: remote.port, clientId: unique("remote-dispatch"), filter: "geotriggers/#")
            defer { remoteSubscriber.stop() }
            let publisher = try MQTTProbe(port: local.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())

            let walk = SectionWalk.make(devices: 4, updates: 100, dwell: 2...4, seed: 0x6_0003,
                                        start: (Date().timeIntervalSince1970 - 3600).rounded())
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) {
                localSubscriber.lastStatus(statusTopic)?.status == "started"
            }, "the gateway did not start\n\(gateway.logTail)")
            // The remote connection is up when its first event arrives; wait for phase A's.
            let phaseA = 0..<20, phaseB = 20..<80, phaseC = 80..<100
            try await walk.drive.publish(phaseA, through: publisher.client)
            let expectedA = walk.expected(phaseA)
            #expect(!expectedA.isEmpty)
            #expect(await poll(timeout: .seconds(60)) {
                remoteSubscriber.receivedEvents.deduplicated.expectedForm(trigger: "to-both").count >= expectedA.count
            }, "the remote subscriber did not get phase A\n\(gateway.logTail)")

            // Remote down: local events stay live.
            remote.stop()
            let stoppedAt = Date()
            try await walk.drive.publish(phaseB, through: publisher.client, pause: .milliseconds(40))
            let expectedAB = walk.expected(phaseA.lowerBound..<phaseB.upperBound)
            let liveLocal = await poll(timeout: .seconds(40)) {
                let events = localSubscriber.receivedEvents.deduplicated
                return events.expectedForm(trigger: "to-both").count >= expectedAB.count
                    && events.expectedForm(trigger: "to-local").count >= expectedAB.count
            }
            let liveAfter = Date().timeIntervalSince(stoppedAt)
            #expect(liveLocal && liveAfter < Self.outage, "local events were not live during the remote outage (\(liveAfter) s)")
            #expect(await poll(timeout: .seconds(10)) {
                guard let status = localSubscriber.lastStatus(statusTopic) else { return false }
                return status.outbox("remote") > 0 && status.warnings.contains { $0.contains("remote broker") }
            }, "the status did not show the remote backlog and warning: \(String(describing: localSubscriber.lastStatus(statusTopic)))")
            let remoteBacklog = localSubscriber.lastStatus(statusTopic)?.outbox("remote") ?? -1
            let remaining = Self.outage - Date().timeIntervalSince(stoppedAt)
            if remaining > 0 { try await Task.sleep(for: .milliseconds(Int(remaining * 1000))) }
            try remote.start()

            // Remote back: everything arrives there.
            try await walk.drive.publish(phaseC, through: publisher.client)
            let expectedAll = walk.expected(0..<100)
            let delivered = await poll(timeout: .seconds(90)) {
                let events = remoteSubscriber.receivedEvents.deduplicated
                return events.expectedForm(trigger: "to-both").count >= expectedAll.count
                    && events.expectedForm(trigger: "to-remote").count >= expectedAll.count
            }
            #expect(delivered, "the remote subscriber did not get every event after the outage\n\(gateway.logTail)")
            #expect(await poll(timeout: .seconds(30)) {
                localSubscriber.receivedEvents.deduplicated.expectedForm(trigger: "to-local").count >= expectedAll.count
            })
            print("delivery test: \(expectedAll.count) events per trigger; remote down \(Self.outage) s with \(remoteBacklog) events in its outbox; local live after \(String(format: "%.1f", liveAfter)) s")

            let localEvents = localSubscriber.receivedEvents.deduplicated
            let remoteEvents = remoteSubscriber.receivedEvents.deduplicated
            let expected = expectedAll.byDevice
            for (name, events) in [("local to-local", localEvents.expectedForm(trigger: "to-local")),
                                   ("local to-both", localEvents.expectedForm(trigger: "to-both")),
                                   ("remote to-both", remoteEvents.expectedForm(trigger: "to-both")),
                                   ("remote to-remote", remoteEvents.expectedForm(trigger: "to-remote"))] {
                let got = events.byDevice
                for device in walk.drive.devices {
                    #expect(got[device] == expected[device], "\(name), \(device): expected \(expected[device] ?? []), got \(got[device] ?? [])")
                }
            }
            // Only where they belong.
            #expect(localEvents.filter { $0.trigger == "to-remote" }.isEmpty)
            #expect(remoteEvents.filter { $0.trigger == "to-local" }.isEmpty)
            // The remote stream in the local stream's order.
            #expect(remoteEvents.filter { $0.trigger == "to-both" }.map(\.id) == localEvents.filter { $0.trigger == "to-both" }.map(\.id))
            #expect(await poll(timeout: .seconds(20)) {
                guard let status = localSubscriber.lastStatus(statusTopic) else { return false }
                return status.outbox("remote") == 0 && status.outbox("local") == 0 && !status.warnings.contains { $0.contains("remote broker") }
            }, "the outboxes did not drain: \(String(describing: localSubscriber.lastStatus(statusTopic)))")
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
        }

        /// An event the broker refuses (mosquitto's ACL denies the gateway's user the topic of
        /// one trigger; MQTT v5, so the PUBACK says 0x87 Not authorized) stays in the outbox, is
        /// counted and shows in the status warnings; the other trigger's events go through.
        @Test(.timeLimit(.minutes(5)))
        func aclDeniedEventStaysInTheOutbox() async throws {
            let broker = try MosquittoProcess(.init(
                users: ["gateway": "gateway-secret", "dispatch": "dispatch-secret"],
                acl: """
                    user gateway
                    topic deny geotriggers/events/refused/#
                    topic readwrite #

                    user dispatch
                    topic read #
                    topic write devices/#
                    """))
            defer { broker.stop() }
            let id = unique("gw-acl")
            let directory = try TemporaryDirectory(prefix: "fences")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: directory))" },
                  broker: { port: \(broker.port), username: "gateway", passwordFile: "gateway.password" },
                  output: { statusInterval: 1 },
                  triggers: [
                    { name: "accepted", fences: ["garden-sections"] },
                    { name: "refused", fences: ["garden-sections"] },
                  ],
                }
                """)
            try gateway.directory.write("gateway.password", "gateway-secret\n")
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let login: (inout MQTTConfiguration) -> Void = { $0.username = "dispatch"; $0.password = "dispatch-secret" }
            let subscriber = try await DurabilityRig.subscriber(
                port: broker.port, clientId: unique("dispatch"), filter: "geotriggers/#", configure: login)
            defer { subscriber.stop() }
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("devices"), configure: login)
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())

            let walk = SectionWalk.make(devices: 2, updates: 20, dwell: 2...3, seed: 0x6_0004,
                                        start: (Date().timeIntervalSince1970 - 3600).rounded())
            let expected = walk.expected(0..<20)
            #expect(expected.count >= 4)
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) {
                subscriber.lastStatus(statusTopic)?.status == "started"
            }, "the gateway did not start\n\(gateway.logTail)")
            try await walk.drive.publish(0..<20, through: publisher.client)

            #expect(await poll(timeout: .seconds(30)) {
                subscriber.receivedEvents.deduplicated.expectedForm(trigger: "accepted").count >= expected.count
            }, "the accepted trigger's events did not arrive\n\(gateway.logTail)")
            let shown = await poll(timeout: .seconds(30)) {
                guard let status = subscriber.lastStatus(statusTopic) else { return false }
                return status.outbox("local") == expected.count
                    && status.warnings.contains { $0.contains("0x87") && $0.contains("\(expected.count)") }
            }
            #expect(shown, "status: \(String(describing: subscriber.lastStatus(statusTopic)))")
            #expect(subscriber.receivedEvents.filter { $0.trigger == "refused" }.isEmpty)
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
            // Still there after a clean stop: the refused events wait in the outbox, and the
            // journal has every event of both triggers.
            let rows = try ExternalProgram.run("/usr/bin/sqlite3", [gateway.database, "SELECT count(*) FROM outbox_local"])
            #expect(rows.trimmingCharacters(in: .whitespacesAndNewlines) == "\(expected.count)")
            let journal = try DurabilityRig.journalEventIDs(database: gateway.database, in: gateway.directory.path)
            #expect(journal.count == 2 * expected.count)
        }
    }
}
