import GeotriggerCore
import Synchronization

/// The counters of the status topic (docs/topics-and-payloads.md "Gateway status": `counters`). Thread-safe and cheap
/// to bump from the ingest path.
public final class GatewayCounters: Sendable {
    public let received = Atomic<Int>(0)
    public let accepted = Atomic<Int>(0)
    public let events = Atomic<Int>(0)
    public let acked = Atomic<Int>(0)
    /// Events parked because no broker will take them (too large, say): kept in the journal only.
    public let undeliverable = Atomic<Int>(0)
    /// Events decided outside their trigger's `schedule`: neither published nor journaled.
    public let outsideSchedule = Atomic<Int>(0)
    /// Events past `input.maxEventsPerDevice` in a minute of their device's fix time (or 10 x in a minute of the gateway's clock): neither
    /// published nor journaled (the update that decided them still changed the device's state).
    public let eventRateLimited = Atomic<Int>(0)
    /// Feed messages taken on the network thread and their approximate size on the wire (not
    /// `received`, which also counts gpsd fixes and control messages).
    public let feedMessages = Atomic<Int>(0)
    public let feedBytes = Atomic<Int>(0)
    /// Open trips by state (`pending`, `onRoute`, `offRoute`; docs/trips.md): moved by the
    /// shards as their trips start, change state and end.
    public let tripsPending = Atomic<Int>(0)
    public let tripsOnRoute = Atomic<Int>(0)
    public let tripsOffRoute = Atomic<Int>(0)
    private let dropped = LeveledMutex<[DropReason: Int]>([:], level: .counters)
    /// Events per trigger and type (the metrics file's `geotrigger_events_total`), counted
    /// per commit, not per update.
    private let eventsByKind = LeveledMutex<[EventKind: Int]>([:], level: .counters)
    /// The OwnTracks phones' regions and transitions (docs/phones.md).
    private let phones = LeveledMutex<PhoneCounts?>(nil, level: .counters)

    public init() {}

    /// A trip left state `from` (nil: it is new) for `to` (nil: it ended); only open states count.
    public func countTrip(from: TripState?, to: TripState?) {
        guard from != to else { return }
        if let from { addTrips(-1, in: from) }
        if let to { addTrips(1, in: to) }
    }

    private func addTrips(_ change: Int, in state: TripState) {
        switch state {
        case .pending: tripsPending.add(change, ordering: .relaxed)
        case .onRoute: tripsOnRoute.add(change, ordering: .relaxed)
        case .offRoute: tripsOffRoute.add(change, ordering: .relaxed)
        case .arrived, .missed, .cancelled: break
        }
    }

    /// `counters.phones`: per trigger with `phones` on, the `setWaypoints` pushes and the
    /// phones' transitions that agreed or disagreed with the gateway; and the transitions no
    /// trigger could judge: for a region the gateway never gave (`unknownRegion`), or of a
    /// device it holds no monitor for (`unknownDevice`); and the pushes whose triggers together
    /// gave more than 100 regions, cut to the nearest 100 (`regionsCapped`).
    public struct PhoneCounts: Sendable, Equatable {
        public struct Tally: Sendable, Equatable {
            public var pushes = 0
            public var agree = 0
            public var disagree = 0

            public init(pushes: Int = 0, agree: Int = 0, disagree: Int = 0) {
                (self.pushes, self.agree, self.disagree) = (pushes, agree, disagree)
            }
        }

        public init() {}

        public var triggers: [String: Tally] = [:]
        public var unknownRegion = 0
        public var unknownDevice = 0
        public var regionsCapped = 0
    }

    /// Shows `counters.phones` with a zero tally for each of `triggers` (those with `phones`
    /// on; a reload may add some); nothing when there is none and nothing was counted.
    public func phoneTriggers(_ triggers: [String]) {
        phones.withLock { counts in
            if counts == nil && triggers.isEmpty { return }
            var c = counts ?? PhoneCounts()
            for trigger in triggers where c.triggers[trigger] == nil { c.triggers[trigger] = PhoneCounts.Tally() }
            counts = c
        }
    }

    /// Counts under one lock.
    public func countPhones(_ body: (inout PhoneCounts) -> Void) {
        phones.withLock { counts in
            var c = counts ?? PhoneCounts()
            body(&c)
            counts = c
        }
    }

    /// What an event is counted by in the metrics: its trigger and its type (`enter`, `exit`,
    /// `dwell`); never its device.
    public struct EventKind: Hashable, Sendable {
        public var trigger: String
        public var type: String

        public init(trigger: String, type: String) {
            self.trigger = trigger
            self.type = type
        }
    }

