import GeotriggerCore

/// Publishes the retained occupancy topics `PREFIX/occupancy/TRIGGER/LAYER/FENCE` (with
/// `output.occupancy`): the devices with a confirmed stay in each fence, as the `inside` query
/// counts them, when the set changed, at most once a second per fence (the newest set wins;
/// its loop sleeps until one is due),
/// through the ``StatePublisher`` (so every connect publishes them again). A fence or trigger
/// that is gone has its topic (and its Home Assistant sensor) cleared.
final class OccupancyPublisher: Service, Sendable {
    let name = "occupancy"
    let states: StatePublisher
    let snapshot: @Sendable () -> EngineSnapshot
    private let stop = StopSignal()

    /// At most this many device ids in a payload (`count` has them all).
    static let listedDevices = 100

    init(states: StatePublisher, snapshot: @escaping @Sendable () -> EngineSnapshot) {
        self.states = states
        self.snapshot = snapshot
    }

    /// Sleeps until a topic is due: a change pokes it (``StatePublisher/occupancyChanged``),
    /// as does a new snapshot (its fences' topics are looked at again); a topic published less
    /// than a second ago is due when that second ends.
    func run() async throws {
        var seen: ObjectIdentifier?
        await repeating(until: stop, wakeup: states.occupancyChanged) {
            let current = snapshot()
            if seen != ObjectIdentifier(current) {
                if seen != nil { states.occupancy.withLock { $0.recheckPublished() } }
                seen = ObjectIdentifier(current)
            }
            return publishDue(snapshot: current)
        }
    }

    func shutdown() async { stop.fire() }

    /// Publishes (or clears) every occupancy topic that is due now; returns when the next one
    /// is due (monotonic; nil: none until a change).
    @discardableResult
    func publishDue(snapshot: EngineSnapshot, now: Double = MonotonicClock.now()) -> Double? {
        let due = states.occupancy.withLock { $0.takeDue(now: now) }
        guard !due.isEmpty else { return states.occupancy.withLock { $0.nextDue() } }
        let triggers = Set(snapshot.triggers.map(\.name))
        let updated = ISO8601Time.format(WallClock.now(), milliseconds: true)
        for key in due {
            let topic = OccupancyKey.topic(key, prefix: states.prefix)
            guard let fence = snapshot.fence(layer: key.layer, id: key.fence), triggers.contains(key.trigger) else {
                if states.occupancy.withLock({ $0.cleared(key) }) {
                    states.publish(topic: topic, payload: nil)
                    if let discovery = states.discovery { states.publish(topic: discovery.occupancyConfigTopic(key), payload: nil) }
                }
                continue
            }
            let (devices, count, first) = states.occupancy.withLock { book in
                (book.devices(in: key).prefix(Self.listedDevices), book.count(key), book.published(key, at: now))
            }
            var payload: JSONObject = ["trigger": .string(key.trigger), "layer": .string(key.layer), "fence": .string(key.fence)]
            if let name = fence.fence.name { payload["name"] = .string(name) }
            payload["count"] = .number(Double(count))
            payload["devices"] = .array(devices.map { .string($0) })
            payload["updated"] = .string(updated)
            // The sensor's discovery config before its first state, so Home Assistant has the
            // entity when the state arrives.
            if first, let discovery = states.discovery {
                states.publish(topic: discovery.occupancyConfigTopic(key), payload: discovery.occupancyConfig(key, name: fence.fence.name))
            }
            states.publish(topic: topic, payload: JSONValue.object(payload).serializedBytes())
        }
        return states.occupancy.withLock { $0.nextDue() }
    }
}
