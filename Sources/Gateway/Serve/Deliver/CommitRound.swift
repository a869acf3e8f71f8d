import Store

/// One group commit's decisions, apart from the database, the publishers and the spill file
/// (``EventCommitter`` carries them out): which rows it commits, and what follows from the
/// database's answer. A value, so that every failure path is a unit test.
///
/// `taken` is what the monitors handed over since the last commit, `retried` what earlier
/// refused commits left to try again (docs/configuration.md "Durability": events are published from memory
/// while the database refuses writes, and state, journal and outbox rows are retried).
struct CommitRound {
    var taken: StoreBatch
    var retried: StoreBatch
    /// Journal events kept for a retry (the newest; their outbox messages with them).
    var retryCap: Int

    /// What the committer does after the database answered, in order.
    enum Effect: Equatable {
        /// A status warning set or cleared (`key`, text).
        case warn(String, String)
        case resolve(String, String)
        /// The spill file holds nothing the database has not taken now: removed.
        case removeSpill
        /// The spill file keeps this refused batch (a kill before the database recovers then
        /// loses nothing: a start commits it first).
        case spill(StoreBatch)
        /// Events the database took again after publishing them from memory.
        case committedFromMemory(OutboxDestination, Set<String>)
        /// Rows just committed, numbered, to publish in order from memory.
        case deliverFresh(OutboxDestination, [OutboxRow])
        /// Messages the database refused, to publish from memory now.
        case publishVolatile(OutboxDestination, [OutboxMessage])
    }

    /// The batch to commit: the retried rows first, then the taken ones. A retried outbox
    /// message the broker acknowledged meanwhile (`delivered` from memory) gets no row; the
    /// others get rows now, so a kill after the fault cannot lose them (one acknowledged
    /// between this and the commit may then arrive twice, with the same id).
    func batch(delivered: [OutboxDestination: Set<String>]) -> StoreBatch {
        var batch = retried
        if !retried.outbox.isEmpty {
            batch.outbox.removeAll { delivered[$0.destination]?.contains($0.eventID) == true }
        }
        batch.append(contentsOf: StoreBatch(stateChanges: taken.stateChanges, events: taken.events, outbox: taken.outbox))
        batch.expectations += taken.expectations
        batch.trips += taken.trips
        return batch
    }

    /// The database took `batch` (``batch(delivered:)``): its events go out from the rows just
    /// numbered, the database warning clears, and once retried rows are in, the spill file goes.
    func committed(_ batch: StoreBatch, receipt: StoreReceipt) -> [Effect] {
        var effects: [Effect] = [.resolve("database", "the database accepts writes again")]
        if !retried.isEmpty {
            effects += [.removeSpill, .resolve("spill-cap", "the database took what the spill file had dropped")]
            for destination in OutboxDestination.allCases {
                let events = Set(retried.outbox.lazy.filter { $0.destination == destination }.map(\.eventID))
                effects.append(.committedFromMemory(destination, events))
            }
        }
        if receipt.dropped.local + receipt.dropped.remote > 0 {
            effects.append(.warn("outbox-cap", "the outbox reached outbox.cap: \(receipt.dropped.local) local and \(receipt.dropped.remote) remote events were dropped (oldest first)"))
        }
        for destination in OutboxDestination.allCases {
            let rows = receipt.outbox.filter { $0.message.destination == destination }
            if !rows.isEmpty { effects.append(.deliverFresh(destination, rows)) }
        }
        return effects
    }

    /// The status warning for a refused commit of the database at `database` (`spill`: the
    /// spill file's path, if there is one): one stable line (no SQL text, so a fault is logged
    /// once, not once per failing statement), saying whether the database is full.
    static func warning(for error: any Error, database: String, spill: String?) -> String {
        let cause: String
        if let error = error as? SQLiteError {
            cause = error.isFull
                ? "the database \(database) is full (SQLite error \(error.code): \(error.codeDescription))"
                : "the database \(database) refused a commit (SQLite error \(error.code): \(error.codeDescription): \(error.message))"
        } else {
            cause = "the database \(database) refused a commit (\(error))"
        }
        return cause + "; events are published from memory" + (spill.map { " and kept in \($0)" } ?? "")
            + ", monitor state and journal are retried every second"
    }

    /// The database refused `batch` with `warning` (the status line for its error): the new
    /// events go out from memory now and into the spill file (the retried ones are in both
    /// already; with nothing new, nothing is spilled), and the whole batch is tried again, its newest ``retryCap`` events with their
    /// outbox messages, every state change, expectation and trip change.
    func refused(_ batch: StoreBatch, warning: String) -> (effects: [Effect], retry: StoreBatch) {
        var effects: [Effect] = [.warn("database", warning)]
        for destination in OutboxDestination.allCases {
            let messages = taken.outbox.filter { $0.destination == destination }
            if !messages.isEmpty { effects.append(.publishVolatile(destination, messages)) }
        }
        // A retry with nothing new adds nothing to the file (once a second for as long as
        // the fault lasts, an empty line each time).
        if !taken.stateChanges.isEmpty || !taken.events.isEmpty || !taken.outbox.isEmpty {
            effects.append(.spill(StoreBatch(stateChanges: taken.stateChanges, events: taken.events, outbox: taken.outbox)))
        }
        var retry = StoreBatch()
        retry.events = Array(batch.events.suffix(max(retryCap, 0)))
        // The events dropped from the front no longer count before the states.
        let droppedEvents = batch.events.count - retry.events.count
        retry.stateChanges = batch.stateChanges.map {
            var change = $0
            change.eventsBefore = max(($0.eventsBefore ?? batch.events.count) - droppedEvents, 0)
            return change
        }
        if retry.events.count == batch.events.count {
            retry.outbox = batch.outbox
        } else {
            let kept = Set(retry.events.map(\.id))
            retry.outbox = batch.outbox.filter { kept.contains($0.eventID) }
        }
        retry.expectations = batch.expectations
        retry.trips = batch.trips
        retry.eventsMayRepeat = batch.eventsMayRepeat  // a spill file's, refused at the start
        return (effects, retry)
    }
}
