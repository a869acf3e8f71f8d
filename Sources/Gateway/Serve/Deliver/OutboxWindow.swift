import MQTT
import Store

/// One destination's outbox delivery as a state machine: how far each source was handed to
/// libmosquitto (the outbox table, then the stream on the journal), what is in flight (at most
/// `window` messages), what waits in memory (fresh rows just committed, events the database
/// refused), and what is due to be committed (acknowledged table rows, how far the stream is
/// settled, refused stream events moved to the table).
///
/// It does nothing itself: no locks, no I/O, no clock. Every input is a mutating method that
/// returns what the caller must do next, so every rule is tested without a broker or a store
/// (`OutboxWindowTests`). ``OutboxPublisher`` holds it in one `Mutex` and performs the actions
/// after releasing it (libmosquitto is never called under the lock); the threads feed it:
/// - the committer: ``freshRowsCommitted(_:)`` and ``keepVolatile(_:)`` (rows just committed,
///   events the database refused);
/// - libmosquitto's network thread: ``takeFresh()``, the publishes, then ``freshPublished(_:)``
///   (fresh stream rows handed over without a database read; the acknowledgements are taken
///   on the same thread, so none can come before the message ids are recorded, and a pump
///   asked for in between waits for ``freshPublished(_:)``), and
///   ``takeAcknowledgementOnArrival(_:)``;
/// - ``OutboxPublisher/run()``'s task: everything else, one call at a time — the signals
///   (``committed()``, ``connected()``, ``acknowledged(_:)``), the pump (``startPump()``, then
///   ``published(_:)`` / ``read(_:)`` / ``readFailed()`` until ``PumpAction/done``) and the
///   progress commit (``progressDue(now:final:)`` and what follows it).
struct OutboxWindow: Sendable {
    /// What a message handed to libmosquitto was.
    enum Handed: Sendable, Equatable {
        /// Published from memory (the database refused it), by event id: nothing to remove.
        case volatile(String)
        /// An outbox table row.
        case table(Int64)
        /// An event of the stream on the journal, by its journal sequence.
        case journal(Int64)

        /// For the log.
        var place: String {
            switch self {
            case .volatile(let event): "memory (event \(event))"
            case .table(let sequence): "outbox row \(sequence)"
            case .journal(let sequence): "journal row \(sequence)"
            }
        }
    }

    /// How far one source (the outbox table, the stream) was handed over.
    struct Cursor: Sendable, Equatable {
        /// The last sequence handed over.
        var handed: Int64 = 0
        /// The last read found nothing beyond it.
        var exhausted = false
    }

    /// What handing one message to libmosquitto gave.
    enum Publication: Sendable, Equatable {
        /// Queued, with this message id.
        case inFlight(Int32)
        /// Not now (QoS 0 without a connection): handing over stops until a connect, and the
        /// message is handed over again then.
        case failed
        /// Never (larger than the broker takes, an invalid topic): the event is parked
        /// (``takeParked()``) and handing over goes on with the next.
        case undeliverable(reason: String)
    }

    /// An event no broker of this destination will take: it leaves the outbox (it stays in the
    /// journal), and the publisher counts and warns about it.
    struct Parked: Sendable, Equatable {
        var message: OutboxMessage
        var reason: String
    }

    /// What ``OutboxPublisher/run()`` does next while it hands messages over.
    enum PumpAction: Sendable, Equatable {
        /// Publish these, in order, on the network thread; then ``published(_:)``.
        case publish([OutboxMessage])
        /// Read up to `limit` rows of `source` after sequence `after`; then ``read(_:)`` or
        /// ``readFailed()``.
        case read(OutboxSource, after: Int64, limit: Int)
        /// Nothing more to hand over until the next signal.
        case done
    }

    /// What the network thread does with fresh rows (``takeFresh()``).
    enum FreshAction: Sendable, Equatable {
        /// Publish these now, in order, and tell ``freshPublished(_:)`` before anything else.
        case publish([OutboxMessage])
        /// ``OutboxPublisher/run()`` must hand (some of) them over: wake it.
        case wakeRun
        /// Nothing left to do.
        case done
    }

