import Foundation
import MQTT
import Store
import Testing
import TestSupport

@testable import Gateway

/// `OutboxPublisher` in a gateway built as `serve` builds it (``InProcessGateway``), against a
/// real mosquitto and a real database file: its acknowledgements and connects come through
/// ``LocalBrokerLink``, as in `serve`. No feeds, so nothing else commits; the tests commit stream
/// events to the store themselves and hand the rows on as the committer does.
extension ServeTests {
    @Suite struct OutboxPublisherTests {
        /// The gateway of `h` with no feeds and a window (`outbox.inflight`) of `window`, and a
        /// subscriber to `topic`.
        struct Rig {
            let gateway: InProcessGateway
            let subscriber: MQTTProbe
            var server: GatewayServer { gateway.server }
            var publisher: OutboxPublisher { server.publishers[.local]! }

            /// Built, and started (connected) if `start`; else ``InProcessGateway/start()`` starts it.
            init(_ h: ServeHarness, topic: String, window: Int, start: Bool = true) async throws {
                subscriber = try await h.probe("sub", subscribe: [topic])
                let config = try h.write("gw.json5", h.config(extra: "feeds: [], outbox: { inflight: \(window) },"))
                let gateway = try await InProcessGateway(configFile: config, start: start)
                self.gateway = gateway
                if start { #expect(await poll { gateway.server.local.isConnected }) }
            }

            /// Commits the stream events `numbers` and hands their rows to the publisher in
            /// memory, numbered by the receipt, as the committer does.
            @discardableResult
            func commitFresh(_ numbers: Range<Int>, topic: String) async throws -> [OutboxRow] {
                let batch = Rig.streamEvents(numbers, topic: topic)
                let rows = try await server.store.commit(batch).outbox
                publisher.deliverFresh(rows: rows)
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

        /// QoS 0 events cannot be handed to libmosquitto without a connection: the pump stops at
        /// the first and hands nothing on. After the connect every one goes out, in order and
        /// once, in batches of the window, and the broker's "written" acknowledgements empty the
        /// outbox. The broker is down when the gateway starts (it keeps the subscriber's session
        /// and queues its QoS 0 messages meanwhile).
        @Test(.timeLimit(.minutes(5))) func qos0EventsWaitForTheConnectionThenGoOutInOrder() async throws {
            let h = try ServeHarness("outbox-qos0", broker: .init(persistence: true, extraLines: ["queue_qos0_messages true"]))
            defer { h.close() }
            let topic = "\(h.prefix)/t/outbox"
            let rig = try await Rig(h, topic: topic, window: 8, start: false)
            let (subscriber, server, publisher) = (rig.subscriber, rig.server, rig.publisher)
            var batch = StoreBatch()
            for i in 0..<30 {
                batch.outbox.append(OutboxMessage(destination: .local, eventID: "e\(i)", topic: topic,
                                                  payload: Array("\(i)".utf8), qos: 0))
            }
            _ = try await server.store.commit(batch)

            h.broker.stop()
            rig.gateway.start()
            // The gateway tried the broker and runs without it; nothing went out.
            #expect(await poll { server.warnings.texts.contains { $0.contains("cannot connect to the local broker") } })
            #expect(!server.local.isConnected)
            #expect(subscriber.messages.count == 0)

            try h.broker.start()
            #expect(await poll { server.local.isConnected })
            #expect(await subscriber.waitMessages(30))
            // A last event behind them: anything sent twice would have come before it.
            var marker = StoreBatch()
            marker.outbox.append(OutboxMessage(destination: .local, eventID: "end", topic: topic, payload: Array("end".utf8), qos: 0))
            _ = try await server.store.commit(marker)
            publisher.deliverWaiting()
            #expect(await subscriber.waitMessages(31))
            #expect(subscriber.messages.all.map(\.payloadText) == (0..<30).map(String.init) + ["end"])
            #expect(await poll { (try? await server.store.outbox(.local, limit: 100).isEmpty) == true })

            try await rig.gateway.stop()
        }

        /// Events committed while the publisher runs are handed over as the committer hands them
        /// on (``OutboxPublisher/deliverFresh(rows:)``, a job on the network thread), each
        /// batch after the previous one was delivered. With a window of 4 and batches of 5, each
        /// batch overflows it: its last event is read back from the database once
        /// acknowledgements make room. Every event arrives once, in commit order, and the stream
        /// is settled to its end.
        @Test(.timeLimit(.minutes(5))) func freshEventsGoOutOnceInOrderPastAFullWindow() async throws {
            let h = try ServeHarness("outbox-fresh")
            defer { h.close() }
            let topic = "\(h.prefix)/t/fresh"
            let rig = try await Rig(h, topic: topic, window: 4)
            let (subscriber, server, publisher) = (rig.subscriber, rig.server, rig.publisher)

            let batches = 12, perBatch = 5
            var lastRows: [OutboxRow] = []
            for b in 0..<batches {
                lastRows = try await rig.commitFresh(b * perBatch..<(b + 1) * perBatch, topic: topic)
                #expect(lastRows.allSatisfy { $0.source == .journal })
                // Delivered, so the stream is read to its end again when the next batch comes.
                #expect(await subscriber.waitMessages((b + 1) * perBatch))
                #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
            }
            let total = batches * perBatch
            #expect(await subscriber.waitMessages(total))
            // Rows handed over already (here: read back from the database first) are not sent
            // again: one more event behind them arrives next, and nothing before it.
            publisher.deliverFresh(rows: lastRows)
            _ = try await rig.commitFresh(total..<total + 1, topic: topic)
            #expect(await subscriber.waitMessages(total + 1))
            #expect(subscriber.messages.all.map(\.payloadText) == (0...total).map(String.init))
            #expect(await poll { (try? await server.store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
            #expect(publisher.inflightCount.load(ordering: .relaxed) == 0)

            try await rig.gateway.stop()
        }

        /// Fresh stream events within the window, nothing else waiting: their acknowledgements
        /// are taken as they arrive, on the network thread, without waking `run()`, and the timer
        /// still has the stream settled.
        @Test(.timeLimit(.minutes(5))) func freshStreamAcknowledgementsAreTakenAsTheyArrive() async throws {
            let h = try ServeHarness("outbox-arrive")
            defer { h.close() }
            let topic = "\(h.prefix)/t/arrive"
            let rig = try await Rig(h, topic: topic, window: 8)
            let (subscriber, server, publisher) = (rig.subscriber, rig.server, rig.publisher)

            let batches = 6, perBatch = 4
            var baseline = 0
            for b in 0..<batches {
                try await rig.commitFresh(b * perBatch..<(b + 1) * perBatch, topic: topic)
                #expect(await subscriber.waitMessages((b + 1) * perBatch))
                #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
                if b == 0 {
                    // `run()` may still have been reading the stream when the first batch came
                    // (it then takes their acknowledgements); once the stream is settled it is idle.
                    #expect(await poll { (try? await server.store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
                    baseline = publisher.acknowledgementsTakenOnArrival.load(ordering: .relaxed)
                }
            }
            let total = batches * perBatch
            #expect(publisher.acknowledgementsTakenOnArrival.load(ordering: .relaxed) - baseline == total - perBatch)
            #expect(await poll { (try? await server.store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
            #expect(subscriber.messages.all.map(\.payloadText) == (0..<total).map(String.init))

            try await rig.gateway.stop()
        }

        /// With a window of 4, 80 events take 20 round trips to the broker, and each brings
        /// acknowledgements: they are committed (one transaction each) at most every
        /// `progressInterval`, not once per round trip, and the last ones by the timer, so the
        /// stream ends settled without another acknowledgement coming.
        @Test(.timeLimit(.minutes(5))) func acknowledgementsAreCommittedAtMostEveryInterval() async throws {
            let h = try ServeHarness("outbox-acks")
            defer { h.close() }
            let topic = "\(h.prefix)/t/acks"
            let rig = try await Rig(h, topic: topic, window: 4)
            let (subscriber, server, publisher) = (rig.subscriber, rig.server, rig.publisher)

            let total = 80
            _ = try await server.store.commit(Rig.streamEvents(0..<total, topic: topic))
            let before = await server.store.statistics.transactions
            let start = ContinuousClock.now
            publisher.deliverWaiting()
            #expect(await subscriber.waitMessages(total))
            #expect(await poll { publisher.inflightCount.load(ordering: .relaxed) == 0 })
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            #expect(await poll { (try? await server.store.outboxStream(.local, after: 0, limit: 10).isEmpty) == true })
            let commits = await server.store.statistics.transactions - before
            // One at the first acknowledgement, one per interval after it, one by the timer.
            #expect(commits <= 2 + Int(elapsed / OutboxPublisher.progressInterval), "\(commits) commits in \(elapsed) s")
            #expect(subscriber.messages.all.map(\.payloadText) == (0..<total).map(String.init))

            try await rig.gateway.stop()
        }
    }
}
