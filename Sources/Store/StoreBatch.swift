internal import CSQLite

/// Everything one submitter wants committed atomically: monitor state changes, the events they
/// caused, the outbox messages carrying those events, and outbox acknowledgements.
///
/// A batch is applied in this order: state changes, journal events, outbox messages (then the
/// outbox cap), acknowledgements and settled streams. It commits whole or not at all, usually
/// together with the batches of other submitters in one transaction (group commit).
public struct StoreBatch: Sendable, Equatable {
    public var stateChanges: [DeviceStateChange]
    public var events: [JournalEvent]
    public var outbox: [OutboxMessage]
    /// (destination, sequence) of outbox table messages the broker acknowledged.
    public var acknowledgements: [OutboxAcknowledgement]
    /// Per destination, the journal sequence up to which its stream's messages are settled.
    public var settled: [OutboxDestination: Int64]
    /// Expected arrivals opened, settled (with their result's outbox message in ``outbox``)
    /// or removed, applied in order after the state changes.
    public var expectations: [ExpectationChange] = []

    public init(stateChanges: [DeviceStateChange] = [], events: [JournalEvent] = [],
                outbox: [OutboxMessage] = [], acknowledgements: [OutboxAcknowledgement] = [],
                settled: [OutboxDestination: Int64] = [:]) {
        self.stateChanges = stateChanges
        self.events = events
        self.outbox = outbox
        self.acknowledgements = acknowledgements
        self.settled = settled
    }

    /// Whether there is nothing to write.
    public var isEmpty: Bool {
        stateChanges.isEmpty && events.isEmpty && outbox.isEmpty && acknowledgements.isEmpty && settled.isEmpty
            && expectations.isEmpty
    }

    /// Stores `state` as `device`'s monitor state.
    public mutating func upsertState(device: String, state: [UInt8]) {
        stateChanges.append(DeviceStateChange(device: device, state: state))
    }

    /// Removes `device`'s monitor state (a forgotten device).
    public mutating func deleteState(device: String) {
        stateChanges.append(DeviceStateChange(device: device, state: nil))
    }

    /// Journals `event`.
    public mutating func append(_ event: JournalEvent) { events.append(event) }

    /// Queues `message` in its destination's outbox.
    public mutating func enqueue(_ message: OutboxMessage) { outbox.append(message) }

    /// Removes message `sequence` from `destination`'s outbox table.
    public mutating func acknowledge(_ destination: OutboxDestination, sequence: Int64) {
        acknowledgements.append(OutboxAcknowledgement(destination: destination, sequence: sequence))
    }

    /// Settles `destination`'s stream messages up to journal sequence `sequence` (every one of
    /// them was acknowledged or moved to the outbox table): they no longer wait.
    public mutating func settle(_ destination: OutboxDestination, through sequence: Int64) {
        settled[destination] = max(settled[destination] ?? sequence, sequence)
    }
}