    /// What an acknowledgement taken by ``OutboxPublisher/run()`` was.
    enum AcknowledgementOutcome: Sendable, Equatable {
        /// Not a message in flight (acknowledged before, or of another publisher).
        case unknown
        /// Delivered: it no longer waits (a table row's removal is in ``work``).
        case delivered
        /// Refused by the broker: it stays in the outbox (a stream event moves to the table
        /// at the next progress commit, which is due at once). Warn about it.
        case refused(Handed)
    }

    /// What ``OutboxPublisher/run()`` does to commit the progress.
    enum ProgressAction: Sendable, Equatable {
        /// Nothing to commit.
        case none
        /// Not due yet: ask again (``progressDue(now:final:)``) after this many seconds.
        case armTimer(after: Double)
        /// Read the stream row of this journal sequence (an event the broker refused, still in
        /// the stream); then ``refusedRead(_:)`` or ``refusedReadFailed()``.
        case readRefused(Int64)
        /// Commit this batch; then ``progressCommitted(outboxSequences:)`` or
        /// ``progressCommitFailed()``.
        case commit(StoreBatch)
    }

    let destination: OutboxDestination
    /// At most this many messages in flight.
    let window: Int
    /// At most this many events kept in memory while the database fails.
    let volatileCap: Int
    /// Progress commits at most this often (seconds), but at once for a refusal.
    let progressInterval: Double

    /// Message id -> what it was.
    private(set) var inflight: [Int32: Handed] = [:]
    /// Journal sequences of the stream's messages in flight.
    private var inflightStream = Set<Int64>()
    /// QoS 0 rows in flight: libmosquitto reports them once written, and drops those its
    /// connection lost before writing them (handed over while it was still connecting).
    private var inflightQoS0: [Int32: OutboxRow] = [:]
    private(set) var table = Cursor()
    private(set) var stream = Cursor()
    /// A publish failed (QoS 0 without a connection): nothing is handed over until a connect.
    private(set) var blocked = false
    /// Table rows not to send again in this run (events the broker refused, moved there).
    private(set) var skip = Set<Int64>()
    /// The stream position last committed as settled.
    private(set) var settled: Int64 = 0
    /// A refused stream event that could not be moved to the table: never settled past.
    private(set) var settleBefore: Int64?
    /// Acknowledgements, settling and refused events to commit (kept until committed).
    private(set) var work = StoreBatch()
    /// The batch being committed (``ProgressAction/commit(_:)``), merged back on failure.
    private var committing: StoreBatch?
    /// Refused stream events to move to the table at the next progress commit.
    private(set) var refusals: [Int64] = []
    private var progressStarted = 0.0
    private var nextProgressCommit = 0.0
    /// Events the database refused, published from memory before anything else.
    private(set) var volatile: [OutboxMessage] = []
    /// Ids of events published from memory that the broker acknowledged (at most
    /// ``volatileCap``): once the database takes the events again, these are not queued in its
    /// outbox (``committedFromMemory(_:)``).
    private(set) var deliveredFromMemory: Set<String> = []
    /// Rows just committed, in sequence order: handed over without a database read while
    /// their source holds nothing older that was not handed over, else read back.
    private(set) var fresh: [OutboxRow] = []
    /// Events parked since the last ``takeParked()``.
    private var parked: [Parked] = []

    /// Where the pump is.
    private enum Stage: Sendable {
        case idle
        case volatile
        /// Fresh rows of a source, from the snapshot taken when the pump came to them.
        case fresh(OutboxSource, [OutboxRow])
        case read(OutboxSource)
    }

    /// Rows being published and what to do once they are.
    private struct Handing: Sendable {
        var rows: ArraySlice<OutboxRow>
        /// Fresh rows: this source is no longer exhausted when handing over blocks or the
        /// fresh rows did not all fit in the window.
        var reopen: OutboxSource?
        var overflow = false
    }

    /// The answer a pump action waits for.
    private enum Awaiting: Sendable {
        case volatile([OutboxMessage])
        case rows(Handing)
        case read(OutboxSource)
    }

    private var stage = Stage.idle
    private var awaiting: Awaiting?
    /// Fresh rows the network thread publishes (``takeFresh()``), and whether table rows were
    /// left for ``OutboxPublisher/run()``.
    private var freshHanding: (handing: Handing, tableRowsLeft: Bool)?
    /// ``startPump()`` was asked for while the network thread published fresh rows: it did
    /// nothing, and ``freshPublished(_:)`` wakes ``OutboxPublisher/run()`` to ask again.
    private(set) var pumpDeferred = false

