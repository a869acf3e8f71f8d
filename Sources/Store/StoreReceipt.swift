internal import CSQLite

/// What committing one ``StoreBatch`` did.
public struct StoreReceipt: Sendable, Equatable {
    /// The number of the transaction that committed the batch (shared by a commit group).
    public var transaction: Int
    /// The sequence given to each of the batch's outbox messages, in the batch's order.
    public var outboxSequences: [Int64]
    /// Messages removed from each outbox because it went past `outbox.cap` (oldest first).
    public var dropped: OutboxCounts
    /// Ids of the batch's events that were already journaled (kept once, not again).
    public var duplicateEventIDs: [String]
    /// How many acknowledgements removed a message (an unknown or already removed sequence
    /// removes nothing).
    public var acknowledged: Int

    public init(transaction: Int, outboxSequences: [Int64] = [], dropped: OutboxCounts = OutboxCounts(),
                duplicateEventIDs: [String] = [], acknowledged: Int = 0) {
        self.transaction = transaction
        self.outboxSequences = outboxSequences
        self.dropped = dropped
        self.duplicateEventIDs = duplicateEventIDs
        self.acknowledged = acknowledged
    }
}
