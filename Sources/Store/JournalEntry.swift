internal import CSQLite

/// An event read back from the journal with its position in commit order.
public struct JournalEntry: Sendable, Equatable {
    /// Increases with every journaled event (commit order); never reused.
    public var sequence: Int64
    public var event: JournalEvent

    public init(sequence: Int64, event: JournalEvent) {
        self.sequence = sequence
        self.event = event
    }
}