    init(destination: OutboxDestination, window: Int, volatileCap: Int, progressInterval: Double) {
        self.destination = destination
        self.window = window
        self.volatileCap = volatileCap
        self.progressInterval = progressInterval
    }

    /// Messages handed to libmosquitto and not yet acknowledged.
    var inflightCount: Int { inflight.count }

    /// Events in memory, or a source not read to its end: a pump has something to hand over
    /// (fresh rows aside).
    var holdsUnhanded: Bool { !volatile.isEmpty || !table.exhausted || !stream.exhausted }

    /// ``OutboxPublisher/run()`` hands messages over (it awaits between them): fresh rows wait.
    var pumping: Bool {
        if case .idle = stage { false } else { true }
    }

    private subscript(source: OutboxSource) -> Cursor {
        get { source == .table ? table : stream }
        set {
            if source == .table { table = newValue } else { stream = newValue }
        }
    }

    // MARK: Signals (run()'s task)

    /// ``OutboxPublisher/run()`` began: the stream was committed as settled up to `settled`.
    mutating func start(settled: Int64) { self.settled = settled }

    /// Rows were committed that are only in the database: both sources may hold more.
    mutating func committed() {
        table.exhausted = false
        stream.exhausted = false
    }

    /// The broker connection came up: publishing can go on, and everything is read again.
    /// QoS 0 rows still in flight were lost with the connection before they were written:
    /// they are handed over again (each source is read again from the first of them).
    mutating func connected() {
        committed()
        blocked = false
        for (id, row) in inflightQoS0 where inflight.removeValue(forKey: id) != nil {
            if row.source == .journal { inflightStream.remove(row.sequence) }
            self[row.source].handed = min(self[row.source].handed, row.sequence - 1)
        }
        inflightQoS0 = [:]
    }

    /// An acknowledgement ``takeAcknowledgementOnArrival(_:)`` left: the message no longer
    /// waits; a success of a table row is queued for removal, a refusal of a stream event for
    /// its move to the table.
    mutating func acknowledged(_ ack: MQTTAcknowledgement) -> AcknowledgementOutcome {
        guard let handed = inflight.removeValue(forKey: ack.messageId) else { return .unknown }
        if !inflightQoS0.isEmpty { inflightQoS0.removeValue(forKey: ack.messageId) }
        if case .journal(let sequence) = handed { inflightStream.remove(sequence) }
        if ack.isSuccess {
            switch handed {
            case .table(let sequence): work.acknowledge(destination, sequence: sequence)
            case .volatile(let event) where deliveredFromMemory.count < volatileCap: deliveredFromMemory.insert(event)
            case .volatile, .journal: break
            }
            return .delivered
        }
        // Kept: a table row stays; a stream event moves to the table (in full), so the stream
        // can go on past it. Either is sent again after a restart.
        if case .journal(let sequence) = handed { refusals.append(sequence) }
        return .refused(handed)
    }

    // MARK: The committer's inputs

    /// Rows were committed to this destination, in sequence order (``takeFresh()`` or the next
    /// pump hands them over).
    mutating func freshRowsCommitted(_ rows: [OutboxRow]) { fresh.append(contentsOf: rows) }

    /// Keeps events the database refused, to publish before anything else; returns how many of
    /// the oldest were dropped past ``volatileCap``.
    mutating func keepVolatile(_ messages: [OutboxMessage]) -> Int {
        volatile.append(contentsOf: messages)
        let excess = max(0, volatile.count - volatileCap)
        if excess > 0 { volatile.removeFirst(excess) }
        return excess
    }

    /// The database took again the events with these ids (the committer's retry after a
    /// fault), with outbox rows of their own: those still waiting in memory are no longer
    /// published from there, and their acknowledgements from memory are no longer needed.
    mutating func committedFromMemory(_ events: Set<String>) {
        volatile.removeAll { events.contains($0.eventID) }
        deliveredFromMemory.subtract(events)
    }

    // MARK: The network thread's inputs

