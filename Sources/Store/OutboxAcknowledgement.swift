/// A broker's successful acknowledgement of an outbox message: it may leave the outbox.
public struct OutboxAcknowledgement: Sendable, Equatable {
    public var destination: OutboxDestination
    public var sequence: Int64

    public init(destination: OutboxDestination, sequence: Int64) {
        self.destination = destination
        self.sequence = sequence
    }
}
