internal import CSQLite

/// Counters since the store opened, for the status topic and benchmarks.
public struct StoreStatistics: Sendable, Equatable {
    /// Transactions committed (one per batch).
    public var transactions = 0
    /// Batches that failed (their submitters got the error).
    public var failedBatches = 0
    /// Events journaled.
    public var events = 0
    /// Messages dropped by the outbox cap, per outbox.
    public var dropped = OutboxCounts()
    /// Checkpoints the writer ran between transactions (the WAL reached
    /// `GatewayStore.writerCheckpointPages`).
    public var writerCheckpoints = 0
    /// Folds of the journal's events into `device_state` (``GatewayStore/foldJournal(batch:transactions:)``).
    public var folds = 0
    /// The last commit error, cleared by the next successful commit.
    public var lastError: SQLiteError?

    public init() {}
}
