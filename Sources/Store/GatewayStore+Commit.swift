internal import CSQLite

extension GatewayStore {
    /// Commits `batch` in one transaction, on the store's queue, and returns what it did. Throws
    /// the ``SQLiteError`` of a failed commit (disk full, I/O error): the batch is then not
    /// stored at all. From outside the store it is `try await store.commit(batch)`, which runs
    /// it on the store's queue. The gateway's group commit is ``EventCommitter``'s (in `serve`): it takes
    /// everything pending into one batch and commits it here.
    public func commit(_ batch: StoreBatch) throws -> StoreReceipt {
        executor.checkIsolated()  // blocking SQLite work runs on the store's queue, never the pool
        if options.readOnly { throw StoreError.readOnly(path: path) }
        let connection = try openConnection()
        do {
            let receipt = try commit(batch, on: connection)
            checkpointer?.request(frames: connection.framesInWAL)
            queueWriterCheckpointIfDue(connection)
            queueFoldIfDue()
            return receipt
        } catch {
            statistics.failedBatches += 1
            throw error
        }
    }

    /// Runs `body` on the store's queue, isolated to the store, after the jobs already queued
    /// there; no task is created, so no thread of the cooperative pool is woken.
    public nonisolated func perform(_ body: @escaping @Sendable (isolated GatewayStore) -> Void) {
        executor.async { self.assumeIsolated { body($0) } }
    }

    /// Runs `body` isolated to the store: right here, on the caller's thread, when no job is
    /// queued or running on the store's queue (no thread is woken at all), else queued behind
    /// those jobs as ``perform(_:)`` does, so the caller never waits for them. The decision is
    /// one atomic claim of the store's executor (``StoreExecutor/runHereIfIdle(_:)``): a job
    /// queued after it waits for `body`, not the caller for the job. Returns whether it ran here.
    @discardableResult
    public nonisolated func performHereIfIdle(_ body: @escaping @Sendable (isolated GatewayStore) -> Void) -> Bool {
        if executor.runHereIfIdle({ self.assumeIsolated { body($0) } }) { return true }
        perform(body)
        return false
    }

    /// Removes acknowledged messages from `destination`'s outbox; returns how many were there.
    @discardableResult
    public func acknowledge(_ destination: OutboxDestination, sequences: [Int64]) throws -> Int {
        try commit(StoreBatch(acknowledgements: sequences.map {
            OutboxAcknowledgement(destination: destination, sequence: $0)
        })).acknowledged
    }

