internal import CSQLite

/// Everything one submitter wants committed atomically: monitor state changes, the events they
/// caused, the outbox messages carrying those events, and outbox acknowledgements.
///
/// A batch is applied in this order: journal events, state changes, outbox messages (then the
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
    /// Trips opened, progressed, settled or removed, applied in order after the expectations
    /// (a trip's progress rides with the events it decided, in this batch).
    public var trips: [TripChange] = []
    /// Its events may be journaled already: a spill file's, which a run killed between the
    /// commit that took them and the file's removal leaves behind (docs/configuration.md
    /// "Durability"). The commit then skips those the journal's newest rows hold (same id and
    /// fix time) and names them in ``StoreReceipt/duplicateEventIDs``; other batches' events
    /// are journaled as they come (a monitor's events commit with its state, so it never
    /// decides one twice).
    public var eventsMayRepeat = false

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
            && expectations.isEmpty && trips.isEmpty
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

    /// Appends `other`'s state changes, events and outbox messages after this batch's, its
    /// states still counting the events before them (``DeviceStateChange/eventsBefore``).
    public mutating func append(contentsOf other: StoreBatch) {
        let offset = events.count
        // This batch's states count its events alone (nil said "all of them").
        for index in stateChanges.indices where stateChanges[index].eventsBefore == nil { stateChanges[index].eventsBefore = offset }
        stateChanges += other.stateChanges.map {
            var change = $0
            change.eventsBefore = offset + ($0.eventsBefore ?? other.events.count)
            return change
        }
        events += other.events
        outbox += other.outbox
    }

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

/// A change to one device's persisted monitor state: the new serialized state, or a deletion.
public struct DeviceStateChange: Sendable, Equatable {
    /// The device id.
    public var device: String
    /// The engine's serialized monitor state, or nil to delete the device's state.
    public var state: [UInt8]?
    /// How many of its batch's events came before it: the state takes those into account,
    /// and the journal's later events are folded into it (``GatewayStore/foldJournal(batch:transactions:)``).
    /// nil: all of them.
    public var eventsBefore: Int?

    public init(device: String, state: [UInt8]?, eventsBefore: Int? = nil) {
        self.device = device
        self.state = state
        self.eventsBefore = eventsBefore
    }
}

/// One event as the journal keeps it: the event JSON exactly as published on MQTT (`payload`),
/// its id and times, and the fields it is queried by.
///
/// The journal stores only id, times and payload: device, trigger, layer, fence and type are
/// read back from the payload (`device`, `trigger`, `fence.layer`, `fence.id`, `type`, as the
/// MQTT event schema has them), so they must agree with it.
public struct JournalEvent: Sendable, Equatable {
    /// The event's deterministic id (unique in the journal).
    public var id: String
    public var device: String
    public var trigger: String
    /// The fence layer name.
    public var layer: String
    /// The fence id within its layer.
    public var fence: String
    /// `enter`, `exit` or `dwell`.
    public var type: String
    /// The fix time that decided the event, in seconds since 1970 (UTC).
    public var fixTime: Double
    /// When the gateway emitted the event, in seconds since 1970 (UTC); retention counts by it.
    public var emittedTime: Double
    /// The event JSON (the MQTT event schema), one line.
    public var payload: String

    public init(id: String, device: String, trigger: String, layer: String, fence: String, type: String,
                fixTime: Double, emittedTime: Double, payload: String) {
        self.id = id
        self.device = device
        self.trigger = trigger
        self.layer = layer
        self.fence = fence
        self.type = type
        self.fixTime = fixTime
        self.emittedTime = emittedTime
        self.payload = payload
    }
}

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

/// A broker's successful acknowledgement of an outbox message: it may leave the outbox.
public struct OutboxAcknowledgement: Sendable, Equatable {
    public var destination: OutboxDestination
    public var sequence: Int64

    public init(destination: OutboxDestination, sequence: Int64) {
        self.destination = destination
        self.sequence = sequence
    }
}
