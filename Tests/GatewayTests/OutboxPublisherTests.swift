import Foundation
import MQTT
import Store
import Synchronization
import Testing
import TestSupport

@testable import Gateway

/// `OutboxPublisher` on its own, against a real mosquitto and a real database file.
@Suite struct OutboxPublisherTests {
    /// A broker, a subscriber to `topic`, and a publisher for the local outbox of `store` on a
    /// client that is not started (the acknowledgements go to the publisher, as `serve` routes
    /// them).
    struct Rig {
        let broker: MosquittoProcess
        let subscriber: MQTTProbe
        let client: MQTTClient
        let publisher: OutboxPublisher
        let store: GatewayStore

        init(store: GatewayStore, topic: String, window: Int) async throws {
            self.store = store
            broker = try MosquittoProcess()
            subscriber = try MQTTProbe(port: broker.port, clientId: DurabilityRig.unique("sub"))
            subscriber.collect()
            try subscriber.client.subscribe(topic, qos: .atLeastOnce)
            try subscriber.client.start()
            #expect(await subscriber.waitSubscribed(topic))
            let logger = Logger(label: "test")
            let route = Mutex<OutboxPublisher?>(nil)
            client = try MQTTClient(MQTTConfiguration(port: broker.port, clientId: DurabilityRig.unique("gw")),
                                    onAcknowledgement: { ack in route.withLock { $0 }?.acknowledged(ack) })
            publisher = OutboxPublisher(
                destination: .local, client: client, store: store, window: window, counters: GatewayCounters(),
                warnings: Warnings(logger: logger), logger: logger)
            route.withLock { $0 = publisher }
        }

        /// Connects the client and starts the publisher's `run()`.
        func connectAndRun() async throws -> Task<Void, any Error> {
            try client.start()
            #expect(await poll { client.isConnected })
            return Task { [publisher] in try await publisher.run() }
        }

        /// Shuts the publisher down, waits for its `run()` and stops the client.
        func finish(_ run: Task<Void, any Error>) async {
            await publisher.shutdown()
            _ = try? await run.value
            client.stop()
        }

        /// Commits the stream events `numbers` and hands their rows to the publisher in memory,
        /// numbered by the receipt, as the committer does.
        @discardableResult
        func commitFresh(_ numbers: Range<Int>, topic: String) async throws -> [OutboxRow] {
            let batch = Rig.streamEvents(numbers, topic: topic)
            let receipt = try await store.submit(batch)
            let rows = batch.outbox.indices.map {
                OutboxRow(sequence: receipt.outboxSequences[$0], source: receipt.outboxSources[$0], message: batch.outbox[$0])
            }
            publisher.notifyCommitted(rows: rows)
            return rows
        }

        /// Journaled events `e<n>` for the local stream, payload `n`, as the committer writes them.
        static func streamEvents(_ numbers: Range<Int>, topic: String) -> StoreBatch {
            var batch = StoreBatch()
            for n in numbers {
                batch.events.append(JournalEvent(
                    id: "e\(n)", device: "d", trigger: "t", layer: "l", fence: "f", type: "enter",
                    fixTime: Double(n), emittedTime: Double(n), payload: "\(n)"))
                batch.outbox.append(OutboxMessage(
                    destination: .local, eventID: "e\(n)", topic: topic, payload: Array("\(n)".utf8), qos: 1, payloadInJournal: true))
            }
            return batch
        }
    }

