internal import CSQLite

/// A message read back from an outbox with its sequence number in that outbox.
public struct OutboxRow: Sendable, Equatable {
    /// Increases with every message queued in this destination's outbox; never reused, so an
    /// acknowledgement of an old sequence can never remove a newer message.
    public var sequence: Int64
    public var message: OutboxMessage

    public init(sequence: Int64, message: OutboxMessage) {
        self.sequence = sequence
        self.message = message
    }
}