    /// Takes the fresh stream rows to publish now, within the window, when the stream was read
    /// to its end and nothing else is handed over (no pump, not blocked, nothing in memory);
    /// otherwise, and for fresh table rows, leaves them to ``OutboxPublisher/run()``.
    mutating func takeFresh() -> FreshAction {
        guard !pumping, freshHanding == nil, !blocked, stream.exhausted, volatile.isEmpty else { return .wakeRun }
        let rows = fresh.filter { $0.source == .journal }
        fresh.removeAll { $0.source == .journal }
        let handed = stream.handed
        let due = rows.filter { $0.sequence > handed }
        let room = max(0, window - inflight.count)
        let handing = Handing(rows: due.prefix(room), reopen: .journal, overflow: due.count > room)
        freshHanding = (handing, !fresh.isEmpty)
        guard handing.rows.isEmpty else { return .publish(handing.rows.map(\.message)) }
        return freshPublished([])
    }

    /// What publishing ``FreshAction/publish(_:)`` gave, per message (a failure blocks handing
    /// over until a connect; an undeliverable event is parked).
    mutating func freshPublished(_ ids: [Publication]) -> FreshAction {
        guard let (handing, tableRowsLeft) = freshHanding else { preconditionFailure("no fresh rows handed over") }
        freshHanding = nil
        record(handing.rows, ids: ids)
        finish(handing)
        let pumpWanted = pumpDeferred
        pumpDeferred = false
        return tableRowsLeft || !stream.exhausted || pumpWanted ? .wakeRun : .done
    }

    /// Takes a stream event's successful acknowledgement off the window when neither source
    /// has more to hand over, nothing is blocked and nothing waits in memory (else
    /// ``OutboxPublisher/run()`` must see the room it leaves: ``acknowledged(_:)``). It is
    /// settled at the next progress commit. False when it is not such an acknowledgement.
    mutating func takeAcknowledgementOnArrival(_ ack: MQTTAcknowledgement) -> Bool {
        guard ack.isSuccess, volatile.isEmpty, case .journal(let sequence)? = inflight[ack.messageId],
              stream.exhausted, table.exhausted, !blocked
        else { return false }
        inflight.removeValue(forKey: ack.messageId)
        inflightStream.remove(sequence)
        if !inflightQoS0.isEmpty { inflightQoS0.removeValue(forKey: ack.messageId) }
        return true
    }

    // MARK: The pump (run()'s task)

    /// Begins handing messages over until the window is full or nothing waits: events kept in
    /// memory, then fresh rows whose source was read to its end, then each source from the
    /// database (the table, then the stream). Fresh rows wait for it meanwhile (``pumping``).
    /// While the network thread publishes fresh rows (between ``takeFresh()`` and
    /// ``freshPublished(_:)``) it does nothing: what it would read or count as room is not
    /// recorded yet, so ``freshPublished(_:)`` asks for the pump again (``FreshAction/wakeRun``).
    mutating func startPump() -> PumpAction {
        precondition(!pumping && awaiting == nil, "one pump at a time")
        if freshHanding != nil {
            pumpDeferred = true
            return .done
        }
        stage = .volatile
        return advance()
    }

    /// What publishing ``PumpAction/publish(_:)`` gave, per message. A failed table or stream
    /// row blocks handing over until a connect (it and the rest are read again then); failed
    /// events from memory stay first in memory. Undeliverable events are parked.
    mutating func published(_ ids: [Publication]) -> PumpAction {
        switch awaiting {
        case .volatile(let messages):
            awaiting = nil
            var failed: [OutboxMessage] = []
            for (message, publication) in zip(messages, ids) {
                switch publication {
                case .inFlight(let id): inflight[id] = .volatile(message.eventID)
                case .failed: failed.append(message)
                case .undeliverable(let reason): parked.append(Parked(message: message, reason: reason))
                }
            }
            if !failed.isEmpty {
                volatile.insert(contentsOf: failed, at: 0)
                takeFreshSnapshot()
            }
        case .rows(let handing):
            awaiting = nil
            record(handing.rows, ids: ids)
            finish(handing)
        case .read, nil:
            preconditionFailure("no publish pending")
        }
        return advance()
    }