    /// QoS 0 events cannot be handed to libmosquitto without a connection: the pump stops at the
    /// first and hands nothing on. After the connect every one goes out, in order and once, in
    /// batches of the window, and the broker's "written" acknowledgements empty the outbox.
    @Test(.timeLimit(.minutes(2))) func qos0EventsWaitForTheConnectionThenGoOutInOrder() async throws {
        let directory = try TemporaryDirectory(prefix: "outbox")
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        var batch = StoreBatch()
        for i in 0..<30 {
            batch.outbox.append(OutboxMessage(destination: .local, eventID: "e\(i)", topic: "t/outbox",
                                              payload: Array("\(i)".utf8), qos: 0))
        }
        _ = try await store.submit(batch)

        let rig = try await Rig(store: store, topic: "t/outbox", window: 8)
        let (subscriber, client, publisher) = (rig.subscriber, rig.client, rig.publisher)
        // The broker stops when the rig goes: not before the end.
        defer { subscriber.stop(); withExtendedLifetime(rig) {} }
        let run = Task { try await publisher.run() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(subscriber.messages.count == 0)
        #expect(publisher.inflightCount.load(ordering: .relaxed) == 0)

        try client.start()
        #expect(await poll { client.isConnected })
        publisher.connected()
        #expect(await subscriber.waitMessages(30))
        try await Task.sleep(for: .milliseconds(200))
        #expect(subscriber.messages.all.map(\.payloadText) == (0..<30).map(String.init))
        #expect(await poll { (try? await store.outbox(.local, limit: 100).isEmpty) == true })

        await rig.finish(run)
    }

    /// Events committed while the publisher runs are handed over as the committer hands them on
    /// (``OutboxPublisher/notifyCommitted(rows:)``, a job on the network thread), each batch
    /// after the previous one was delivered. With a window of 4 and batches of 5, each batch
    /// overflows it: its last event is read back from the database once acknowledgements make
    /// room. Every event arrives once, in commit order, and the stream is settled to its end.
    @Test(.timeLimit(.minutes(2))) func freshEventsGoOutOnceInOrderPastAFullWindow() async throws {
        let directory = try TemporaryDirectory(prefix: "outbox")
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let rig = try await Rig(store: store, topic: "t/fresh", window: 4)
        let (subscriber, publisher) = (rig.subscriber, rig.publisher)
        // The broker stops when the rig goes: not before the end.
        defer { subscriber.stop(); withExtendedLifetime(rig) {} }
        let run = try await rig.connectAndRun()

        let batches = 12, perBatch = 5
        var lastRows: [OutboxRow] = []
        for b in 0..<batches {
            lastRows = try await rig.commitFresh(b * perBatch..<(b + 1) * perBatch, topic: "t/fresh")
            #expect(lastRows.allSatisfy { $0.source == .journal })
            // Delivered, so the stream is read to its end again when the next batch comes.
            #expect(await subscriber.waitMessages((b + 1) * perBatch))
            #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
        }
        let total = batches * perBatch
        #expect(await subscriber.waitMessages(total))
        try await Task.sleep(for: .milliseconds(300))
        #expect(subscriber.messages.all.map(\.payloadText) == (0..<total).map(String.init))
        // Rows handed over already (here: read back from the database first) are not sent again.
        publisher.notifyCommitted(rows: lastRows)
        try await Task.sleep(for: .milliseconds(300))
        #expect(subscriber.messages.count == total)
        #expect(await poll { (try? await store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
        #expect(publisher.inflightCount.load(ordering: .relaxed) == 0)

        await rig.finish(run)
    }

    /// Fresh stream events within the window, nothing else waiting: their acknowledgements are
    /// taken as they arrive, on the network thread, without waking `run()`, and the timer still
    /// has the stream settled.
    @Test(.timeLimit(.minutes(2))) func freshStreamAcknowledgementsAreTakenAsTheyArrive() async throws {
        let directory = try TemporaryDirectory(prefix: "outbox")
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let rig = try await Rig(store: store, topic: "t/arrive", window: 8)
        let (subscriber, publisher) = (rig.subscriber, rig.publisher)
        defer { subscriber.stop(); withExtendedLifetime(rig) {} }
        let run = try await rig.connectAndRun()

        let batches = 6, perBatch = 4
        var baseline = 0
        for b in 0..<batches {
            try await rig.commitFresh(b * perBatch..<(b + 1) * perBatch, topic: "t/arrive")
            #expect(await subscriber.waitMessages((b + 1) * perBatch))
            #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
            if b == 0 {
                // `run()` may still have been reading the stream when the first batch came (it
                // then takes their acknowledgements); once the stream is settled it is idle.
                #expect(await poll { (try? await store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
                baseline = publisher.acknowledgementsTakenOnArrival.load(ordering: .relaxed)
            }
        }
        let total = batches * perBatch
        #expect(publisher.acknowledgementsTakenOnArrival.load(ordering: .relaxed) - baseline == total - perBatch)
        #expect(await poll { (try? await store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
        #expect(subscriber.messages.all.map(\.payloadText) == (0..<total).map(String.init))

        await rig.finish(run)
    }

    /// With a window of 4, 80 events take 20 round trips to the broker, and each brings
    /// acknowledgements: they are committed (one transaction each) at most every
    /// `progressInterval`, not once per round trip, and the last ones by the timer, so the
    /// stream ends settled without another acknowledgement coming.
    @Test(.timeLimit(.minutes(2))) func acknowledgementsAreCommittedAtMostEveryInterval() async throws {
        let directory = try TemporaryDirectory(prefix: "outbox")
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let rig = try await Rig(store: store, topic: "t/acks", window: 4)
        let (subscriber, publisher) = (rig.subscriber, rig.publisher)
        defer { subscriber.stop(); withExtendedLifetime(rig) {} }
        let run = try await rig.connectAndRun()

        let total = 80
        _ = try await store.submit(Rig.streamEvents(0..<total, topic: "t/acks"))
        let before = await store.statistics.transactions
        let start = ContinuousClock.now
        publisher.notifyCommitted()
        #expect(await subscriber.waitMessages(total))
        #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        #expect(await poll { (try? await store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
        let commits = await store.statistics.transactions - before
        // One at the first acknowledgement, one per interval after it, one by the timer.
        #expect(commits <= 2 + Int(elapsed / OutboxPublisher.progressInterval), "\(commits) commits in \(elapsed) s")
        #expect(subscriber.messages.all.map(\.payloadText) == (0..<total).map(String.init))

        await rig.finish(run)
    }
}

