import Foundation
import MQTT
import Store
import Testing
import TestSupport

@testable import Gateway

/// `EventCommitter` in a gateway built as `serve` builds it, in process, against a real
/// mosquitto and a real database file: the feed updates are taken on the network thread
/// (``LocalBrokerLink``), which commits its bursts itself when it may.
extension ServeTests {
    @Suite struct Committer {
        /// 0.5 s apart per device; every device enters the meadow of garden-sections with its
        /// first update, so each update commits one device state.
        static func publish(_ devices: Range<Int>, from publisher: MQTTProbe, input: String) throws {
            let time = fixTimeBase()
            for i in devices {
                try publisher.client.publish(
                    topic: "\(input)/d\(i)/location", payload: Payload.json(lat: 34.4573, lon: -119.7102, time: time, accuracy: 5),
                    qos: .atLeastOnce)
            }
        }

        static func start(_ h: ServeHarness, durability: StoreDurability) async throws -> (InProcessGateway, MQTTProbe, String) {
            let input = "\(h.prefix)-in"
            let config = try h.write("gw.json5", h.config(
                gateway: "durability: \"\(durability == .full ? "full" : "normal")\",",
                extra: "feeds: [{ name: \"fleet\", topic: \"\(input)/+/location\", format: \"json\" }],"))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try await InProcessGateway(configFile: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok)
            return (gateway, try await h.probe("publisher"), input)
        }

        /// With `durability: normal` the network thread commits what a burst handed over itself,
        /// right after the burst. With `full` (a sync per commit) every commit is a job on the
        /// store's queue. Both commit every state. The gateway's other parts use the store too
        /// (outbox reads and acknowledgements, the status's outbox sizes), so a burst may find it
        /// busy and queue its commit: four bursts, one at a time, leave room for both.
        @Test(.timeLimit(.minutes(5)), arguments: [StoreDurability.normal, .full])
        func theNetworkThreadCommitsItsBurstsOnlyWithNormalDurability(durability: StoreDurability) async throws {
            let h = try ServeHarness("committer")
            defer { h.close() }
            let (gateway, publisher, input) = try await Self.start(h, durability: durability)
            let server = gateway.server
            // Under a loaded machine a burst may find the store busy every time: with `normal`,
            // bursts go on (up to 12) until the network thread has committed one.
            var bursts = 0
            while bursts < 4 || (durability == .normal && bursts < 12 && server.committer.networkThreadCommits.load(ordering: .relaxed) == 0) {
                try Self.publish(bursts * 10..<bursts * 10 + 10, from: publisher, input: input)
                let accepted = bursts * 10 + 10
                #expect(await poll { server.counters.accepted.load(ordering: .relaxed) >= accepted })
                await server.committer.flush()
                bursts += 1
            }
            // A shard counts an update as accepted just before it hands the step to the committer,
            // so the last flush can come before the last hand-over: wait for the states.
            var states = 0
            #expect(await poll { states = (try? await server.store.deviceStates().count) ?? 0; return states == bursts * 10 },
                    "states committed: \(states)")
            let (onThread, queued) = (server.committer.networkThreadCommits.load(ordering: .relaxed),
                                      server.committer.queuedCommits.load(ordering: .relaxed))
            if durability == .normal {
                #expect(onThread >= 1, "network thread \(onThread), queued \(queued)")
            } else {
                #expect(onThread == 0 && queued >= 4, "network thread \(onThread), queued \(queued)")
            }
            try await gateway.stop()
        }

        /// While the store's queue is busy (here: held by a job), the network thread does not wait
        /// for it: it queues the commit there and goes on reading. The states are committed once
        /// the queue is free.
        @Test(.timeLimit(.minutes(5))) func aBusyStoreLeavesTheCommitToItsQueueAndReadingGoesOn() async throws {
            let h = try ServeHarness("committer-busy")
            defer { h.close() }
            let (gateway, publisher, input) = try await Self.start(h, durability: .normal)
            let server = gateway.server
            let taken = { server.counters.feedMessages.load(ordering: .relaxed) }
            let hold = DispatchSemaphore(value: 0)
            server.store.perform { _ in hold.wait() }
            try Self.publish(0..<10, from: publisher, input: input)
            #expect(await poll { taken() >= 10 })
            let onThreadBefore = server.committer.networkThreadCommits.load(ordering: .relaxed)
            // A message published after the first burst was handed over: taken in a later turn,
            // which a network thread waiting for the store would never reach.
            try Self.publish(10..<11, from: publisher, input: input)
            let readOn = await poll { taken() >= 11 }
            hold.signal()
            #expect(readOn, "the network thread stopped reading while the store was busy")
            await server.committer.flush()
            #expect(server.committer.networkThreadCommits.load(ordering: .relaxed) == onThreadBefore)
            #expect(server.committer.queuedCommits.load(ordering: .relaxed) >= 1)
            // Counted as taken before its step reaches the committer: wait for the states.
            var states = 0
            #expect(await poll { states = (try? await server.store.deviceStates().count) ?? 0; return states == 11 }, "states committed: \(states)")
            try await gateway.stop()
        }
    }
}
