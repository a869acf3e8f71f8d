import Foundation
import MQTT
import Testing
import TestSupport

extension DurabilityIntegrationTests {
    /// A full database. Tests run as root, so file modes cannot make it
    /// fail; the gateway's test hook `GEOTRIGGER_TEST_STORE_PAGE_LIMIT=FILE` sets
    /// `PRAGMA max_page_count` on its connection from FILE at start and on SIGHUP.
    @Suite(.serialized) struct DatabaseFaultTests {
        /// The database is full from the start: the status warns, events are published from
        /// memory, the gateway keeps running. The limit is lifted (SIGHUP): the warning clears,
        /// the journal gets the events of the fault (state and journal were retried), and a
        /// restart resumes from the state written after the fault (no enter fired again).
        @Test(.timeLimit(.minutes(3)))
        func fullDatabaseWarnsPublishesFromMemoryAndRecovers() async throws {
            let broker = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { broker.stop() }
            let id = unique("gw-full")
            let fences = try TemporaryDirectory(prefix: "fences")
            let limitFile = try fences.write("page-limit", "1\n")  // clamped to the size at start
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(broker.port) },
                  output: { statusInterval: 1 },
                }
                """, environment: ["GEOTRIGGER_TEST_STORE_PAGE_LIMIT": limitFile])
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let subscriber = try await DurabilityRig.subscriber(
                port: broker.port, clientId: unique("dispatch"), filter: "geotriggers/#")
            defer { subscriber.stop() }
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            func status() -> GatewayStatus? { subscriber.lastStatus(statusTopic) }
            func events() -> [WalkEvent] { subscriber.receivedEvents.deduplicated.expectedForm(trigger: "garden-sections") }

            let walk = SectionWalk.make(devices: 4, updates: 80, dwell: 2...4, seed: 0x6_0005,
                                        start: (Date().timeIntervalSince1970 - 3600).rounded())
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) { status()?.status == "started" }, "\(gateway.logTail)")

            // Full: warned, published from memory, still running.
            try await walk.drive.publish(0..<40, through: publisher.client)
            let expectedFault = walk.expected(0..<40)
            #expect(await poll(timeout: .seconds(30)) { events().count >= expectedFault.count },
                    "events were not published from memory\n\(gateway.logTail)")
            #expect(await poll(timeout: .seconds(20)) {
                status()?.warnings.contains { $0.contains("database") && $0.contains("full") } ?? false
            }, "no database warning in the status: \(String(describing: status()?.warnings))\n\(gateway.logTail)")
            #expect(gateway.process?.isRunning == true)
            let warning = status()?.warnings.first { $0.contains("database") } ?? ""

            // The fault clears: writes resume.
            try "0\n".write(toFile: limitFile, atomically: true, encoding: .utf8)
            gateway.process?.signal(SIGHUP)
            #expect(await poll(timeout: .seconds(30)) {
                guard let status = status() else { return false }
                return !status.warnings.contains { $0.contains("database") } && status.counter("events") >= expectedFault.count
            }, "the database warning did not clear: \(String(describing: status()?.warnings))\n\(gateway.logTail)")
            try await walk.drive.publish(40..<60, through: publisher.client)
            let expectedBefore = walk.expected(0..<60)
            #expect(await poll(timeout: .seconds(30)) { events().count >= expectedBefore.count }, "\(gateway.logTail)")
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
            let received = subscriber.receivedEvents.deduplicated
            let journal = try DurabilityRig.journalEventIDs(database: gateway.database, in: gateway.directory.path)
            #expect(Set(journal) == Set(received.map(\.id)), "the journal lacks events of the fault")

            // A restart resumes from the state written once the fault cleared.
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) { status()?.status == "started" && status()?.warnings.isEmpty == true },
                    "\(gateway.logTail)")
            try await walk.drive.publish(60..<80, through: publisher.client)
            let expectedAll = walk.expected(0..<80)
            #expect(await poll(timeout: .seconds(30)) { events().count >= expectedAll.count }, "\(gateway.logTail)")
            let got = events().byDevice
            let expected = expectedAll.byDevice
            for device in walk.drive.devices {
                #expect(got[device] == expected[device], "\(device): expected \(expected[device] ?? []), got \(got[device] ?? [])")
            }
            #expect(subscriber.receivedEvents.deduplicated.visitProblems == [])
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
            print("database fault test: \(expectedFault.count) events published from memory while full, \(expectedAll.count) in all; warning: \(warning)")
        }

        /// Events published from memory while the database fails are kept in the spill file
        /// (a RAM file system) and written to the outbox when the database takes writes again
        /// (unless the broker acknowledged them meanwhile). With the remote broker down
        /// throughout, a `kill -9` during the fault (the restart applies the spill file) or
        /// right after it clears loses none of them, and the restart resumes from the state
        /// that decided them (no enter fired again).
        @Test(.timeLimit(.minutes(3)), arguments: ["during", "after"])
        func killDuringOrAfterTheFaultLosesNoEventPublishedFromMemory(_ when: String) async throws {
            let local = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { local.stop() }
            let remote = try MosquittoProcess(.init(persistence: true, maxQueuedMessages: 1_000_000))
            defer { remote.stop() }
            let remoteSubscriber = try await DurabilityRig.subscriber(
                port: remote.port, clientId: unique("upstream-dispatch"), filter: "geotriggers/#")
            defer { remoteSubscriber.stop() }
            remote.stop()

            let id = unique("gw-fault-kill")
            let fences = try TemporaryDirectory(prefix: "fences")
            let limitFile = try fences.write("page-limit", "1\n")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(local.port) },
                  remote: { port: \(remote.port) },
                  output: { statusInterval: 1 },
                  triggers: [ { name: "upstream", fences: ["garden-sections"], delivery: "remote" } ],
                }
                """, environment: ["GEOTRIGGER_TEST_STORE_PAGE_LIMIT": limitFile])
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let localSubscriber = try await DurabilityRig.subscriber(
                port: local.port, clientId: unique("dispatch"), filter: "geotriggers/status/#")
            defer { localSubscriber.stop() }
            let publisher = try MQTTProbe(port: local.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            func status() -> GatewayStatus? { localSubscriber.lastStatus(statusTopic) }

            let walk = SectionWalk.make(devices: 3, updates: 40, dwell: 2...3, seed: 0x30_0001,
                                        start: (Date().timeIntervalSince1970 - 3600).rounded())
            let expectedFault = walk.expected(0..<30)
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) { status()?.status == "started" }, "\(gateway.logTail)")
            try await walk.drive.publish(0..<30, through: publisher.client)
            #expect(await poll(timeout: .seconds(30)) {
                status()?.counter("events") == expectedFault.count && status()?.warnings.contains { $0.contains("database") } == true
            }, "\(String(describing: status()))\n\(gateway.logTail)")

            if when == "during" {
                gateway.kill()
                try "0\n".write(toFile: limitFile, atomically: true, encoding: .utf8)
            } else {
                // The fault clears (state, journal and the events' outbox rows are written), then kill -9.
                try "0\n".write(toFile: limitFile, atomically: true, encoding: .utf8)
                gateway.process?.signal(SIGHUP)
                #expect(await poll(timeout: .seconds(30)) { status().map { !$0.warnings.contains { $0.contains("database") } } ?? false },
                        "\(String(describing: status()?.warnings))\n\(gateway.logTail)")
                #expect(await poll(timeout: .seconds(30)) { status()?.outbox("remote") == expectedFault.count },
                        "the events of the fault are not in the remote outbox: \(String(describing: status()))")
                gateway.kill()
            }

            // The remote comes back; the restarted gateway delivers every event of the fault.
            try remote.start()
            try gateway.start()
            func received() -> [WalkEvent] { remoteSubscriber.receivedEvents.deduplicated.expectedForm(trigger: "upstream") }
            #expect(await poll(timeout: .seconds(60)) { received().count >= expectedFault.count },
                    "\(received().count) of \(expectedFault.count) events of the fault reached the remote\n\(gateway.logTail)")
            try await walk.drive.publish(30..<40, through: publisher.client)
            let expectedAll = walk.expected(0..<40)
            #expect(await poll(timeout: .seconds(30)) { received().count >= expectedAll.count }, "\(gateway.logTail)")
            let got = received().byDevice
            for (device, events) in expectedAll.byDevice {
                #expect(got[device] == events, "\(device): expected \(events), got \(got[device] ?? [])")
            }
            #expect(remoteSubscriber.receivedEvents.deduplicated.visitProblems == [])
            if when == "during" { #expect(gateway.log.contains("committed what the database refused before the last stop")) }
            print("database fault, kill -9 \(when) it: \(expectedFault.count) events published from memory during the fault, all delivered after the restart; \(expectedAll.count) in all")
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
        }

        /// While the database fails, events are kept in memory only up to a cap (`outbox.cap`):
        /// with the remote broker down as well, `outbox.inflight` events wait in libmosquitto,
        /// `outbox.cap` more in memory, and the older rest are dropped and counted in the status
        /// warning. When the remote returns, the kept ones are delivered: delivered + counted
        /// as dropped = all events.
        @Test(.timeLimit(.minutes(2)))
        func memoryCapDropsOldestAndCounts() async throws {
            let local = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { local.stop() }
            let remote = try MosquittoProcess(.init(persistence: true, maxQueuedMessages: 1_000_000))
            defer { remote.stop() }
            let remoteSubscriber = try await DurabilityRig.subscriber(
                port: remote.port, clientId: unique("upstream-dispatch"), filter: "geotriggers/#")
            defer { remoteSubscriber.stop() }
            remote.stop()

            let id = unique("gw-cap")
            let fences = try TemporaryDirectory(prefix: "fences")
            let limitFile = try fences.write("page-limit", "1\n")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(local.port) },
                  remote: { port: \(remote.port) },
                  output: { statusInterval: 1 },
                  outbox: { cap: 5, inflight: 2 },
                  triggers: [ { name: "upstream", fences: ["garden-sections"], delivery: "remote" } ],
                }
                """, environment: ["GEOTRIGGER_TEST_STORE_PAGE_LIMIT": limitFile])
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let localSubscriber = try await DurabilityRig.subscriber(
                port: local.port, clientId: unique("dispatch"), filter: "geotriggers/status/#")
            defer { localSubscriber.stop() }
            let publisher = try MQTTProbe(port: local.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            func status() -> GatewayStatus? { localSubscriber.lastStatus(statusTopic) }

            let walk = SectionWalk.make(devices: 2, updates: 30, dwell: 2...3, seed: 0x6_0006,
                                        start: (Date().timeIntervalSince1970 - 3600).rounded())
            let expected = walk.expected(0..<30)
            #expect(expected.count > 12)
            try gateway.start()
            #expect(await poll(timeout: .seconds(60)) { status()?.status == "started" }, "\(gateway.logTail)")
            try await walk.drive.publish(0..<30, through: publisher.client)
            // Every event decided; the cap dropped some (the first commits may still fit in the
            // database's free space, so how many is read from the warning).
            #expect(await poll(timeout: .seconds(30)) { status()?.counter("events") == expected.count },
                    "not every event was decided: \(String(describing: status()?.counters))\n\(gateway.logTail)")
            let warning = status()?.warnings.first { $0.contains("kept in memory were dropped") } ?? ""
            let dropped = Int(warning.split(separator: " ").dropFirst(4).first ?? "") ?? -1
            #expect(warning.contains("cap 5") && dropped >= expected.count - 2 - 5 - 6 && dropped <= expected.count - 2 - 5,
                    "expected about \(expected.count - 7) of \(expected.count) events dropped and counted: \(String(describing: status()?.warnings))")

            // The remote returns: every event is delivered or was counted as dropped, never both.
            try remote.start()
            #expect(await poll(timeout: .seconds(60)) { remoteSubscriber.receivedEvents.deduplicated.count >= expected.count - dropped },
                    "the kept events did not reach the remote broker\n\(gateway.logTail)")
            #expect(await poll(timeout: .seconds(3)) { remoteSubscriber.receivedEvents.deduplicated.count > expected.count - dropped } == false)
            print("memory cap test: \(expected.count) events, \(dropped) dropped past the cap and counted, \(expected.count - dropped) delivered")
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
        }
    }
}