    /// The counters of one moment, read once per status tick for the status payload and the
    /// metrics file alike.
    public struct Values: Sendable {
        public var received = 0
        public var accepted = 0
        /// Every reason, zeros included.
        public var dropped: [DropReason: Int] = [:]
        public var events = 0
        public var acked = 0
        public var undeliverable = 0
        public var outsideSchedule = 0
        public var eventRateLimited = 0
        /// Only the kinds seen so far.
        public var eventsByKind: [EventKind: Int] = [:]
        /// nil when no trigger has `phones` on.
        public var phones: PhoneCounts?
        /// Open trips by state.
        public var trips = Trips()
    }

    /// `counters.trips`: the open trips, by state.
    public struct Trips: Sendable, Equatable {
        public var pending = 0
        public var onRoute = 0
        public var offRoute = 0
        public var open: Int { pending + onRoute + offRoute }
    }

    /// Counts one event per element of `kinds` (its trigger and type), under one lock for a
    /// whole commit; a key is stored only the first time it is seen.
    public func countEvents<Kinds: Sequence>(_ kinds: Kinds) where Kinds.Element == (trigger: String, type: String) {
        eventsByKind.withLock { counts in
            for kind in kinds { counts[EventKind(trigger: kind.trigger, type: kind.type), default: 0] += 1 }
        }
    }

    /// The counters now.
    public func values() -> Values {
        var v = Values()
        v.received = received.load(ordering: .relaxed)
        v.accepted = accepted.load(ordering: .relaxed)
        v.events = events.load(ordering: .relaxed)
        v.acked = acked.load(ordering: .relaxed)
        v.undeliverable = undeliverable.load(ordering: .relaxed)
        v.outsideSchedule = outsideSchedule.load(ordering: .relaxed)
        v.eventRateLimited = eventRateLimited.load(ordering: .relaxed)
        v.dropped = dropped.withLock { d in Dictionary(uniqueKeysWithValues: DropReason.allCases.map { ($0, d[$0] ?? 0) }) }
        v.eventsByKind = eventsByKind.withLock { $0 }
        v.phones = phones.withLock { $0 }
        v.trips = Trips(
            pending: tripsPending.load(ordering: .relaxed), onRoute: tripsOnRoute.load(ordering: .relaxed),
            offRoute: tripsOffRoute.load(ordering: .relaxed))
        return v
    }

    public func drop(_ reason: DropReason, count: Int = 1) {
        dropped.withLock { $0[reason, default: 0] += count }
    }

    /// Feed messages the broker has sent that the network thread has not read yet, estimated
    /// from the socket's `unreadBytes` and the mean size of the feed messages taken so far (for
    /// the status's `queueDepth`: the updates waiting for the gateway now wait there).
    public func unreadFeedMessages(unreadBytes: Int) -> Int {
        let count = feedMessages.load(ordering: .relaxed)
        guard count > 0 else { return 0 }
        return unreadBytes / max(1, feedBytes.load(ordering: .relaxed) / count)
    }

    /// The `counters` object of `values`; `dropped` lists every reason (zeros included) in the
    /// contract's order.
    public static func json(_ values: Values, queueDepth: Int, devices: Int, outboxLocal: Int, outboxRemote: Int) -> JSONValue {
        let drops = JSONObject(DropReason.allCases.map { (key: $0.rawValue, value: JSONValue.number(Double(values.dropped[$0] ?? 0))) })
        func n(_ a: Int) -> JSONValue { .number(Double(a)) }
        var object: JSONObject = [
            "received": n(values.received), "accepted": n(values.accepted), "dropped": .object(drops), "events": n(values.events),
            "acked": n(values.acked), "queueDepth": .number(Double(queueDepth)), "devices": .number(Double(devices)),
            "outbox": .object(["local": .number(Double(outboxLocal)), "remote": .number(Double(outboxRemote))]),
            "outsideSchedule": n(values.outsideSchedule), "undeliverable": n(values.undeliverable),
            "eventRateLimited": n(values.eventRateLimited),
            "trips": .object([
                "open": n(values.trips.open), "pending": n(values.trips.pending), "onRoute": n(values.trips.onRoute),
                "offRoute": n(values.trips.offRoute),
            ]),
        ]
        if let phones = values.phones {
            let triggers = phones.triggers.sorted { $0.key < $1.key }.map { trigger, tally in
                (key: trigger, value: JSONValue.object(["pushes": n(tally.pushes), "agree": n(tally.agree), "disagree": n(tally.disagree)]))
            }
            object["phones"] = .object([
                "triggers": .object(JSONObject(triggers)), "unknownRegion": n(phones.unknownRegion),
                "unknownDevice": n(phones.unknownDevice), "regionsCapped": n(phones.regionsCapped),
            ])
        }
        return .object(object)
    }
}