    /// The rows ``PumpAction/read(_:after:limit:)`` read, in order (none: the source was read
    /// to its end).
    mutating func read(_ rows: [OutboxRow]) -> PumpAction {
        guard case .read(let source) = awaiting else { preconditionFailure("no read pending") }
        awaiting = nil
        if rows.isEmpty {
            self[source].exhausted = true
            stage = source == .table ? .read(.journal) : .idle
        } else if let action = hand(Handing(rows: rows[...])) {
            return action
        }
        return advance()
    }

    /// The read failed: the pump ends (it is read again at the next signal).
    mutating func readFailed() -> PumpAction {
        guard case .read = awaiting else { preconditionFailure("no read pending") }
        awaiting = nil
        stage = .idle
        return .done
    }

    /// The events parked since the last call (to count and warn about), oldest first.
    mutating func takeParked() -> [Parked] {
        guard !parked.isEmpty else { return [] }
        defer { parked = [] }
        return parked
    }

    private mutating func takeFreshSnapshot() {
        stage = .fresh(.table, fresh)
        fresh.removeAll(keepingCapacity: true)
    }

    private mutating func advance() -> PumpAction {
        while true {
            switch stage {
            case .idle:
                return .done
            case .volatile:
                let room = window - inflight.count
                guard room > 0, !volatile.isEmpty else {
                    takeFreshSnapshot()
                    continue
                }
                let messages = Array(volatile.prefix(room))
                volatile.removeFirst(messages.count)
                awaiting = .volatile(messages)
                return .publish(messages)
            case .fresh(let source, let rows):
                // While the database holds nothing older of their source that is not handed
                // over (exhausted), they are the next ones and go out from memory; otherwise
                // they are dropped here and read from the database in order.
                stage = source == .table ? .fresh(.journal, rows) : .read(.table)
                guard self[source].exhausted else { continue }
                let handed = self[source].handed
                let due = rows.filter { $0.source == source && $0.sequence > handed }
                guard !due.isEmpty else { continue }
                let room = max(0, window - inflight.count)
                if let action = hand(Handing(rows: due.prefix(room), reopen: source, overflow: due.count > room)) {
                    return action
                }
            case .read(let source):
                guard !self[source].exhausted, !blocked, inflight.count < window else {
                    stage = source == .table ? .read(.journal) : .idle
                    continue
                }
                awaiting = .read(source)
                return .read(source, after: self[source].handed, limit: window - inflight.count)
            }
        }
    }

    /// Publishes `handing`'s rows in order (refused ones moved to the table are only passed
    /// over), unless handing over is blocked. Nil when there is nothing to publish (what it
    /// means is recorded at once).
    private mutating func hand(_ handing: Handing) -> PumpAction? {
        if !blocked, !handing.rows.isEmpty {
            let sending = handing.rows.filter { !passedOver($0) }
            if !sending.isEmpty {
                awaiting = .rows(handing)
                return .publish(sending.map(\.message))
            }
            record(handing.rows, ids: [])
        }
        finish(handing)
        return nil
    }

    private mutating func finish(_ handing: Handing) {
        if let source = handing.reopen, blocked || handing.overflow { self[source].exhausted = false }
    }

    /// A table row the broker refused earlier in this run: not sent again.
    private func passedOver(_ row: OutboxRow) -> Bool {
        row.source == .table && skip.contains(row.sequence)
    }

    /// Records what publishing `rows` gave (`ids`: one per row not passed over, in order):
    /// each message id in flight, and how far each source was handed over, up to the first
    /// failure, which blocks handing over until the next connect. An undeliverable row is
    /// handed over without being in flight: a table row is queued for removal, the stream
    /// settles past it.
    private mutating func record(_ rows: ArraySlice<OutboxRow>, ids: [Publication]) {
        var next = ids.makeIterator()
        for row in rows {
            if !passedOver(row) {
                let id: Int32
                switch next.next() {
                case .inFlight(let inFlight)?:
                    id = inFlight
                case .undeliverable(let reason)?:
                    parked.append(Parked(message: row.message, reason: reason))
                    if row.source == .table { work.acknowledge(destination, sequence: row.sequence) }
                    self[row.source].handed = row.sequence
                    continue
                case .failed?, nil:
                    blocked = true
                    return
                }
                if row.message.qos == 0 { inflightQoS0[id] = row }
                switch row.source {
                case .table:
                    inflight[id] = .table(row.sequence)
                case .journal:
                    inflight[id] = .journal(row.sequence)
                    inflightStream.insert(row.sequence)
                }
            }
            self[row.source].handed = row.sequence
        }
    }

