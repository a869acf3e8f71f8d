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
///
/// Events just committed to the stream are handed to libmosquitto by a job on the network
/// thread that the committer queues (``notifyCommitted(rows:)``), when nothing that ``run()``
/// hands over can come before them (the usual case): one thread hop from the commit to the
/// publish instead of two. Everything else (database reads, the table, acknowledgements,
/// settling) is ``run()``'s, and while it hands messages over, fresh ones wait for it.
final class OutboxPublisher: Service, Sendable {
    enum Signal: Sendable {
        /// Rows were committed that are only in the database (read them back).
        case committed
        /// Rows were committed and handed over in memory (``notifyCommitted(rows:)``).
        case fresh
        case acknowledged(MQTTAcknowledgement)
        case connected
        /// The acknowledgements gathered since the last progress commit are due.
        case progressDue
    }

    /// Acknowledgements and the stream's settling are committed at most this often (seconds),
    /// but at once for an event the broker refused, and at the end. Each commit is a
    /// transaction of its own: one per burst of acknowledgements was half of all the
    /// transactions under load. Waiting only delays removal: after a `kill -9` the events
    /// acknowledged in the last interval are sent again, with the same ids.
    static let progressInterval = 0.1

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
    /// What was handed over and is in flight: ``run()``'s, and the fresh-row job's on the
    /// network thread while ``run()`` is not handing messages over (``Progress/pumping``).
    private let progress = Mutex(Progress())
    private let volatileQueue = Mutex<[VolatileMessage]>([])
    /// Rows kept after a failed acknowledgement (counted in the status warnings).
    let failedCount = Atomic<Int>(0)
    /// Events kept in memory (database fault) that were dropped past the cap, since start.
    let volatileDropped = Atomic<Int>(0)
    /// Events handed to libmosquitto and not yet acknowledged.
    let inflightCount = Atomic<Int>(0)
    /// Acknowledgements taken on the network thread as they arrived (not queued for ``run()``).
    let acknowledgementsTakenOnArrival = Atomic<Int>(0)
    /// A `progressDue` signal will be sent (a timer runs).
    private let progressTimer = Atomic<Bool>(false)

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
        client.perform { [self] in publishFresh() }
    }

    /// Tells ``run()`` that fresh rows wait for it.
    private func signalFresh() {
        if !freshPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.fresh)
        }
    }

    /// On the network thread (or the committer's, with no connection loop): hands the fresh
    /// stream events to libmosquitto, in order and within the window, when the stream was
    /// read to its end and ``run()`` is not handing anything over; otherwise, and for fresh
    /// table rows, leaves them to ``run()``.
    private func publishFresh() {
        let noVolatile = volatileQueue.withLock { $0.isEmpty }
        let leftForRun: Bool = progress.withLock { p in
            guard !p.pumping, !p.blocked, p.stream.exhausted, noVolatile else { return true }
            let (rows, tableRowsLeft): ([OutboxRow], Bool) = freshRows.withLock { fresh in
                let rows = fresh.filter { $0.source == .journal }
                fresh.removeAll { $0.source == .journal }
                return (rows, !fresh.isEmpty)
            }
            let handed = p.stream.handed
            let due = rows.filter { $0.sequence > handed }
            let room = max(0, window - p.inflight.count)
            let sending = due.prefix(room)
            let results = sending.map { row in
                Result { try client.publish(topic: row.message.topic, payload: row.message.payload, qos: MQTTQoS(row.message.qos)) }
            }
            Self.record(sending, results: results, into: &p)
            if p.blocked || due.count > room { p.stream.exhausted = false }
            inflightCount.store(p.inflight.count, ordering: .relaxed)
            return tableRowsLeft || !p.stream.exhausted
        }
        if leftForRun { signalFresh() }
    }

    /// New rows were committed to this destination's outbox (read them from the database).
    func notifyCommitted() {
        if !committedPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.committed)
        }
    }

    /// Called on libmosquitto's network thread for every acknowledgement of `client`.
    /// The usual one, a stream event's success while nothing waits for the room it leaves, is
    /// taken here and settled by ``run()`` at the next progress commit (the timer wakes it):
    /// waking ``run()`` for each burst of acknowledgements was a pool thread's wake-up per
    /// event. Table rows, refusals, and room that a backlog waits for go to ``run()``.
    func acknowledged(_ ack: MQTTAcknowledgement) {
        if ack.isSuccess, takeStreamAcknowledgement(ack) {
            counters.acked.add(1, ordering: .relaxed)
            acknowledgementsTakenOnArrival.add(1, ordering: .relaxed)
            armProgressTimer(at: Self.progressInterval)
            return
        }
        if !signals.trySend(.acknowledged(ack)) {
            logger.error("acknowledgement queue full: the event stays in the outbox and is sent again after a restart",
                         ["outbox": destination.rawValue])
        }
    }

    /// Takes a successful acknowledgement of a stream event off the in-flight table when
    /// neither source has more to hand over and nothing is blocked (else ``run()`` must see the
    /// room it leaves). False when it is not such an acknowledgement.
    private func takeStreamAcknowledgement(_ ack: MQTTAcknowledgement) -> Bool {
        guard volatileQueue.withLock({ $0.isEmpty }) else { return false }
        return progress.withLock { p in
            guard case .journal(let sequence)? = p.inflight[ack.messageId], p.stream.exhausted, p.table.exhausted, !p.blocked
            else { return false }
            p.inflight.removeValue(forKey: ack.messageId)
            p.inflightStream.remove(sequence)
            inflightCount.store(p.inflight.count, ordering: .relaxed)
            return true
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
        /// ``run()`` is handing messages over (it may await between them): fresh rows wait.
        var pumping = false
    }

    func run() async throws {
        let settled = await store.settledStream(destination)
        progress.withLock { $0.settled = settled }
        var batch: [Signal] = []
        var nextProgressCommit = 0.0
        await pump()
        while let first = await signals.next() {
            batch.removeAll(keepingCapacity: true)
            batch.append(first)
            signals.drain(upTo: 4096, into: &batch)
            var refused: [Int64] = []  // stream events the broker refused
            var failures: [(Handed, MQTTAcknowledgement)] = []
            progress.withLock { p in
                for signal in batch {
                    switch signal {
                    case .committed:
                        committedPending.store(false, ordering: .releasing)
                        p.table.exhausted = false
                        p.stream.exhausted = false
                    case .fresh:
                        freshPending.store(false, ordering: .releasing)
                    case .connected:
                        p.table.exhausted = false
                        p.stream.exhausted = false
                        p.blocked = false
                    case .progressDue:
                        break
                    case .acknowledged(let ack):
                        guard let handed = p.inflight.removeValue(forKey: ack.messageId) else { continue }
                        if case .journal(let sequence) = handed { p.inflightStream.remove(sequence) }
                        if ack.isSuccess {
                            if case .table(let sequence) = handed { p.work.acknowledge(destination, sequence: sequence) }
                            counters.acked.add(1, ordering: .relaxed)
                            continue
                        }
                        // Kept: a table row stays; a stream event moves to the table (in full), so
                        // the stream can go on past it. Either is sent again after a restart.
                        if case .journal(let sequence) = handed { refused.append(sequence) }
                        failures.append((handed, ack))
                    }
                }
            }
            for (handed, ack) in failures {
                let count = failedCount.add(1, ordering: .relaxed).newValue
                let reason = "reason 0x\(String(ack.reasonCode, radix: 16)): \(ack.reason)"
                warnings.set("outbox-\(destination.rawValue)-refused",
                             "the \(destination.rawValue) broker refused \(count) event\(count == 1 ? "" : "s") (last \(reason)); they stay in the outbox and are sent again after a restart")
                logger.warning("the \(destination.rawValue) broker refused an event (\(reason)); it stays in the outbox",
                               ["outbox": handed.place])
            }
            // Hand out what the acknowledgements made room for first: committing them waits
            // for the store's thread, behind the next group commit.
            await pump()
            let now = MonotonicClock.now()
            if refused.isEmpty, now < nextProgressCommit {
                armProgressTimer(at: nextProgressCommit - now)
            } else if await commitProgress(refused: refused) {
                nextProgressCommit = now + Self.progressInterval
            }
        }
        await commitProgress(refused: [])
    }

    /// Sends `progressDue` after `delay` seconds, unless a timer runs already.
    private func armProgressTimer(at delay: Double) {
        guard !progressTimer.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { [self] in
            try? await Task.sleep(for: .seconds(delay))
            progressTimer.store(false, ordering: .releasing)
            // A full queue has signals to take: the next batch finds the commit due then.
            _ = signals.trySend(.progressDue)
        }
    }

    /// Commits acknowledgements, refused stream events (as table rows, not sent again in this
    /// run) and how far the stream is settled: every stream message below the oldest in
    /// flight, or every one handed over when none is. On failure all of it is kept for the
    /// next try (until then a restart sends those events again, with the same ids). False when
    /// there was nothing to commit.
    @discardableResult
    private func commitProgress(refused: [Int64]) async -> Bool {
        for sequence in refused {
            // Still in the stream (it is not settled past while in flight): read it back.
            let row: OutboxRow?
            do {
                row = try await store.outboxStream(destination, after: sequence - 1, limit: 1).first
            } catch {
                // The stream then stays before it for this run: it is sent again after a restart.
                logger.warning("could not read the refused \(destination.rawValue) event of journal row \(sequence): \(error)")
                progress.withLock { $0.settleBefore = min($0.settleBefore ?? sequence, sequence) }
                continue
            }
            guard let row, row.sequence == sequence else { continue }  // dropped by the cap meanwhile
            var message = row.message
            message.payloadInJournal = false
            progress.withLock { $0.work.enqueue(message) }
        }
        // Only this task changes `work`: it stays as taken here until the commit ends.
        let work: StoreBatch = progress.withLock { p in
            let settled = min(p.inflightStream.min().map { $0 - 1 } ?? p.stream.handed, (p.settleBefore ?? .max) - 1)
            if settled > p.settled { p.work.settle(destination, through: settled) }
            return p.work
        }
        guard !work.isEmpty else { return false }
        do {
            let receipt = try await store.submit(work)
            progress.withLock { p in
                // The refused events' new rows (the batch queues nothing else).
                p.skip.formUnion(receipt.outboxSequences)
                if let committed = work.settled[destination] { p.settled = max(p.settled, committed) }
                p.work = StoreBatch()
            }
        } catch {
            logger.warning("could not commit the \(destination.rawValue) outbox's acknowledgements (they are sent again after a restart): \(error)")
        }
        return true
    }

    /// Hands events to libmosquitto until the window is full or nothing waits: events kept in
    /// memory, then outbox table rows, then the stream on the journal. They are published on the
    /// network thread (``MQTTClient/publish(_:)``), a batch at a time. Fresh rows wait for it
    /// meanwhile (``Progress/pumping``), so that nothing overtakes what it reads.
    private func pump() async {
        progress.withLock { $0.pumping = true }
        defer {
            progress.withLock { p in
                p.pumping = false
                inflightCount.store(p.inflight.count, ordering: .relaxed)
            }
        }
        while true {
            let room = progress.withLock { window - $0.inflight.count }
            guard room > 0 else { break }
            let messages: [VolatileMessage] = volatileQueue.withLock { queue in
                defer { queue.removeFirst(min(room, queue.count)) }
                return Array(queue.prefix(room))
            }
            guard !messages.isEmpty else { break }
            let results = await client.publish(messages.map { MQTTMessage(topic: $0.topic, payload: $0.payload, qos: MQTTQoS($0.qos)) })
            var failed: [VolatileMessage] = []
            progress.withLock { p in
                for (message, result) in zip(messages, results) {
                    if case .success(let id) = result { p.inflight[id] = .volatile } else { failed.append(message) }
                }
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
        for source in [OutboxSource.table, .journal] {
            let (rows, room): ([OutboxRow], Int) = progress.withLock { p in
                guard p[source].exhausted else { return ([], 0) }
                let handed = p[source].handed
                return (fresh.filter { $0.source == source && $0.sequence > handed }, max(0, window - p.inflight.count))
            }
            guard !rows.isEmpty else { continue }
            await hand(rows.prefix(room))
            progress.withLock { p in
                if p.blocked || rows.count > room { p[source].exhausted = false }
            }
        }
        for source in [OutboxSource.table, .journal] {
            while true {
                let next: (after: Int64, limit: Int)? = progress.withLock { p in
                    guard !p[source].exhausted, !p.blocked, p.inflight.count < window else { return nil }
                    return (p[source].handed, window - p.inflight.count)
                }
                guard let next else { break }
                let rows: [OutboxRow]
                do {
                    rows = source == .table ? try await store.outbox(destination, after: next.after, limit: next.limit)
                                            : try await store.outboxStream(destination, after: next.after, limit: next.limit)
                } catch {
                    logger.warning("could not read the \(destination.rawValue) outbox: \(error)")
                    return
                }
                if rows.isEmpty {
                    progress.withLock { $0[source].exhausted = true }
                    break
                }
                await hand(rows[...])
            }
        }
    }

    /// Publishes queued messages in order (refused ones moved to the table are only passed
    /// over), up to the first that fails: QoS 0 without a connection, which blocks the pump
    /// until the next connect; that one and the rest are read again then.
    private func hand(_ rows: ArraySlice<OutboxRow>) async {
        let (blocked, skip) = progress.withLock { ($0.blocked, $0.skip) }
        guard !blocked, !rows.isEmpty else { return }
        let sending = rows.filter { !Self.passedOver($0, skip: skip) }
        let results = sending.isEmpty ? [] : await client.publish(sending.map {
            MQTTMessage(topic: $0.message.topic, payload: $0.message.payload, qos: MQTTQoS($0.message.qos))
        })
        progress.withLock { Self.record(rows, results: results, into: &$0) }
    }

    /// A table row the broker refused earlier in this run: not sent again.
    private static func passedOver(_ row: OutboxRow, skip: Set<Int64>) -> Bool {
        row.source == .table && skip.contains(row.sequence)
    }

    /// Records what publishing `rows` gave (`results`: one per row not passed over, in order):
    /// each message id in flight, and how far each source was handed over, up to the first
    /// failure, which blocks handing over until the next connect.
    private static func record(_ rows: ArraySlice<OutboxRow>, results: [Result<Int32, any Error>], into p: inout Progress) {
        var next = results.makeIterator()
        for row in rows {
            if !passedOver(row, skip: p.skip) {
                guard case .success(let id)? = next.next() else {
                    p.blocked = true
                    return
                }
                switch row.source {
                case .table:
                    p.inflight[id] = .table(row.sequence)
                case .journal:
                    p.inflight[id] = .journal(row.sequence)
                    p.inflightStream.insert(row.sequence)
                }
            }
            p[row.source].handed = row.sequence
        }
    }
}

extension MQTTQoS {
    /// QoS 0 or 1 from the config's number.
    init(_ level: Int) { self = level == 0 ? .atMostOnce : .atLeastOnce }
}
