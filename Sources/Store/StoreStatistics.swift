internal import CSQLite

/// Counters since the store opened, for the status topic and benchmarks.
public struct StoreStatistics: Sendable, Equatable {
    /// Group-commit transactions committed.
    public var transactions = 0
    /// Batches committed (>= transactions: a transaction commits every batch pending).
    public var batches = 0
    /// Batches that failed (their submitters got the error).
    public var failedBatches = 0
    /// Events journaled.
    public var events = 0
    /// Messages dropped by the outbox cap, per outbox.
    public var dropped = OutboxCounts()
    /// Checkpoints the writer ran between transactions (the WAL reached
    /// `GatewayStore.Options.writerCheckpointPages`).
    public var writerCheckpoints = 0
    /// CPU seconds the store's thread spent committing (SQLite and the work around it).
    public var commitCPUSeconds = 0.0
    /// The last commit error, cleared by the next successful commit.
    public var lastError: SQLiteError?

    public init() {}
}