    // MARK: Progress commits (run()'s task)

    /// Whether to commit the progress at monotonic time `now` (seconds): at most every
    /// ``progressInterval``, but at once when a stream event was refused, and always when
    /// `final` (the end of ``OutboxPublisher/run()``).
    /// While a group commit carries the progress (``progressForGroupCommit(now:)``) there is
    /// nothing to do but wait for it.
    mutating func progressDue(now: Double, final: Bool = false) -> ProgressAction {
        if committing != nil { return final ? .none : .armTimer(after: progressInterval) }
        if !final, refusals.isEmpty, now < nextProgressCommit { return .armTimer(after: nextProgressCommit - now) }
        progressStarted = now
        return nextProgressStep()
    }

    /// The acknowledgements and how far the stream is settled, for a group commit to carry
    /// (docs/configuration.md "Durability": acknowledgement marks ride with the next commit rather than a
    /// transaction of their own), marked as being committed: answer with
    /// ``progressCommitted(outboxSequences:)`` (no rows) or ``progressCommitFailed()``. Nil when
    /// nothing is due (at most every ``progressInterval``: the stream's row is a page of its
    /// own), a progress commit runs, or refused events wait to move to the table (those take a
    /// progress commit of their own).
    mutating func progressForGroupCommit(now: Double) -> StoreBatch? {
        guard committing == nil, refusals.isEmpty, work.outbox.isEmpty, now >= nextProgressCommit else { return nil }
        progressStarted = now
        guard case .commit(let batch) = nextProgressStep() else { return nil }
        return batch
    }

    /// The refused stream event ``ProgressAction/readRefused(_:)`` asked for (nil, or another
    /// row: dropped by the cap meanwhile): it moves to the table in the commit.
    mutating func refusedRead(_ row: OutboxRow?) -> ProgressAction {
        let sequence = refusals.removeFirst()
        if let row, row.sequence == sequence {
            var message = row.message
            message.payloadInJournal = false
            work.enqueue(message)
        }
        return nextProgressStep()
    }

    /// The refused stream event could not be read: the stream then stays before it for this
    /// run (it is sent again after a restart).
    mutating func refusedReadFailed() -> ProgressAction {
        let sequence = refusals.removeFirst()
        settleBefore = min(settleBefore ?? sequence, sequence)
        return nextProgressStep()
    }

    /// The batch of ``ProgressAction/commit(_:)`` was committed; `outboxSequences` are the
    /// table rows the refused events became (not sent again in this run).
    mutating func progressCommitted(outboxSequences: [Int64]) {
        guard let batch = committing else { preconditionFailure("no progress commit pending") }
        committing = nil
        skip.formUnion(outboxSequences)
        if let through = batch.settled[destination] { settled = max(settled, through) }
    }

    /// The commit failed: all of it is kept for the next one (until then a restart sends
    /// those events again, with the same ids).
    mutating func progressCommitFailed() {
        guard var kept = committing else { preconditionFailure("no progress commit pending") }
        committing = nil
        kept.acknowledgements += work.acknowledgements
        kept.outbox += work.outbox
        for (destination, through) in work.settled { kept.settle(destination, through: through) }
        work = kept
    }

    /// Reads the refused events, then commits acknowledgements, refused events and how far
    /// the stream is settled: every stream message below the oldest in flight, or every one
    /// handed over when none is (never past a refused event that could not be moved).
    private mutating func nextProgressStep() -> ProgressAction {
        if let sequence = refusals.first { return .readRefused(sequence) }
        let through = min(inflightStream.min().map { $0 - 1 } ?? stream.handed, (settleBefore ?? .max) - 1)
        if through > settled { work.settle(destination, through: through) }
        guard !work.isEmpty else { return .none }
        nextProgressCommit = progressStarted + progressInterval
        committing = work
        work = StoreBatch()
        return .commit(committing!)
    }
}
