import Foundation
import MQTT
import Testing
import TestSupport

extension DurabilityIntegrationTests {
    /// A full disk under a gateway process: its database lives on a small file system of its
    /// own (``SmallFilesystem``, a tmpfs) that the test fills once the gateway has started, and
    /// makes room on to end the fault; nothing in the gateway knows it is a test. What a
    /// process alone shows is kept here (a `kill -9`, the real publisher's memory cap with a
    /// broker down); the committer's own failure paths are `EventCommitterFaultTests`, in-process.
    @Suite(.serialized) struct DatabaseFaultTests {
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
            let disk = try SmallFilesystem()
            defer { withExtendedLifetime(disk) {} }  // mounted until the end, restarts included
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "\(disk.file("gw.db"))", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(local.port) },
                  remote: { port: \(remote.port) },
                  output: { statusInterval: 1 },
                  triggers: [ { name: "upstream", fences: ["garden-sections"], delivery: "remote" } ],
                }
                """, database: disk.file("gw.db"))
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
            try disk.fill()
            try await walk.drive.publish(0..<30, through: publisher.client)
            #expect(await poll(timeout: .seconds(30)) {
                status()?.counter("events") == expectedFault.count && status()?.warnings.contains { $0.contains("database") } == true
            }, "\(String(describing: status()))\n\(gateway.logTail)")

            if when == "during" {
                gateway.kill()
                disk.makeRoom()
            } else {
                // The fault clears (the retry writes state, journal and the events' outbox rows), then kill -9.
                disk.makeRoom()
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
        /// with the remote broker down as well, up to `outbox.inflight` events wait in
        /// libmosquitto (those handed over before the next refused batch came: a batch past the
        /// cap keeps its newest `outbox.cap`), `outbox.cap` more in memory, and the older rest
        /// are dropped and counted in the status warning. When the remote returns, the kept ones
        /// are delivered: delivered + counted as dropped = all events.
        @Test(.timeLimit(.minutes(5)))
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
            let disk = try SmallFilesystem()
            defer { withExtendedLifetime(disk) {} }  // mounted until the end, restarts included
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "\(disk.file("gw.db"))", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(local.port) },
                  remote: { port: \(remote.port) },
                  output: { statusInterval: 1 },
                  outbox: { cap: 5, inflight: 2 },
                  triggers: [ { name: "upstream", fences: ["garden-sections"], delivery: "remote" } ],
                }
                """, database: disk.file("gw.db"))
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
            try disk.fill()
            try await walk.drive.publish(0..<30, through: publisher.client)
            // Every event decided; the cap dropped some (the first commits may still fit in the
            // last blocks of the database's files, so how many is read from the warning).
            #expect(await poll(timeout: .seconds(30)) { status()?.counter("events") == expected.count },
                    "not every event was decided: \(String(describing: status()?.counters))\n\(gateway.logTail)")
            let warning = status()?.warnings.first { $0.contains("kept in memory were dropped") } ?? ""
            let dropped = Int(warning.split(separator: " ").dropFirst(4).first ?? "") ?? -1
            #expect(warning.contains("cap 5") && dropped >= expected.count - 2 - 5 - 6 && dropped <= expected.count - 5,
                    "expected \(expected.count - 7) to \(expected.count - 5) of \(expected.count) events dropped and counted: \(String(describing: status()?.warnings))")

            // The remote returns: every event is delivered or was counted as dropped, never both.
            try remote.start()
            #expect(await poll(timeout: .seconds(60)) { remoteSubscriber.receivedEvents.deduplicated.count >= expected.count - dropped },
                    "the kept events did not reach the remote broker\n\(gateway.logTail)")
            #expect(await poll(timeout: .seconds(3)) { remoteSubscriber.receivedEvents.deduplicated.count > expected.count - dropped } == false)
            print("memory cap test: \(expected.count) events, \(dropped) dropped past the cap and counted, \(expected.count - dropped) delivered")
            // Room again: the retry takes what was refused and removes the spill file (in
            // /dev/shm, which would otherwise keep one per run).
            disk.makeRoom()
            #expect(await poll(timeout: .seconds(30)) { status().map { !$0.warnings.contains { $0.hasPrefix("the database \(disk.path)") } } ?? false },
                    "\(String(describing: status()?.warnings))\n\(gateway.logTail)")
            #expect(gateway.terminate() == 0, "\(gateway.logTail)")
        }
    }
}
