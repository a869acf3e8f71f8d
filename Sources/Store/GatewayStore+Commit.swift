internal import CSQLite
#if canImport(Glibc)
import Glibc
#endif

extension GatewayStore {
    /// Commits `batch` (with whatever else is pending, in one transaction) and returns what it
    /// did. Throws the ``SQLiteError`` of a failed commit (disk full, I/O error): the batch
    /// is then not stored at all, and later batches are tried afresh.
    public func submit(_ batch: StoreBatch) async throws -> StoreReceipt {
        if options.readOnly { throw StoreError.readOnly(path: path) }
        _ = try openConnection()
        return try await withCheckedThrowingContinuation { continuation in
            pending.append(PendingBatch(batch: batch) { continuation.resume(with: $0) })
            if !commitScheduled {
                commitScheduled = true
                // Enqueued behind every job already waiting on the store's queue, so the
                // submissions that arrived during the previous commit join this one.
                Task { self.commitPending() }
            }
        }
    }

    /// Commits `batch` now, on the store's queue (from a job given to ``perform(_:)``), in one
    /// transaction with the submissions waiting for the next group commit: for a committer
    /// that runs on the store's queue, so a commit costs no hop to a task and back.
    public func commitNow(_ batch: StoreBatch) throws -> StoreReceipt {
        if options.readOnly { throw StoreError.readOnly(path: path) }
        var result: Result<StoreReceipt, any Error>?
        pending.append(PendingBatch(batch: batch) { result = $0 })
        commitPending()
        return try result!.get()
    }

    /// Runs `body` on the store's queue, isolated to the store, after the jobs already queued
    /// there; no task is created, so no thread of the cooperative pool is woken.
    public nonisolated func perform(_ body: @escaping @Sendable (isolated GatewayStore) -> Void) {
        executor.async { self.assumeIsolated { body($0) } }
    }

    /// Runs `body` on the store's queue, isolated to the store, after the jobs already queued
    /// there, and waits for it: on the caller's thread when no job is queued, so no thread is
    /// woken at all. For a caller that must not wait long, see ``isIdle``.
    public nonisolated func performAndWait(_ body: @Sendable (isolated GatewayStore) -> Void) {
        executor.sync { self.assumeIsolated { body($0) } }
    }

    /// Whether no job is queued or running on the store's queue at this moment (another thread
    /// may queue one right after).
    public nonisolated var isIdle: Bool { executor.isIdle }

    /// Removes acknowledged messages from `destination`'s outbox (through the group commit);
    /// returns how many were there.
    @discardableResult
    public func acknowledge(_ destination: OutboxDestination, sequences: [Int64]) async throws -> Int {
        let batch = StoreBatch(acknowledgements: sequences.map {
            OutboxAcknowledgement(destination: destination, sequence: $0)
        })
        return try await submit(batch).acknowledged
    }

    /// Commits every pending batch in one transaction and resumes their submitters. When that
    /// transaction fails and it held several batches, each is retried alone, so one batch's
    /// problem does not fail the others; under a database-wide fault each gets the error.
    func commitPending() {
        executor.checkIsolated()  // blocking SQLite work runs on the store's queue, never the pool
        commitScheduled = false
        guard !pending.isEmpty else { return }
        let startCPU = Self.threadCPUSeconds()
        defer { statistics.commitCPUSeconds += Self.threadCPUSeconds() - startCPU }
        let group = pending
        pending.removeAll(keepingCapacity: true)
        guard let connection else {
            for item in group { item.finish(.failure(StoreError.closed(path: path))) }
            return
        }
        do {
            let receipts = try commit(group.map(\.batch), on: connection)
            for (item, receipt) in zip(group, receipts) { item.finish(.success(receipt)) }
            checkpointer?.request()
            queueWriterCheckpointIfDue(connection)
            return
        } catch where group.count == 1 {
            statistics.failedBatches += 1
            group[0].finish(.failure(error))
            return
        } catch {}
        for item in group {
            do {
                item.finish(.success(try commit([item.batch], on: connection)[0]))
            } catch {
                statistics.failedBatches += 1
                item.finish(.failure(error))
            }
        }
    }

