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
                try batches.map { batch in
                    try apply(batch, transaction: number, counts: &counts, journaled: &journaled, on: connection)
                }
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

    private func apply(_ batch: StoreBatch, transaction: Int, counts: inout OutboxCounts, journaled: inout Int,
                       on connection: SQLiteConnection) throws -> StoreReceipt {
        var receipt = StoreReceipt(transaction: transaction)
        for change in batch.stateChanges {
            if let state = change.state {
                try connection.run("""
                    INSERT INTO device_state (device, state) VALUES (?, ?)
                    ON CONFLICT (device) DO UPDATE SET state = excluded.state
                    """, [.text(change.device), .blob(state)])
            } else {
                try connection.run("DELETE FROM device_state WHERE device = ?", [.text(change.device)])
            }
        }
        // Events this batch journaled, by id: only their rows are known to hold an outbox
        // message's payload (a duplicate keeps the journal's earlier version).
        var journaledRows: [String: Int64] = [:]
        for event in batch.events {
            let inserted = try connection.run("""
                INSERT INTO journal (id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (fix_time, id) DO NOTHING
                """, [.text(event.id), .text(event.device), .text(event.trigger), .text(event.layer),
                      .text(event.fence), .text(event.type), .real(event.fixTime), .real(event.emittedTime),
                      .text(event.payload)])
            if inserted == 0 {
                receipt.duplicateEventIDs.append(event.id)
            } else {
                journaled += 1
                journaledRows[event.id] = connection.lastInsertRowID
            }
        }
        var touched: Set<OutboxDestination> = []
        for message in batch.outbox {
            // A journaled event's payload is stored once, in the journal (an empty blob here).
            let row = message.payloadInJournal ? journaledRows[message.eventID] : nil
            try connection.run(
                message.destination.insertSQL,
                [.text(message.eventID), .text(message.topic), .blob(row == nil ? message.payload : []),
                 .integer(Int64(message.qos)), row.map { .integer($0) } ?? .null])
            receipt.outboxSequences.append(connection.lastInsertRowID)
            counts[message.destination] += 1
            touched.insert(message.destination)
        }
        for destination in OutboxDestination.allCases where touched.contains(destination) {
            let excess = counts[destination] - max(options.outboxCap, 0)
            guard excess > 0 else { continue }
            let dropped = try connection.run(
                "DELETE FROM \(destination.table) WHERE seq IN (SELECT seq FROM \(destination.table) ORDER BY seq LIMIT ?)",
                [.integer(Int64(excess))])
            counts[destination] -= dropped
            receipt.dropped[destination] += dropped
        }
        for acknowledgement in batch.acknowledgements {
            let removed = try connection.run(acknowledgement.destination.deleteSQL, [.integer(acknowledgement.sequence)])
            counts[acknowledgement.destination] -= removed
            receipt.acknowledged += removed
        }
        return receipt
    }
}
