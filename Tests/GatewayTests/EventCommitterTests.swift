import Foundation
import MQTT
import Store
import Synchronization
import Testing
import TestSupport

@testable import Gateway

/// `EventCommitter` with a network thread that hands items over, as `Ingest` does: a real
/// mosquitto, a real client whose inline handler enqueues one device state per message, and a
/// real database file.
@Suite struct EventCommitterTests {
    final class Rig: Sendable {
        let broker: MosquittoProcess
        let publisher: MQTTProbe
        let gateway: MQTTProbe
        let store: GatewayStore
        let committer: EventCommitter
        let topic: String
        /// Messages the inline handler took (and handed to the committer).
        let taken = Atomic<Int>(0)

        init(durability: StoreDurability, directory: TemporaryDirectory) async throws {
            broker = try MosquittoProcess()
            topic = DurabilityRig.unique("committer") + "/in"
            store = try await GatewayStore(path: directory.file("gateway.db"), options: .init(durability: durability))
            gateway = try MQTTProbe(port: broker.port, clientId: DurabilityRig.unique("gw"))
            publisher = try MQTTProbe(port: broker.port, clientId: DurabilityRig.unique("pub"))
            let logger = Logger(label: "test")
            let committer = EventCommitter(
                store: store, counters: GatewayCounters(), warnings: Warnings(logger: logger), logger: logger, publishers: [:],
                statePublisher: StatePublisher(client: gateway.client, prefix: "t", logger: logger), networkClient: gateway.client)
            self.committer = committer
            gateway.client.setInlineHandler { [self] message in
                _ = committer.enqueue(EventCommitter.Item(state: DeviceStateChange(device: message.payloadText, state: [1])))
                taken.add(1, ordering: .relaxed)
                return true
            }
            try gateway.client.subscribe(topic, qos: .atMostOnce)
            try gateway.client.start()
            try publisher.client.start()
            #expect(await gateway.waitSubscribed(topic))
            #expect(await publisher.waitConnected())
        }

        func publish(_ devices: Range<Int>) throws {
            for i in devices { try publisher.client.publish(topic: topic, payload: Array("d\(i)".utf8), qos: .atMostOnce) }
        }

        func waitTaken(_ count: Int) async -> Bool { await poll { taken.load(ordering: .relaxed) >= count } }

        /// Stops both clients and drops the handler that holds the rig (the broker stops when
        /// the rig goes).
        func stop() {
            gateway.client.setInlineHandler(nil)
            gateway.stop()
            publisher.stop()
        }
    }

    /// With `durability: normal` the network thread commits what a burst handed over itself,
    /// right after the burst, and no commit job is queued. With `full` (a sync per commit)
    /// every commit is a job on the store's queue. Both commit every state.
    @Test(.timeLimit(.minutes(1)), arguments: [StoreDurability.normal, .full])
    func theNetworkThreadCommitsItsBurstsOnlyWithNormalDurability(durability: StoreDurability) async throws {
        let directory = try TemporaryDirectory(prefix: "committer")
        let rig = try await Rig(durability: durability, directory: directory)
        defer { rig.stop() }
        try rig.publish(0..<40)
        #expect(await rig.waitTaken(40))
        await rig.committer.flush()
        let (onThread, queued) = (rig.committer.networkThreadCommits.load(ordering: .relaxed),
                                  rig.committer.queuedCommits.load(ordering: .relaxed))
        if durability == .normal {
            #expect(onThread >= 1 && queued == 0, "network thread \(onThread), queued \(queued)")
        } else {
            #expect(onThread == 0 && queued >= 1, "network thread \(onThread), queued \(queued)")
        }
        #expect(try await rig.store.deviceStates().count == 40)
    }

    /// While the store's queue is busy (here: held by a job), the network thread does not wait
    /// for it: it queues the commit there and goes on reading. The states are committed once
    /// the queue is free.
    @Test(.timeLimit(.minutes(1))) func aBusyStoreLeavesTheCommitToItsQueueAndReadingGoesOn() async throws {
        let directory = try TemporaryDirectory(prefix: "committer")
        let rig = try await Rig(durability: .normal, directory: directory)
        defer { rig.stop() }
        let hold = DispatchSemaphore(value: 0)
        rig.store.perform { _ in hold.wait() }
        try rig.publish(0..<10)
        #expect(await rig.waitTaken(10))
        // A message published after the first burst was handed over: taken in a later turn,
        // which a network thread waiting for the store would never reach.
        try await Task.sleep(for: .milliseconds(100))
        try rig.publish(10..<11)
        let readOn = await rig.waitTaken(11)
        hold.signal()
        #expect(readOn, "the network thread stopped reading while the store was busy")
        await rig.committer.flush()
        #expect(rig.committer.networkThreadCommits.load(ordering: .relaxed) == 0)
        #expect(rig.committer.queuedCommits.load(ordering: .relaxed) >= 1)
        #expect(try await rig.store.deviceStates().count == 11)
    }
}
