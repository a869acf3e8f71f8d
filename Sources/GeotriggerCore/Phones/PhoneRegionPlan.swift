/// What the gateway has given one OwnTracks phone as regions, and when it gives it more: the
/// pure decision behind the `setWaypoints` pushes (docs/phones.md), by the device's fix time.
///
/// - A phone is given the `phones.regions` fences of each trigger nearest to its last accepted
///   position (``EngineSnapshot/phoneRegions(near:device:)``), as circles.
/// - At most one push per ``pushInterval`` seconds of fix time, so a replayed or fast-driven
///   track is judged like a live one, and at most one per ``pushInterval`` seconds of the
///   gateway's running clock (the caller's `now`), so a phone that steps its fix time a minute
///   per message, or uploads an hour of backlog at once, gets no more than real time gives. A
///   push held back is not lost: the next fix after the interval looks at the set again.
/// - The set is looked at again only when the phone moved more than a quarter of the distance
///   (from where it was last looked at) to the nearest fence left out, or the fences changed
///   (a new snapshot): jitter never pushes, and nothing is computed for most fixes.
/// - A push happens only when the set differs from the last one pushed (a rid in or out, or a
///   circle or name changed): the phone then gets the whole set, and the regions that left it.
public struct PhoneRegionPlan: Sendable {
    /// Seconds of fix time, and of the gateway's clock, between two pushes to one phone.
    public static let pushInterval = 60.0

    /// The regions last pushed, in rid order.
    public private(set) var regions: [PhoneRegion] = []
    /// Fix time of the last push.
    public private(set) var lastPush: Double?
    /// The gateway's clock at the last push.
    public private(set) var lastPushClock: Double?
    /// Where the set was last looked at, and how far the phone may move from there before it
    /// is looked at again.
    private var anchor: Coordinate?
    private var moveThreshold = 0.0
    /// The ``EngineSnapshot/generation`` the set was last looked at in.
    private var generation: UInt64?

    public init() {}

    /// The push a fix at `position`, fix time `time`, taken when the gateway's clock read
    /// `now`, calls for; nil for none.
    public mutating func observe(_ position: Coordinate, time: Double, now: Double, device: String, snapshot: EngineSnapshot) -> PhonePush? {
        if let lastPush, time - lastPush < Self.pushInterval { return nil }
        if let lastPushClock, now - lastPushClock < Self.pushInterval { return nil }
        if let anchor, generation == snapshot.generation, Earth.distance(anchor, position) <= moveThreshold { return nil }
        let wanted = snapshot.phoneRegions(near: position, device: device)
        anchor = position
        generation = snapshot.generation
        moveThreshold = wanted.leftOutDistance / 4
        guard wanted.regions != regions.map(\.unslotted) else { return nil }
        let kept = Set(wanted.regions.map(\.rid))
        let removed = regions.filter { !kept.contains($0.rid) }
        regions = slotted(wanted.regions)
        lastPush = time
        lastPushClock = now
        return PhonePush(regions: regions, removed: removed, triggers: wanted.triggers, capped: wanted.capped)
    }
}

extension PhoneRegionPlan {
    /// `wanted` (in rid order) in slots: a region pushed before keeps its slot, a new one takes
    /// the lowest slot free (one that left, or a new one).
    func slotted(_ wanted: [PhoneRegion]) -> [PhoneRegion] {
        var slotOf: [String: Int] = [:]
        for region in regions {
            if let slot = PhoneRegion.slot(ofTime: Double(region.tst)) { slotOf[region.rid] = slot }
        }
        var taken = Set(wanted.compactMap { slotOf[$0.rid] })
        var next = 0
        return wanted.map { region in
            if let slot = slotOf[region.rid] { return region.inSlot(slot) }
            while taken.contains(next) { next += 1 }
            taken.insert(next)
            return region.inSlot(next)
        }
    }

    /// The rid of the region in the slot of `wtst` (an Android phone's transitions name the
    /// region only by it), if the last push had one there.
    public func rid(ofSlotTime wtst: Double) -> String? {
        guard PhoneRegion.slot(ofTime: wtst) != nil else { return nil }
        return regions.first { Double($0.tst) == wtst }?.rid
    }
}

/// One `setWaypoints` push: the whole region set of a phone and the regions that left it.
public struct PhonePush: Sendable, Equatable {
    /// Every region the phone should watch now, in rid order.
    public var regions: [PhoneRegion]
    /// Regions pushed before that are no longer in the set.
    public var removed: [PhoneRegion]
    /// The triggers whose regions the set holds (for the per-trigger push counts).
    public var triggers: [String]
    /// The triggers gave more than ``TriggerOptions/maximumPhoneRegions``: the nearest were kept.
    public var capped = false
}

extension PhonePush {
    /// The OwnTracks command: `{"_type": "cmd", "action": "setWaypoints", "waypoints":
    /// {"_type": "waypoints", "_creator": "geotrigger", "waypoints": [...]}}`, the regions
    /// that left first (as removals, ``PhoneRegion/removalJSON``), then the whole set.
    public var commandJSON: JSONValue {
        .object([
            "_type": .string("cmd"), "action": .string("setWaypoints"),
            "waypoints": .object([
                "_type": .string("waypoints"), "_creator": .string("geotrigger"),
                "waypoints": .array(removed.map(\.removalJSON) + regions.map(\.waypointJSON)),
            ]),
        ])
    }
}
