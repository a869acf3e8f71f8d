import MQTT
import Store
import Synchronization

/// Delivers one destination's committed events (`local`: the main broker, `remote`: the
/// upstream) in outbox order.
///
/// At most `window` events are handed to libmosquitto at a time; libmosquitto resends those
/// itself after a reconnect, so they are never handed over twice in one run. A row leaves the
/// outbox only when the broker acknowledged it with success; a failure (v5 reason >= 0x80, such
/// as an ACL denial) keeps it (it is tried again after a restart), counts it and raises a warning.
/// Events that could not be committed (database fault) are published from memory instead, up to a cap.
final class OutboxPublisher: Service, Sendable {
    enum Signal: Sendable {
        /// Rows were committed that are only in the database (read them back).
        case committed
        /// Rows were committed and handed over in memory (``notifyCommitted(rows:)``).
        case fresh
        case acknowledged(MQTTAcknowledgement)
        case connected
    }

    /// An event published from memory because the database refused it.
    struct VolatileMessage: Sendable {
        var topic: String
        var payload: [UInt8]
        var qos: Int
    }

    let name: String
    let destination: OutboxDestination
    let client: MQTTClient
    let store: GatewayStore
    let window: Int
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    /// Cap of events kept in memory while the database fails.
    let volatileCap: Int

    private let signals: BoundedQueue<Signal>
    private let committedPending = Atomic<Bool>(false)
    private let freshPending = Atomic<Bool>(false)
    /// Rows just committed, in sequence order: published without reading them back while
    /// everything before them has been handed over (the usual case), else read from the database.
    private let freshRows = Mutex<[OutboxRow]>([])
    private let volatileQueue = Mutex<[VolatileMessage]>([])
    /// Rows kept after a failed acknowledgement (counted in the status warnings).
    let failedCount = Atomic<Int>(0)
    /// Events kept in memory (database fault) that were dropped past the cap, since start.
    let volatileDropped = Atomic<Int>(0)
    /// Events handed to libmosquitto and not yet acknowledged.
    let inflightCount = Atomic<Int>(0)

    init(
        destination: OutboxDestination, client: MQTTClient, store: GatewayStore, window: Int,
        counters: GatewayCounters, warnings: Warnings, logger: Logger, volatileCap: Int = 100_000
    ) {
        self.name = "outbox-\(destination.rawValue)"
        self.destination = destination
        self.client = client
        self.store = store
        self.window = window
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        self.volatileCap = volatileCap
        self.signals = BoundedQueue(capacity: window + 1024)
    }