    /// Once the WAL holds ``writerCheckpointPages``, queues a checkpoint on the
    /// writer's connection behind the jobs already queued: between two transactions it copies
    /// every frame (those beside the writer never catch up under continuous writes), so the next
    /// transaction starts the WAL again. A job of its own, so that its syncs never hold up a
    /// commit's caller (the network thread commits when the store's queue is idle).
    private func queueWriterCheckpointIfDue(_ connection: SQLiteConnection) {
        guard !writerCheckpointQueued, connection.framesInWAL >= writerCheckpointPages else { return }
        writerCheckpointQueued = true
        perform { store in
            store.writerCheckpointQueued = false
            // Failures (SQLITE_BUSY, I/O) leave the frames for the next one.
            guard (try? store.connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")) != nil else { return }
            store.statistics.writerCheckpoints += 1
        }
    }

    /// One transaction applying `batch`; counters change only if it commits.
    private func commit(_ batch: StoreBatch, on connection: SQLiteConnection) throws -> StoreReceipt {
        let number = statistics.transactions + 1
        var counts = queued
        var streams = self.streams
        var nextSequence = nextJournalSequence
        var journaled = 0
        do {
            let receipt = try connection.transaction {
                try apply(batch, transaction: number, counts: &counts, streams: &streams, nextSequence: &nextSequence,
                          journaled: &journaled, on: connection)
            }
            queued = counts
            self.streams = streams
            nextJournalSequence = nextSequence
            statistics.transactions = number
            statistics.events += journaled
            statistics.dropped.local += receipt.dropped.local
            statistics.dropped.remote += receipt.dropped.remote
            statistics.lastError = nil
            return receipt
        } catch {
            statistics.lastError = error as? SQLiteError
            throw error
        }
    }

    /// Without a statement journal, like the inserts below (schema 5 lets `state` be NULL).
    static let stateUpsert = MultiRowInsert(
        head: "INSERT OR IGNORE INTO device_state (device, state, journal_seq)", row: "(?, ?, ?)",
        tail: "ON CONFLICT (device) DO UPDATE SET state = excluded.state, journal_seq = excluded.journal_seq")
    /// `OR IGNORE` leaves no constraint that could abort the statement halfway (a NOT NULL
    /// check's default is ABORT): SQLite then keeps no statement journal, the copy of every page
    /// a multi-row statement changes, taken so that the statement alone can be undone (8 % of
    /// the commit's instructions). Every value is bound and each row's `seq` is a new one
    /// (``nextJournalSequence`` on), so no row can be ignored; a failed statement fails its
    /// whole transaction here anyway. The outbox inserts use it for that reason too.
    static let journalInsert = MultiRowInsert(
        head: "INSERT OR IGNORE INTO journal (seq, id, fix_time, emitted_time, payload, outboxes, topic, qos)",
        row: "(?, ?, ?, ?, ?, ?, ?, ?)")
    static let outboxInserts: [OutboxDestination: MultiRowInsert] = Dictionary(uniqueKeysWithValues: OutboxDestination.allCases.map {
        ($0, MultiRowInsert(head: "INSERT OR IGNORE INTO \($0.table) (event_id, topic, payload, qos, journal_seq)", row: "(?, ?, ?, ?, ?)"))
    })
    static let settleStream = "INSERT INTO outbox_stream (destination, settled) VALUES (?, ?) ON CONFLICT (destination) DO UPDATE SET settled = excluded.settled"

    /// Applies `batch`: state changes, journal events, outbox messages and the outbox cap,
    /// acknowledgements and settled streams. A device's state changes collapse to its last one.
    ///
    /// Rows are bound straight from the batch (by index, never copying an event or a message):
    /// this loop runs for every event the gateway commits.
    private func apply(_ batch: StoreBatch, transaction: Int, counts: inout OutboxCounts, streams: inout OutboxStreams,
                       nextSequence: inout Int64, journaled: inout Int, on connection: SQLiteConnection) throws -> StoreReceipt {
        var receipt = StoreReceipt(transaction: transaction, outbox: batch.outbox.map { OutboxRow(sequence: 0, message: $0) })
        let newestBefore = nextSequence - 1
        if !batch.expectations.isEmpty { try writeExpectations(batch.expectations, on: connection) }
        if !batch.trips.isEmpty { try writeTrips(batch.trips, on: connection) }
        let plan = OutboxPlan(batch)
        let initiallySettled = OutboxDestination.allCases.map { streams[$0].settled }

        // The journal sequence of each event; nil for a duplicate (only newly journaled events
        // are known to hold their outbox messages' payloads: a duplicate keeps the journal's
        // earlier version, and its messages get outbox rows of their own).
        var journalSequences = [Int64?](repeating: nil, count: batch.events.count)
        var journaling = Array(batch.events.indices)
        if batch.eventsMayRepeat {
            let repeated = try repeatedEvents(batch.events, on: connection)
            journaling.removeAll { repeated.contains($0) }
            receipt.duplicateEventIDs = repeated.sorted().map { batch.events[$0].id }
        }
        for chunk in MultiRowInsert.chunks(journaling.count) {
            let first = nextSequence
            let sql = Self.journalInsert.sql(rows: chunk.count)
            let inserted = try connection.run(sql) { parameters in
                batch.events.withUnsafeBufferPointer { events in
                    for (offset, index) in journaling[chunk].enumerated() {
                        let event = events.baseAddress! + index
                        parameters.integer(first + Int64(offset))
                        parameters.text(event.pointee.id)
                        parameters.real(event.pointee.fixTime)
                        parameters.real(event.pointee.emittedTime)
                        parameters.text(event.pointee.payload)
                        if let stream = plan.streams[index] {
                            batch.outbox.withUnsafeBufferPointer { messages in
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
            guard inserted == chunk.count else {
                throw SQLiteError(code: SQLITE_CONSTRAINT, message: "\(inserted) of \(chunk.count) journal rows inserted", context: sql)
            }
            for (offset, index) in journaling[chunk].enumerated() {
                journalSequences[index] = first + Int64(offset)
            }
            journaled += chunk.count
            nextSequence += Int64(chunk.count)
        }

        try writeStates(batch.stateChanges, journalSequences: journalSequences, newestBefore: newestBefore, on: connection)

        for destination in OutboxDestination.allCases {
            // Messages riding on their journal rows join the stream; the others get rows.
            var messages: [Int] = []
            var rows: [Int64?] = []  // the journal row holding each one's payload, if any
            var queues = false
            for index in batch.outbox.indices where batch.outbox[index].destination == destination {
                queues = true
                let row = plan.events[index].flatMap { journalSequences[$0] }
                if let row, plan.ridesOnJournal[index] {
                    receipt.outbox[index].source = .journal
                    receipt.outbox[index].sequence = row
                    streams[destination].append(row)
                } else {
                    messages.append(index)
                    rows.append(row)
                }
            }
            guard queues else { continue }
            let insert = Self.outboxInserts[destination]!
            for chunk in MultiRowInsert.chunks(messages.count) {
                let sql = insert.sql(rows: chunk.count)
                let inserted = try connection.run(sql) { parameters in
                    batch.outbox.withUnsafeBufferPointer { outbox in
                        for (index, row) in zip(messages[chunk], rows[chunk]) {
                            let message = outbox.baseAddress! + index
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
                for (offset, index) in messages[chunk].enumerated() {
                    receipt.outbox[index].sequence = first + Int64(offset)
                }
            }
            counts[destination] += messages.count
            // Past the cap the stream's oldest events go first, then the table's oldest rows.
            var excess = counts[destination] + streams[destination].count - max(options.outboxCap, 0)
            if excess > 0, let through = streams[destination].sequence(at: min(excess, streams[destination].count)) {
                let dropped = streams[destination].settle(through: through)
                excess -= dropped
                receipt.dropped[destination] += dropped
            }
            if excess > 0 {
                let dropped = try connection.run(
                    "DELETE FROM \(destination.table) WHERE seq IN (SELECT seq FROM \(destination.table) ORDER BY seq LIMIT ?)",
                    [.integer(Int64(excess))])
                counts[destination] -= dropped
                receipt.dropped[destination] += dropped
            }
        }

        for destination in OutboxDestination.allCases {
            if let through = batch.settled[destination] { streams[destination].settle(through: through) }
            let sequences = batch.acknowledgements.lazy.filter { $0.destination == destination }.map(\.sequence)
            // Acknowledged sequences come mostly in runs: one range per run.
            for run in Self.runs(of: sequences) {
                let removed = try connection.run(
                    "DELETE FROM \(destination.table) WHERE seq BETWEEN ? AND ?",
                    [.integer(run.lowerBound), .integer(run.upperBound)])
                counts[destination] -= removed
                receipt.acknowledged += removed
            }
        }
        for (destination, before) in zip(OutboxDestination.allCases, initiallySettled) where streams[destination].settled != before {
            try connection.run(Self.settleStream, [.text(destination.rawValue), .integer(streams[destination].settled)])
        }
        return receipt
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

    /// Writes each device's last state change.
    /// `journalSequences`: the sequence each of the batch's events got (nil: a duplicate);
    /// `newestBefore`: the newest given before the batch. A state's `journal_seq` is the
    /// newest of those before it (``DeviceStateChange/eventsBefore``): the fold applies only
    /// later events to it.
    private func writeStates(_ changes: [DeviceStateChange], journalSequences: [Int64?], newestBefore: Int64,
                             on connection: SQLiteConnection) throws {
        guard !changes.isEmpty else { return }
        var latest: [String: Int] = [:]  // device -> index of its last change
        latest.reserveCapacity(changes.count)
        for (index, change) in changes.enumerated() { latest[change.device] = index }
        var upserts: [Int] = []
        var deletions: [String] = []
        for (index, change) in changes.enumerated() where latest[change.device] == index {
            if change.state == nil { deletions.append(change.device) } else { upserts.append(index) }
        }
        // newest[i]: the newest sequence given to the first i events (one pass, not one per state).
        var newest = [newestBefore]
        newest.reserveCapacity(journalSequences.count + 1)
        for sequence in journalSequences { newest.append(sequence ?? newest[newest.count - 1]) }
        for chunk in MultiRowInsert.chunks(upserts.count) {
            try connection.run(Self.stateUpsert.sql(rows: chunk.count)) { parameters in
                for index in upserts[chunk] {
                    parameters.text(changes[index].device)
                    parameters.blob(changes[index].state!)
                    parameters.integer(newest[min(max(changes[index].eventsBefore ?? journalSequences.count, 0), journalSequences.count)])
                }
            }
        }
        for device in deletions {
            try connection.run("DELETE FROM device_state WHERE device = ?", [.text(device)])
        }
    }

    /// The indexes of `events` (a batch that may repeat, ``StoreBatch/eventsMayRepeat``) that
    /// are journaled already, or repeat an earlier one of `events`: the same id and fix time.
    ///
    /// Only the journal's newest rows are read, from the first sequence emitted at or after
    /// ``emittedDisorder`` before the earliest of `events`: a journaled copy of one of them
    /// holds its emitted time, and emitted times follow commit order but for a wall clock set
    /// back (by at most ``emittedDisorder``, ``firstSequence(emittedFrom:on:)``).
    private func repeatedEvents(_ events: [JournalEvent], on connection: SQLiteConnection) throws -> Set<Int> {
        struct Key: Hashable {
            var id: String
            var fixTime: Double
        }
        var first: [Key: Int] = [:]
        var repeated = Set<Int>()
        for (index, event) in events.enumerated() {
            let key = Key(id: event.id, fixTime: event.fixTime)
            if first[key] == nil { first[key] = index } else { repeated.insert(index) }
        }
        guard let earliest = events.lazy.map(\.emittedTime).min(),
              let start = try Self.firstSequence(emittedFrom: earliest - Self.emittedDisorder, on: connection) else { return repeated }
        try connection.forEachRow("SELECT id, fix_time FROM journal WHERE seq >= ?", [.integer(start)]) { row in
            if let index = first[Key(id: row.string(0), fixTime: row.double(1))] { repeated.insert(index) }
        }
        return repeated
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
