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
            pending.append(PendingBatch(batch: batch, continuation: continuation))
            if !commitScheduled {
                commitScheduled = true
                // Enqueued behind every job already waiting on the store's queue, so the
                // submissions that arrived during the previous commit join this one.
                Task { self.commitPending() }
            }
        }
    }

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
            for item in group { item.continuation.resume(throwing: StoreError.closed(path: path)) }
            return
        }
        do {
            let receipts = try commit(group.map(\.batch), on: connection)
            for (item, receipt) in zip(group, receipts) { item.continuation.resume(returning: receipt) }
            checkpointer?.request()
            return
        } catch where group.count == 1 {
            statistics.failedBatches += 1
            group[0].continuation.resume(throwing: error)
            return
        } catch {}
        for item in group {
            do {
                item.continuation.resume(returning: try commit([item.batch], on: connection)[0])
            } catch {
                statistics.failedBatches += 1
                item.continuation.resume(throwing: error)
            }
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
        var journaled = 0
        do {
            let receipts = try connection.transaction {
                try apply(batches, transaction: number, counts: &counts, journaled: &journaled, on: connection)
            }
            queued = counts
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

    static let stateUpsert = MultiRowInsert(
        head: "INSERT INTO device_state (device, state)", row: "(?, ?)",
        tail: "ON CONFLICT (device) DO UPDATE SET state = excluded.state")
    static let journalInsert = MultiRowInsert(
        head: "INSERT INTO journal (id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload)",
        row: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", tail: "ON CONFLICT (fix_time, id) DO NOTHING")
    static let outboxInserts: [OutboxDestination: MultiRowInsert] = Dictionary(uniqueKeysWithValues: OutboxDestination.allCases.map {
        ($0, MultiRowInsert(head: "INSERT INTO \($0.table) (event_id, topic, payload, qos, journal_seq)", row: "(?, ?, ?, ?, ?)"))
    })

    /// Applies `batches` as if one after the other (state changes, journal events, outbox
    /// messages and the outbox cap, acknowledgements), with the rows of all of them inserted
    /// together in multi-row statements. A device's state changes collapse to its last one.
    /// Messages the cap drops are counted in the receipt of the last batch that queued a
    /// message for that outbox.
    private func apply(_ batches: [StoreBatch], transaction: Int, counts: inout OutboxCounts, journaled: inout Int,
                       on connection: SQLiteConnection) throws -> [StoreReceipt] {
        var receipts = batches.map {
            StoreReceipt(transaction: transaction, outboxSequences: Array(repeating: 0, count: $0.outbox.count))
        }
        try writeStates(batches.flatMap(\.stateChanges), on: connection)

        // Journal rows by event id, per batch: only a batch's own newly journaled events are
        // known to hold its outbox messages' payloads (a duplicate keeps the journal's earlier version).
        var journaledRows = Array(repeating: [String: Int64](), count: batches.count)
        let events = batches.indices.flatMap { index in batches[index].events.map { (batch: index, event: $0) } }
        for chunk in MultiRowInsert.chunks(events.count) {
            let inserted = try connection.run(Self.journalInsert.sql(rows: chunk.count)) { parameters in
                for (_, event) in events[chunk] {
                    parameters.text(event.id)
                    parameters.text(event.device)
                    parameters.text(event.trigger)
                    parameters.text(event.layer)
                    parameters.text(event.fence)
                    parameters.text(event.type)
                    parameters.real(event.fixTime)
                    parameters.real(event.emittedTime)
                    parameters.text(event.payload)
                }
            }
            let sequences = try insertedJournalSequences(inserted: inserted, of: events[chunk].map(\.event.id), on: connection)
            for ((batch, event), sequence) in zip(events[chunk], sequences) {
                if let sequence {
                    journaled += 1
                    journaledRows[batch][event.id] = sequence
                } else {
                    receipts[batch].duplicateEventIDs.append(event.id)
                }
            }
        }

        for destination in OutboxDestination.allCases {
            let messages = batches.indices.flatMap { index in
                batches[index].outbox.indices.lazy.filter { batches[index].outbox[$0].destination == destination }
                    .map { (batch: index, position: $0) }
            }
            guard let lastBatch = messages.last?.batch else { continue }
            let insert = Self.outboxInserts[destination]!
            for chunk in MultiRowInsert.chunks(messages.count) {
                try connection.run(insert.sql(rows: chunk.count)) { parameters in
                    for (batch, position) in messages[chunk] {
                        let message = batches[batch].outbox[position]
                        // A journaled event's payload is stored once, in the journal (an empty blob here).
                        let row = message.payloadInJournal ? journaledRows[batch][message.eventID] : nil
                        parameters.text(message.eventID)
                        parameters.text(message.topic)
                        parameters.blob(row == nil ? message.payload : [])
                        parameters.integer(Int64(message.qos))
                        if let row { parameters.integer(row) } else { parameters.null() }
                    }
                }
                // One statement's AUTOINCREMENT rows are numbered consecutively.
                let first = connection.lastInsertRowID - Int64(chunk.count) + 1
                for (offset, (batch, position)) in messages[chunk].enumerated() {
                    receipts[batch].outboxSequences[position] = first + Int64(offset)
                }
            }
            counts[destination] += messages.count
            let excess = counts[destination] - max(options.outboxCap, 0)
            if excess > 0 {
                let dropped = try connection.run(
                    "DELETE FROM \(destination.table) WHERE seq IN (SELECT seq FROM \(destination.table) ORDER BY seq LIMIT ?)",
                    [.integer(Int64(excess))])
                counts[destination] -= dropped
                receipts[lastBatch].dropped[destination] += dropped
            }
        }

        for (index, batch) in batches.enumerated() where !batch.acknowledgements.isEmpty {
            for destination in OutboxDestination.allCases {
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
        return receipts
    }

    /// Writes each device's last state change of `changes`.
    private func writeStates(_ changes: [DeviceStateChange], on connection: SQLiteConnection) throws {
        guard !changes.isEmpty else { return }
        var latest: [String: Int] = [:]  // device -> index of its last change
        latest.reserveCapacity(changes.count)
        for (index, change) in changes.enumerated() { latest[change.device] = index }
        let upserts = changes.indices.filter { latest[changes[$0].device] == $0 && changes[$0].state != nil }
        for chunk in MultiRowInsert.chunks(upserts.count) {
            try connection.run(Self.stateUpsert.sql(rows: chunk.count)) { parameters in
                for index in upserts[chunk] {
                    parameters.text(changes[index].device)
                    parameters.blob(changes[index].state!)
                }
            }
        }
        for (index, change) in changes.enumerated() where latest[change.device] == index && change.state == nil {
            try connection.run("DELETE FROM device_state WHERE device = ?", [.text(change.device)])
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
        for sequence in Set(sequences).sorted() {
            if let last = runs.last, last.upperBound + 1 == sequence {
                runs[runs.count - 1] = last.lowerBound...sequence
            } else {
                runs.append(sequence...sequence)
            }
        }
        return runs
    }
}