    /// Rows were committed to this destination's outbox, with their sequences: they can go out
    /// without a database read (which would wait behind the next group commit).
    func notifyCommitted(rows: [OutboxRow]) {
        guard !rows.isEmpty else { return notifyCommitted() }
        freshRows.withLock { $0.append(contentsOf: rows) }
        if !freshPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.fresh)
        }
    }

    /// New rows were committed to this destination's outbox (read them from the database).
    func notifyCommitted() {
        if !committedPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.committed)
        }
    }

    /// Called on libmosquitto's network thread for every acknowledgement of `client`.
    func acknowledged(_ ack: MQTTAcknowledgement) {
        if !signals.trySend(.acknowledged(ack)) {
            logger.error("acknowledgement queue full: the event stays in the outbox and is sent again after a restart",
                         ["outbox": destination.rawValue])
        }
    }

    /// The broker connection came up: deliver whatever waits.
    func connected() { _ = signals.trySend(.connected) }

    /// Publishes events that could not be committed, from memory (oldest dropped past the cap).
    func publishVolatile(_ messages: [VolatileMessage]) {
        let dropped: Int = volatileQueue.withLock { queue in
            queue.append(contentsOf: messages)
            let excess = max(0, queue.count - volatileCap)
            if excess > 0 { queue.removeFirst(excess) }
            return excess
        }
        if dropped > 0 {
            let total = volatileDropped.add(dropped, ordering: .relaxed).newValue
            warnings.set("outbox-\(destination.rawValue)-volatile",
                         "the database fails and \(total) \(destination.rawValue) events kept in memory were dropped, oldest first (cap \(volatileCap))")
        }
        notifyCommitted()
    }

    func shutdown() async {
        // Give the in-flight events a moment to be acknowledged, then stop.
        let deadline = ResourceUsage.now() + 5
        while inflightCount.load(ordering: .relaxed) > 0, client.isConnected, ResourceUsage.now() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        signals.finish()
    }

    func run() async throws {
        var inflight: [Int32: Int64] = [:]  // message id -> outbox sequence (negative: volatile)
        var handedUpTo: Int64 = 0
        var exhausted = false  // the last read found nothing beyond handedUpTo
        var blocked = false  // a publish failed (QoS 0 without a connection): wait for a connect
        var acks: [Int64] = []
        var batch: [Signal] = []
        await pump(&inflight, &handedUpTo, &exhausted, &blocked)
        while let first = await signals.next() {
            batch.removeAll(keepingCapacity: true)
            batch.append(first)
            signals.drain(upTo: 4096, into: &batch)
            for signal in batch {
                switch signal {
                case .committed:
                    committedPending.store(false, ordering: .releasing)
                    exhausted = false
                case .fresh:
                    freshPending.store(false, ordering: .releasing)
                case .connected:
                    exhausted = false
                    blocked = false
                case .acknowledged(let ack):
                    guard let sequence = inflight.removeValue(forKey: ack.messageId) else { continue }
                    if ack.isSuccess {
                        if sequence > 0 { acks.append(sequence) }
                        counters.acked.add(1, ordering: .relaxed)
                    } else {
                        let refused = failedCount.add(1, ordering: .relaxed).newValue
                        let reason = "reason 0x\(String(ack.reasonCode, radix: 16)): \(ack.reason)"
                        warnings.set("outbox-\(destination.rawValue)-refused",
                                     "the \(destination.rawValue) broker refused \(refused) event\(refused == 1 ? "" : "s") (last \(reason)); they stay in the outbox and are sent again after a restart")
                        logger.warning("the \(destination.rawValue) broker refused an event (\(reason)); it stays in the outbox",
                                       ["outbox.sequence": "\(sequence)"])
                    }
                }
            }
            if !acks.isEmpty {
                do {
                    _ = try await store.acknowledge(destination, sequences: acks)
                    acks.removeAll(keepingCapacity: true)
                } catch {
                    // Kept in the outbox: sent again after a restart (same event id).
                    logger.warning("could not remove acknowledged events from the outbox: \(error)")
                    acks.removeAll(keepingCapacity: true)
                }
            }
            inflightCount.store(inflight.count, ordering: .relaxed)
            await pump(&inflight, &handedUpTo, &exhausted, &blocked)
        }
    }

    /// Hands events to libmosquitto until the window is full or nothing waits.
    private func pump(
        _ inflight: inout [Int32: Int64], _ handedUpTo: inout Int64, _ exhausted: inout Bool, _ blocked: inout Bool
    ) async {
        var volatileSequence: Int64 = -1
        while inflight.count < window {
            let next: VolatileMessage? = volatileQueue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let message = next else { break }
            do {
                let id = try client.publish(topic: message.topic, payload: message.payload, qos: MQTTQoS(message.qos))
                inflight[id] = volatileSequence
                volatileSequence -= 1
            } catch {
                volatileQueue.withLock { $0.insert(message, at: 0) }
                break
            }
        }
        // Rows just committed: while the database holds nothing older that is not handed over
        // (exhausted), they are the next ones and go out from memory; otherwise they are
        // dropped here and read from the database in order.
        let fresh = freshRows.withLock { rows in
            defer { rows.removeAll(keepingCapacity: true) }
            return rows
        }
        if exhausted, !blocked {
            var rest = fresh.drop { $0.sequence <= handedUpTo }
            while inflight.count < window, let row = rest.first {
                guard let id = try? client.publish(topic: row.message.topic, payload: row.message.payload, qos: MQTTQoS(row.message.qos))
                else {
                    blocked = true
                    break
                }
                inflight[id] = row.sequence
                handedUpTo = row.sequence
                rest = rest.dropFirst()
            }
            if !rest.isEmpty { exhausted = false }
        }
        while !exhausted, !blocked, inflight.count < window {
            let rows: [OutboxRow]
            do {
                rows = try await store.outbox(destination, after: handedUpTo, limit: window - inflight.count)
            } catch {
                logger.warning("could not read the \(destination.rawValue) outbox: \(error)")
                return
            }
            if rows.isEmpty {
                exhausted = true
                break
            }
            for row in rows {
                do {
                    let id = try client.publish(topic: row.message.topic, payload: row.message.payload, qos: MQTTQoS(row.message.qos))
                    inflight[id] = row.sequence
                    handedUpTo = row.sequence
                } catch {
                    // QoS 0 without a connection: wait for the next connect.
                    blocked = true
                    break
                }
            }
        }
        inflightCount.store(inflight.count, ordering: .relaxed)
    }
}

extension MQTTQoS {
    /// QoS 0 or 1 from the config's number.
    init(_ level: Int) { self = level == 0 ? .atMostOnce : .atLeastOnce }
}
