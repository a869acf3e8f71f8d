internal import CSQLite

/// What committing one ``StoreBatch`` did.
public struct StoreReceipt: Sendable, Equatable {
    /// The number of the transaction that committed the batch (shared by a commit group).
    public var transaction: Int
    /// The batch's outbox messages in the batch's order, each with its place: a message
    /// carrying an event journaled in the same batch rides on its journal row (the first one
    /// per destination, with the topic and QoS of the event's first), any other gets an outbox
    /// table row of its own.
    public var outbox: [OutboxRow]
    /// Messages removed from each outbox because it went past `outbox.cap` (oldest first).
    public var dropped: OutboxCounts
    /// Ids of the batch's events that were already journaled (kept once, not again).
    public var duplicateEventIDs: [String]
    /// How many acknowledgements removed a message from an outbox table (an unknown or already
    /// removed sequence removes nothing).
    public var acknowledged: Int

    public init(transaction: Int, outbox: [OutboxRow] = [],
                dropped: OutboxCounts = OutboxCounts(), duplicateEventIDs: [String] = [], acknowledged: Int = 0) {
        self.transaction = transaction
        self.outbox = outbox
        self.dropped = dropped
        self.duplicateEventIDs = duplicateEventIDs
        self.acknowledged = acknowledged
    }
}

/// A queued message with its place: its sequence number in the outbox table, or its event's
/// journal sequence (``OutboxSource``).
public struct OutboxRow: Sendable, Equatable {
    /// Increases with every message queued in that place; never reused, so an acknowledgement
    /// of an old sequence can never remove a newer message.
    public var sequence: Int64
    public var source: OutboxSource
    public var message: OutboxMessage

    public init(sequence: Int64, source: OutboxSource = .table, message: OutboxMessage) {
        self.sequence = sequence
        self.source = source
        self.message = message
    }
}