    /// Once the WAL holds ``Options/writerCheckpointPages``, queues a checkpoint on the
    /// writer's connection behind the jobs already queued: between two transactions it copies
    /// every frame (those beside the writer never catch up under continuous writes), so the next
    /// transaction starts the WAL again. A job of its own, so that its syncs never hold up a
    /// commit's caller (the network thread commits when the store's queue is idle).
    private func queueWriterCheckpointIfDue(_ connection: SQLiteConnection) {
        guard !writerCheckpointQueued, connection.framesInWAL >= options.writerCheckpointPages else { return }
        writerCheckpointQueued = true
        perform { store in
            store.writerCheckpointQueued = false
            // Failures (SQLITE_BUSY, I/O) leave the frames for the next one.
            guard (try? store.connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")) != nil else { return }
            store.statistics.writerCheckpoints += 1
        }
    }

    /// CPU time of the calling thread, in seconds.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// One transaction applying `batches` in order; counters change only if it commits.
    private func commit(_ batches: [StoreBatch], on connection: SQLiteConnection) throws -> [StoreReceipt] {
        let number = statistics.transactions + 1
        var counts = queued
        var streams = self.streams
        var journaled = 0
        do {
            let receipts = try connection.transaction {
                try apply(batches, transaction: number, counts: &counts, streams: &streams, journaled: &journaled, on: connection)
            }
            queued = counts
            self.streams = streams
            statistics.transactions = number
            statistics.batches += batches.count
            statistics.events += journaled
            for receipt in receipts {
                statistics.dropped.local += receipt.dropped.local
                statistics.dropped.remote += receipt.dropped.remote
            }
            statistics.lastError = nil
            return receipts
        } catch {
            statistics.lastError = error as? SQLiteError
            throw error
        }
    }

    /// Without a statement journal, like the inserts below (schema 5 lets `state` be NULL).
    static let stateUpsert = MultiRowInsert(
        head: "INSERT OR IGNORE INTO device_state (device, state)", row: "(?, ?)",
        tail: "ON CONFLICT (device) DO UPDATE SET state = excluded.state")
    /// `OR IGNORE` skips an event whose (fix_time, id) is journaled already, as `ON CONFLICT
    /// DO NOTHING` did, and, unlike it, leaves no constraint that could abort the statement
    /// halfway (a NOT NULL check's default is ABORT): SQLite then keeps no statement journal,
    /// the copy of every page a multi-row statement changes, taken so that the statement alone
    /// can be undone (8 % of the commit's instructions). A failed statement fails its whole
    /// transaction here anyway. The outbox inserts use it for that reason only.
    static let journalInsert = MultiRowInsert(
        head: "INSERT OR IGNORE INTO journal (id, fix_time, emitted_time, payload, outboxes, topic, qos)",
        row: "(?, ?, ?, ?, ?, ?, ?)")
    static let outboxInserts: [OutboxDestination: MultiRowInsert] = Dictionary(uniqueKeysWithValues: OutboxDestination.allCases.map {
        ($0, MultiRowInsert(head: "INSERT OR IGNORE INTO \($0.table) (event_id, topic, payload, qos, journal_seq)", row: "(?, ?, ?, ?, ?)"))
    })
    static let settleStream = "INSERT INTO outbox_stream (destination, settled) VALUES (?, ?) ON CONFLICT (destination) DO UPDATE SET settled = excluded.settled"

    /// Applies `batches` as if one after the other (state changes, journal events, outbox
    /// messages and the outbox cap, acknowledgements and settled streams), with the rows of all
    /// of them inserted together in multi-row statements. A device's state changes collapse to
    /// its last one. Messages the cap drops are counted in the receipt of the last batch that
    /// queued a message for that destination.
    ///
    /// Rows are bound straight from the batches (by position, never copying an event or a
    /// message): this loop runs for every event the gateway commits.
    private func apply(_ batches: [StoreBatch], transaction: Int, counts: inout OutboxCounts, streams: inout OutboxStreams,
                       journaled: inout Int, on connection: SQLiteConnection) throws -> [StoreReceipt] {
        var receipts = batches.map {
            StoreReceipt(transaction: transaction, outboxSequences: Array(repeating: 0, count: $0.outbox.count))
        }
        try writeStates(batches, on: connection)
        let plans = batches.map(OutboxPlan.init)
        let initiallySettled = OutboxDestination.allCases.map { streams[$0].settled }

        // The journal sequence of each batch's events; nil for a duplicate (only a batch's own
        // newly journaled events are known to hold its outbox messages' payloads: a duplicate
        // keeps the journal's earlier version, and its messages get outbox rows of their own).
        var journalSequences = batches.map { [Int64?](repeating: nil, count: $0.events.count) }
        let events = Self.positions(batches.map(\.events.count))
        for chunk in MultiRowInsert.chunks(events.count) {
            let inserted = try connection.run(Self.journalInsert.sql(rows: chunk.count)) { parameters in
                for at in events[chunk] {
                    batches[at.batch].events.withUnsafeBufferPointer { events in
                        let event = events.baseAddress! + at.index
                        parameters.text(event.pointee.id)
                        parameters.real(event.pointee.fixTime)
                        parameters.real(event.pointee.emittedTime)
                        parameters.text(event.pointee.payload)
                        if let stream = plans[at.batch].streams[at.index] {
                            batches[at.batch].outbox.withUnsafeBufferPointer { messages in
                                let message = messages.baseAddress! + stream.message
                                parameters.integer(stream.outboxes)
                                parameters.text(message.pointee.topic)
                                parameters.integer(Int64(message.pointee.qos))
                            }
                        } else {
                            parameters.integer(0)
                            parameters.null()
                            parameters.integer(0)
                        }
                    }
                }
            }
            let sequences = try insertedJournalSequences(inserted: inserted, of: events[chunk].map {
                batches[$0.batch].events[$0.index].id
            }, on: connection)
            for (at, sequence) in zip(events[chunk], sequences) {
                if let sequence {
                    journaled += 1
                    journalSequences[at.batch][at.index] = sequence
                } else {
                    receipts[at.batch].duplicateEventIDs.append(batches[at.batch].events[at.index].id)
                }
            }
        }

        for destination in OutboxDestination.allCases {
            // Messages riding on their journal rows join the stream; the others get rows.
            var messages: [Position] = []
            var rows: [Int64?] = []  // the journal row holding each one's payload, if any
            var lastBatch: Int?
            for (batch, plan) in plans.enumerated() {
                for index in batches[batch].outbox.indices where batches[batch].outbox[index].destination == destination {
                    lastBatch = batch
                    let row = plan.events[index].flatMap { journalSequences[batch][$0] }
                    if let row, plan.ridesOnJournal[index] {
                        receipts[batch].outboxSources[index] = .journal
                        receipts[batch].outboxSequences[index] = row
                        streams[destination].append(row)
                    } else {
                        messages.append(Position(batch: batch, index: index))
                        rows.append(row)
                    }
                }
            }
            guard let lastBatch else { continue }
            let insert = Self.outboxInserts[destination]!
            for chunk in MultiRowInsert.chunks(messages.count) {
                let sql = insert.sql(rows: chunk.count)
                let inserted = try connection.run(sql) { parameters in
                    for (at, row) in zip(messages[chunk], rows[chunk]) {
                        batches[at.batch].outbox.withUnsafeBufferPointer { messages in
                            let message = messages.baseAddress! + at.index
                            // A journaled event's payload is stored once, in the journal (an empty blob here).
                            parameters.text(message.pointee.eventID)
                            parameters.text(message.pointee.topic)
                            parameters.blob(row == nil ? message.pointee.payload : [])
                            parameters.integer(Int64(message.pointee.qos))
                            if let row { parameters.integer(row) } else { parameters.null() }
                        }
                    }
                }
                // OR IGNORE only spares SQLite a statement journal: every value is bound, so no
                // row can be ignored, and the sequences below hold.
                guard inserted == chunk.count else {
                    throw SQLiteError(code: SQLITE_CONSTRAINT, message: "\(inserted) of \(chunk.count) outbox rows inserted", context: sql)
                }
                // One statement's AUTOINCREMENT rows are numbered consecutively.
                let first = connection.lastInsertRowID - Int64(chunk.count) + 1
                for (offset, at) in messages[chunk].enumerated() {
                    receipts[at.batch].outboxSequences[at.index] = first + Int64(offset)
                }
            }
            counts[destination] += messages.count
            // Past the cap the stream's oldest events go first, then the table's oldest rows.
            var excess = counts[destination] + streams[destination].count - max(options.outboxCap, 0)
            if excess > 0, let through = streams[destination].sequence(at: min(excess, streams[destination].count)) {
                let dropped = streams[destination].settle(through: through)
                excess -= dropped
                receipts[lastBatch].dropped[destination] += dropped
            }
            if excess > 0 {
                let dropped = try connection.run(
                    "DELETE FROM \(destination.table) WHERE seq IN (SELECT seq FROM \(destination.table) ORDER BY seq LIMIT ?)",
                    [.integer(Int64(excess))])
                counts[destination] -= dropped
                receipts[lastBatch].dropped[destination] += dropped
            }
        }

        for (index, batch) in batches.enumerated() {
            for destination in OutboxDestination.allCases {
                if let through = batch.settled[destination] { streams[destination].settle(through: through) }
                let sequences = batch.acknowledgements.lazy.filter { $0.destination == destination }.map(\.sequence)
                // Acknowledged sequences come mostly in runs: one range per run.
                for run in Self.runs(of: sequences) {
                    let removed = try connection.run(
                        "DELETE FROM \(destination.table) WHERE seq BETWEEN ? AND ?",
                        [.integer(run.lowerBound), .integer(run.upperBound)])
                    counts[destination] -= removed
                    receipts[index].acknowledged += removed
                }
            }
        }
        for (destination, before) in zip(OutboxDestination.allCases, initiallySettled) where streams[destination].settled != before {
            try connection.run(Self.settleStream, [.text(destination.rawValue), .integer(streams[destination].settled)])
        }
        return receipts
    }

    /// How one batch's outbox messages are queued: which event each one carries (if the
    /// batch journals it), whether it rides on that event's journal row, and what each event's
    /// row then holds (its destinations, topic and QoS: those of its first such message). A
    /// message gets a row of its own instead when its destination is marked already, when its
    /// topic or QoS differ, or when it names an event before one an earlier message for its
    /// destination rode on (a stream is in journal order).
    struct OutboxPlan {
        struct Stream {
            var outboxes: Int64
            /// The message whose topic and QoS the row holds.
            var message: Int
        }

        /// Per message: the index of the event whose payload it carries.
        var events: [Int?]
        /// Per message: whether it rides on that event's journal row (if the row is inserted).
        var ridesOnJournal: [Bool]
        /// Per event: its stream columns, if a message rides on it.
        var streams: [Stream?]

        init(_ batch: StoreBatch) {
            events = Array(repeating: nil, count: batch.outbox.count)
            ridesOnJournal = Array(repeating: false, count: batch.outbox.count)
            streams = Array(repeating: nil, count: batch.events.count)
            var finder = EventFinder(batch.events)
            var lastRide = (local: -1, remote: -1)  // event index, per destination
            batch.outbox.withUnsafeBufferPointer { messages in
                for index in messages.indices where messages[index].payloadInJournal {
                    let message = messages.baseAddress! + index
                    guard let event = finder.index(of: message.pointee.eventID) else { continue }
                    events[index] = event
                    let local = message.pointee.destination == .local
                    guard event > (local ? lastRide.local : lastRide.remote) else { continue }
                    let bit = message.pointee.destination.streamBit
                    if let stream = streams[event] {
                        let first = messages[stream.message]
                        guard stream.outboxes & bit == 0, first.topic == message.pointee.topic, first.qos == message.pointee.qos
                        else { continue }
                        streams[event]!.outboxes |= bit
                    } else {
                        streams[event] = Stream(outboxes: bit, message: index)
                    }
                    ridesOnJournal[index] = true
                    if local { lastRide.local = event } else { lastRide.remote = event }
                }
            }
        }
    }

    /// An element of one batch's events, messages or state changes.
    struct Position {
        var batch: Int
        var index: Int
    }

    /// Every element of batches holding `counts` elements, in order.
    static func positions(_ counts: [Int]) -> [Position] {
        var positions: [Position] = []
        positions.reserveCapacity(counts.reduce(0, +))
        for (batch, count) in counts.enumerated() {
            for index in 0..<count { positions.append(Position(batch: batch, index: index)) }
        }
        return positions
    }

    /// Finds a batch's event by id, for its outbox messages: they name their events in the
    /// events' order (each event's messages follow it), so the search resumes where the last
    /// one ended and is one comparison per message, of the same string storage.
    struct EventFinder {
        let events: [JournalEvent]
        private var next = 0

        init(_ events: [JournalEvent]) { self.events = events }

        /// The index of the event with `id`, if the batch has one.
        mutating func index(of id: String) -> Int? {
            guard let index = events[next...].firstIndex(where: { $0.id == id })
                ?? events[..<next].firstIndex(where: { $0.id == id }) else { return nil }
            next = index
            return index
        }
    }

    /// Writes each device's last state change of `batches`.
    private func writeStates(_ batches: [StoreBatch], on connection: SQLiteConnection) throws {
        let changes = Self.positions(batches.map(\.stateChanges.count))
        guard !changes.isEmpty else { return }
        var latest: [String: Int] = [:]  // device -> position of its last change
        latest.reserveCapacity(changes.count)
        for (position, at) in changes.enumerated() { latest[batches[at.batch].stateChanges[at.index].device] = position }
        var upserts: [Position] = []
        var deletions: [String] = []
        for (position, at) in changes.enumerated() {
            let change = batches[at.batch].stateChanges[at.index]
            guard latest[change.device] == position else { continue }
            if change.state == nil { deletions.append(change.device) } else { upserts.append(at) }
        }
        for chunk in MultiRowInsert.chunks(upserts.count) {
            try connection.run(Self.stateUpsert.sql(rows: chunk.count)) { parameters in
                for at in upserts[chunk] {
                    let change = batches[at.batch].stateChanges[at.index]
                    parameters.text(change.device)
                    parameters.blob(change.state!)
                }
            }
        }
        for device in deletions {
            try connection.run("DELETE FROM device_state WHERE device = ?", [.text(device)])
        }
    }

    /// The journal sequence one multi-row insert of events `ids` gave each of them, or nil for
    /// a duplicate. `inserted` rows were new: all of them usually, numbered consecutively up to
    /// the last insert rowid; otherwise they are the journal's `inserted` newest rows (a row
    /// skipped as a duplicate may still have used up a number), matched to the ids in order.
    private func insertedJournalSequences(inserted: Int, of ids: [String], on connection: SQLiteConnection) throws -> [Int64?] {
        if inserted == ids.count {
            let first = connection.lastInsertRowID - Int64(inserted) + 1
            return ids.indices.map { first + Int64($0) }
        }
        var newest: [String: [Int64]] = [:]  // id -> sequences, last to first
        if inserted > 0 {
            try connection.forEachRow("SELECT seq, id FROM journal ORDER BY seq DESC LIMIT ?", [.integer(Int64(inserted))]) { row in
                newest[row.string(1), default: []].append(row.int64(0))
            }
        }
        return ids.map { newest[$0]?.popLast() }
    }

    /// `sequences` sorted, without repeats, as ranges of consecutive numbers.
    static func runs(of sequences: some Sequence<Int64>) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for sequence in sequences.sorted() {
            if let last = runs.last, sequence <= last.upperBound + 1 {
                guard sequence > last.upperBound else { continue }  // a repeat
                runs[runs.count - 1] = last.lowerBound...sequence
            } else {
                runs.append(sequence...sequence)
            }
        }
        return runs
    }
}
