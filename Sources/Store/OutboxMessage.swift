internal import CSQLite

/// A publish waiting in an outbox.
public struct OutboxMessage: Sendable, Equatable {
    public var destination: OutboxDestination
    /// The id of the event it carries (several destinations may carry one event).
    public var eventID: String
    public var topic: String
    public var payload: [UInt8]
    /// MQTT QoS (0, 1 or 2).
    public var qos: Int
    /// The payload is the journal's payload of the event `eventID`, committed in the same
    /// batch: the message then rides on the event's journal row (its destination's stream,
    /// ``OutboxSource/journal``), or, when it cannot (see ``StoreReceipt/outbox``), its
    /// outbox row reads the payload from there. An event's JSON is written to disk once.
    public var payloadInJournal: Bool

    public init(destination: OutboxDestination, eventID: String, topic: String, payload: [UInt8], qos: Int,
                payloadInJournal: Bool = false) {
        self.destination = destination
        self.eventID = eventID
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.payloadInJournal = payloadInJournal
    }
}
