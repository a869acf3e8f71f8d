import MQTT
import Store
import Synchronization

/// Delivers one destination's committed events (`local`: the main broker, `remote`: the
/// upstream) in order: its outbox table's rows (OwnTracks transitions, refused events, rows from
/// before schema 5), then its stream on the journal (the events themselves), each in order.
///
/// At most `window` events are handed to libmosquitto at a time; libmosquitto resends those
/// itself after a reconnect, so they are never handed over twice in one run. A message stops
/// waiting only when the broker acknowledged it with success: its table row is deleted, and
/// the stream is settled up to the oldest stream event still in flight. A failure (v5 reason
/// >= 0x80, such as an ACL denial) keeps it (a stream event moves to the table, so the stream
/// goes on), counts it and raises a warning; it is tried again after a restart. Events that
/// could not be committed (database fault) are published from memory instead, up to a cap.
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

    /// What a message handed to libmosquitto was.
    private enum Handed {
        /// Published from memory (the database refused it): nothing to remove.
        case volatile
        /// An outbox table row.
        case table(Int64)
        /// An event of the stream on the journal, by its journal sequence.
        case journal(Int64)

        /// For the log.
        var place: String {
            switch self {
            case .volatile: "memory"
            case .table(let sequence): "outbox row \(sequence)"
            case .journal(let sequence): "journal row \(sequence)"
            }
        }
    }

    /// How far one source (the outbox table, the stream) was handed over.
    private struct SourceProgress {
        /// The last sequence handed over.
        var handed: Int64 = 0
        /// The last read found nothing beyond it.
        var exhausted = false
    }

    /// The pump's bookkeeping, owned by ``run()``.
    private struct Progress {
        var inflight: [Int32: Handed] = [:]  // message id -> what it was
        /// Journal sequences of the stream's messages in flight.
        var inflightStream = Set<Int64>()
        var table = SourceProgress()
        var stream = SourceProgress()

        subscript(source: OutboxSource) -> SourceProgress {
            get { source == .table ? table : stream }
            set {
                if source == .table { table = newValue } else { stream = newValue }
            }
        }
        /// A publish failed (QoS 0 without a connection): wait for a connect.
        var blocked = false
        /// Table rows not to send again in this run (events the broker refused, moved there).
        var skip = Set<Int64>()
        /// The stream position last committed as settled.
        var settled: Int64 = 0
        /// A refused stream event that could not be moved to the table: never settled past.
        var settleBefore: Int64?
        /// Acknowledgements, settling and refused events to commit (kept until committed).
        var work = StoreBatch()
    }

    func run() async throws {
        var progress = Progress()
        progress.settled = await store.settledStream(destination)
        var batch: [Signal] = []
        await pump(&progress)
        while let first = await signals.next() {
            batch.removeAll(keepingCapacity: true)
            batch.append(first)
            signals.drain(upTo: 4096, into: &batch)
            var refused: [Int64] = []  // stream events the broker refused
            for signal in batch {
                switch signal {
                case .committed:
                    committedPending.store(false, ordering: .releasing)
                    progress.table.exhausted = false
                    progress.stream.exhausted = false
                case .fresh:
                    freshPending.store(false, ordering: .releasing)
                case .connected:
                    progress.table.exhausted = false
                    progress.stream.exhausted = false
                    progress.blocked = false
                case .acknowledged(let ack):
                    guard let handed = progress.inflight.removeValue(forKey: ack.messageId) else { continue }
                    if case .journal(let sequence) = handed { progress.inflightStream.remove(sequence) }
                    if ack.isSuccess {
                        if case .table(let sequence) = handed { progress.work.acknowledge(destination, sequence: sequence) }
                        counters.acked.add(1, ordering: .relaxed)
                        continue
                    }
                    // Kept: a table row stays; a stream event moves to the table (in full), so the
                    // stream can go on past it. Either is sent again after a restart.
                    if case .journal(let sequence) = handed { refused.append(sequence) }
                    let count = failedCount.add(1, ordering: .relaxed).newValue
                    let reason = "reason 0x\(String(ack.reasonCode, radix: 16)): \(ack.reason)"
                    warnings.set("outbox-\(destination.rawValue)-refused",
                                 "the \(destination.rawValue) broker refused \(count) event\(count == 1 ? "" : "s") (last \(reason)); they stay in the outbox and are sent again after a restart")
                    logger.warning("the \(destination.rawValue) broker refused an event (\(reason)); it stays in the outbox",
                                   ["outbox": handed.place])
                }
            }
            // Hand out what the acknowledgements made room for first: committing them waits
            // for the store's thread, behind the next group commit.
            await pump(&progress)
            await commitProgress(&progress, refused: refused)
        }
    }

    /// Commits acknowledgements, refused stream events (as table rows, not sent again in this
    /// run) and how far the stream is settled: every stream message below the oldest in
    /// flight, or every one handed over when none is. On failure all of it is kept for the
    /// next try (until then a restart sends those events again, with the same ids).
    private func commitProgress(_ progress: inout Progress, refused: [Int64]) async {
        for sequence in refused {
            // Still in the stream (it is not settled past while in flight): read it back.
            let row: OutboxRow?
            do {
                row = try await store.outboxStream(destination, after: sequence - 1, limit: 1).first
            } catch {
                // The stream then stays before it for this run: it is sent again after a restart.
                logger.warning("could not read the refused \(destination.rawValue) event of journal row \(sequence): \(error)")
                progress.settleBefore = min(progress.settleBefore ?? sequence, sequence)
                continue
            }
            guard let row, row.sequence == sequence else { continue }  // dropped by the cap meanwhile
            var message = row.message
            message.payloadInJournal = false
            progress.work.enqueue(message)
        }
        let settled = min(progress.inflightStream.min().map { $0 - 1 } ?? progress.stream.handed,
                          (progress.settleBefore ?? .max) - 1)
        if settled > progress.settled { progress.work.settle(destination, through: settled) }
        guard !progress.work.isEmpty else { return }
        do {
            let receipt = try await store.submit(progress.work)
            // The refused events' new rows (the batch queues nothing else).
            progress.skip.formUnion(receipt.outboxSequences)
            if let committed = progress.work.settled[destination] { progress.settled = max(progress.settled, committed) }
            progress.work = StoreBatch()
        } catch {
            logger.warning("could not commit the \(destination.rawValue) outbox's acknowledgements (they are sent again after a restart): \(error)")
        }
    }

    /// Hands events to libmosquitto until the window is full or nothing waits: events kept in
    /// memory, then outbox table rows, then the stream on the journal. They are published on the
    /// network thread (``MQTTClient/publish(_:)``), a batch at a time.
    private func pump(_ progress: inout Progress) async {
        while progress.inflight.count < window {
            let room = window - progress.inflight.count
            let messages: [VolatileMessage] = volatileQueue.withLock { queue in
                defer { queue.removeFirst(min(room, queue.count)) }
                return Array(queue.prefix(room))
            }
            guard !messages.isEmpty else { break }
            let results = await client.publish(messages.map { MQTTMessage(topic: $0.topic, payload: $0.payload, qos: MQTTQoS($0.qos)) })
            var failed: [VolatileMessage] = []
            for (message, result) in zip(messages, results) {
                if case .success(let id) = result { progress.inflight[id] = .volatile } else { failed.append(message) }
            }
            if !failed.isEmpty {
                volatileQueue.withLock { $0.insert(contentsOf: failed, at: 0) }
                break
            }
        }
        // Messages just committed: while the database holds nothing older of their source that
        // is not handed over (exhausted), they are the next ones and go out from memory;
        // otherwise they are dropped here and read from the database in order.
        let fresh = freshRows.withLock { rows in
            defer { rows.removeAll(keepingCapacity: true) }
            return rows
        }
        for source in [OutboxSource.table, .journal] where progress[source].exhausted {
            let handed = progress[source].handed
            let rows = fresh.filter { $0.source == source && $0.sequence > handed }
            let room = max(0, window - progress.inflight.count)
            await hand(rows.prefix(room), &progress)
            if progress.blocked || rows.count > room { progress[source].exhausted = false }
        }
        for source in [OutboxSource.table, .journal] {
            while !progress[source].exhausted, !progress.blocked, progress.inflight.count < window {
                let rows: [OutboxRow]
                do {
                    let (after, limit) = (progress[source].handed, window - progress.inflight.count)
                    rows = source == .table ? try await store.outbox(destination, after: after, limit: limit)
                                            : try await store.outboxStream(destination, after: after, limit: limit)
                } catch {
                    logger.warning("could not read the \(destination.rawValue) outbox: \(error)")
                    return
                }
                if rows.isEmpty {
                    progress[source].exhausted = true
                    break
                }
                await hand(rows[...], &progress)
            }
        }
        inflightCount.store(progress.inflight.count, ordering: .relaxed)
    }

    /// Publishes queued messages in order (refused ones moved to the table are only passed
    /// over), up to the first that fails: QoS 0 without a connection, which blocks the pump
    /// until the next connect; that one and the rest are read again then.
    private func hand(_ rows: ArraySlice<OutboxRow>, _ progress: inout Progress) async {
        guard !progress.blocked, !rows.isEmpty else { return }
        let skip = progress.skip
        let passedOver = { (row: OutboxRow) in row.source == .table && skip.contains(row.sequence) }
        let sending = rows.filter { !passedOver($0) }
        let results = sending.isEmpty ? [] : await client.publish(sending.map {
            MQTTMessage(topic: $0.message.topic, payload: $0.message.payload, qos: MQTTQoS($0.message.qos))
        })
        var next = results.makeIterator()
        for row in rows {
            if !passedOver(row) {
                guard case .success(let id)? = next.next() else {
                    progress.blocked = true
                    return
                }
                switch row.source {
                case .table:
                    progress.inflight[id] = .table(row.sequence)
                case .journal:
                    progress.inflight[id] = .journal(row.sequence)
                    progress.inflightStream.insert(row.sequence)
                }
            }
            progress[row.source].handed = row.sequence
        }
    }
}

extension MQTTQoS {
    /// QoS 0 or 1 from the config's number.
    init(_ level: Int) { self = level == 0 ? .atMostOnce : .atLeastOnce }
}
