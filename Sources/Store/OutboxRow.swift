internal import CSQLite

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
