import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension DurabilityIntegrationTests {
    /// `kill -9` of the gateway at 5 random points of a 2,000-update
    /// drive of 20 devices, restarted each time, gives per device the same (trigger, fence,
    /// type) counts as an uninterrupted run, and no enter is fired twice.
    ///
    /// The window docs/configuration.md "Durability" leaves open: an update libmosquitto already
    /// acknowledged to the broker but not yet committed (in the ingest queue, a shard's
    /// mailbox or the batch being written) is lost by `kill -9`. Two things make exact
    /// equality an honest expectation anyway:
    /// - after each kill the devices re-send their whole track so far (as a device with a
    ///   store-and-forward buffer would after an outage), before the drive goes on. Every
    ///   update at or before a device's committed fix time is dropped by fix-time order
    ///   (`duplicate`/`outOfOrder`), so only what the window lost is processed again, from
    ///   the committed state, with the same event ids. Nothing committed is re-fired.
    /// - the broker re-delivers the messages it had in flight to the killed gateway first
    ///   (at most its in-flight window, the newest ones); such an update can overtake the
    ///   re-sent ones of its device and leave a short gap. The walk therefore stays on each
    ///   spot for at least 15 updates at the same position: a gap shorter than a stay can
    ///   only move an event to a later update of the same stay, never lose or add one.
    /// The comparison itself is on (trigger, fence, type) after de-duplicating by event id
    /// (an event published but not yet removed from the outbox is sent again after a restart);
    /// such a re-send must repeat the committed payload byte for byte (`decidedTwice`), so a
    /// state that went backwards after a restart is caught even when it re-decides the same ids.
    @Suite(.serialized) struct KillTests {
        static let deviceCount = 20
        static let updatesPerDevice = 100

        struct RunResult {
            var events: [ReceivedEvent]  // de-duplicated, arrival order
            var received: Int  // with duplicates
            var decidedTwice: [String]
            var journal: [String]
            var exitStatus: Int32
            var log: String
        }

        @Test(.timeLimit(.minutes(4)))
        func killNineAtFiveRandomPointsLosesNoEventAndRefiresNoEnter() async throws {
            let start = (Date().timeIntervalSince1970 - 7200).rounded()
            let drive = Drive.garden(devices: Self.deviceCount, updates: Self.updatesPerDevice, dwell: 15...25,
                                     seed: 0x6_0001, start: start)
            #expect(drive.rounds.count * drive.devices.count == 2000)

            // Five kill points (rounds of the drive), seeded, at least 12 rounds apart.
            var random = SplitMix64(seed: 0x6_0002)
            var kills: [Int] = []
            while kills.count < 5 {
                let candidate = Int.random(in: 6..<86, using: &random)
                if kills.allSatisfy({ abs($0 - candidate) >= 12 }) { kills.append(candidate) }
            }
            kills.sort()

            let reference = try await run(drive, kills: [])
            let interrupted = try await run(drive, kills: kills)
            print("kill -9 test: kills at rounds \(kills); reference \(reference.events.count) events; "
                  + "interrupted \(interrupted.events.count) distinct events (\(interrupted.received) received)")

            // The reference itself is sound.
            #expect(reference.exitStatus == 0, "reference gateway exit status\n\(reference.log.suffix(4000))")
            #expect(reference.events.count >= 200, "the drive should cross many fences")
            #expect(reference.received == reference.events.count, "the uninterrupted run sent no event twice")
            #expect(reference.events.visitProblems == [])
            #expect(Set(reference.journal) == Set(reference.events.map(\.id)))

            // The interrupted run: same counts per device, no enter re-fired, the journal
            // holds exactly what was delivered.
            #expect(interrupted.exitStatus == 0, "gateway exit status\n\(interrupted.log.suffix(4000))")
            let expected = reference.events.countsByDevice
            let got = interrupted.events.countsByDevice
            for device in drive.devices {
                #expect(got[device] == expected[device], "device \(device): \(difference(expected[device] ?? [:], got[device] ?? [:]))")
            }
            #expect(interrupted.events.visitProblems == [])
            // A duplicate is only ever an outbox re-send of the committed event, never the
            // same event decided again from a state that went backwards.
            #expect(interrupted.decidedTwice == [])
            #expect(Set(interrupted.journal) == Set(interrupted.events.map(\.id)))
            #expect(interrupted.journal.count == Set(interrupted.journal).count)
            // Same crossings, so the same event ids (derived from the deciding fix time) for
            // all but the few moved by a gap.
            let common = Set(reference.events.map(\.id)).intersection(interrupted.events.map(\.id))
            #expect(Double(common.count) >= 0.9 * Double(reference.events.count))
        }

        /// Drives `drive` through a fresh broker and gateway; `kill -9` 5 ms into each round in
        /// `kills` (once the gateway took every earlier update), re-sends the track so far,
        /// publishes 5 more rounds while the gateway is down (held by its persistent session),
        /// and restarts it.
        func run(_ drive: Drive, kills: [Int]) async throws -> RunResult {
            let broker = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { broker.stop() }
            let id = unique("gw-kill")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(DurabilityRig.fencesFolder)" },
                  broker: { port: \(broker.port) },
                  output: { statusInterval: 1 },
                }
                """)
            let subscriber = try await DurabilityRig.subscriber(
                port: broker.port, clientId: unique("dispatch"), filter: "geotriggers/#")
            defer { subscriber.stop() }
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())

            let statusTopic = GatewayStatus.topic(gatewayID: id)
            try gateway.start()
            try await waitUntilTakingUpdates(gateway, subscriber: subscriber, publisher: publisher, statusTopic: statusTopic)

            var round = 0
            var pendingKills = kills[...]
            // Updates published since the running gateway process started (its `received` counts them).
            var sentToThisProcess = 0
            var previousSince: String?
            while round < drive.rounds.count {
                if let kill = pendingKills.first, kill == round {
                    pendingKills.removeFirst()
                    // The kill comes once this process has taken from libmosquitto every update
                    // sent to it (commits may still be in flight). Updates it acknowledged but
                    // had not taken are the documented window (docs/configuration.md "Durability"): the broker
                    // would deliver the newer queued ones before the re-sent track below, which
                    // then could not repair them. A gateway slowed by other suites once lost
                    // whole visits that way.
                    let caughtUp = await poll(timeout: .seconds(30), interval: .milliseconds(100)) {
                        guard let status = subscriber.lastStatus(statusTopic) else { return false }
                        let since = status.since
                        guard status.status == "started", since != previousSince,
                              status.counter("received") >= sentToThisProcess else { return false }
                        previousSince = since
                        return true
                    }
                    #expect(caughtUp, "the gateway did not take the \(sentToThisProcess) updates sent before the kill at round \(round)")
                    // This round's updates are in flight (decoding, monitors, commit, outbox) when it dies.
                    try await drive.publish(round..<(round + 1), through: publisher.client, pause: .milliseconds(5))
                    gateway.kill()
                    let resume = min(round + 6, drive.rounds.count)
                    try await drive.publish(0..<(round + 1), through: publisher.client, pause: .zero)
                    try await drive.publish((round + 1)..<resume, through: publisher.client)
                    sentToThisProcess = resume * drive.devices.count
                    round = resume
                    try gateway.start()
                    continue
                }
                try await drive.publish(round..<(round + 1), through: publisher.client)
                sentToThisProcess += drive.devices.count
                round += 1
            }

            // Complete when every device's last event (its enter at the Entrance Gate) arrived:
            // the outbox publishes in commit order.
            let complete = await poll(timeout: .seconds(150)) {
                let finished = Set(subscriber.receivedEvents.filter { $0.fence == "entrance" && $0.type == "enter" }.map(\.device))
                return finished.isSuperset(of: drive.devices)
            }
            #expect(complete, "not every device reached its last event\n\(gateway.logTail)")
            let exitStatus = gateway.terminate()
            let all = subscriber.receivedEvents
            let journal = try DurabilityRig.journalEventIDs(database: gateway.database, in: gateway.directory.path)
            return RunResult(events: all.deduplicated, received: all.count, decidedTwice: all.decidedTwice, journal: journal,
                             exitStatus: exitStatus, log: gateway.log)
        }

        /// Waits until the gateway's session takes updates: a warm-up device outside every
        /// fence is published until the status counts it as received.
        func waitUntilTakingUpdates(_ gateway: GatewayUnderTest, subscriber: MQTTProbe, publisher: MQTTProbe, statusTopic: String) async throws {
            var fix = (Date().timeIntervalSince1970 - 10_000).rounded()
            let taking = try await poll(timeout: .seconds(60), interval: .milliseconds(500)) {
                fix += 1
                try publisher.client.publish(topic: "devices/warm-up/location", payload: "{\"lat\":34.40,\"lon\":-119.60,\"time\":\(fix)}")
                guard let status = subscriber.lastStatus(statusTopic) else { return false }
                return status.counter("accepted") >= 1
            }
            #expect(taking, "the gateway never took an update\n\(gateway.logTail)")
        }

        func difference(_ expected: [String: Int], _ got: [String: Int]) -> String {
            Set(expected.keys).union(got.keys).sorted().compactMap { key in
                expected[key] == got[key] ? nil : "\(key): expected \(expected[key] ?? 0), got \(got[key] ?? 0)"
            }.joined(separator: "; ")
        }
    }
}
