import GeotriggerCore

/// One occupancy topic: a fence as one trigger sees it.
struct OccupancyKey: Hashable, Sendable {
    var trigger: String
    var layer: String
    var fence: String

    /// `PREFIX/occupancy/TRIGGER/LAYER/FENCE`.
    static func topic(_ key: OccupancyKey, prefix: String) -> String {
        "\(prefix)/occupancy/\(key.trigger)/\(key.layer)/\(key.fence)"
    }
}

/// Which devices have a confirmed stay in each (trigger, layer, fence), kept from the device
/// publications (``StatePublisher/publish(_:)``), and which occupancy topics are due: changed,
/// and not published in the last `interval` seconds (the newest set wins).
struct OccupancyBook: Sendable {
    private var devices: [OccupancyKey: Set<String>] = [:]
    private var keysOfDevice: [String: Set<OccupancyKey>] = [:]
    private var dirty: Set<OccupancyKey> = []
    private var lastPublished: [OccupancyKey: Double] = [:]
    /// Keys whose topic was published in this run and not cleared since.
    private(set) var published: Set<OccupancyKey> = []
    /// When the publisher's loop looks next (monotonic; nil: nothing was due when it looked).
    private var wakeAt: Double?
    let interval: Double

    init(interval: Double = 1) { self.interval = interval }

    /// `device`'s confirmed stays are now `stays` (none: it left every fence, or was forgotten).
    /// True when a topic became due before the publisher's loop looks next: poke it.
    @discardableResult
    mutating func update(device: String, stays: [DeviceMonitor.Stay]) -> Bool {
        let now = Set(stays.map { OccupancyKey(trigger: $0.trigger, layer: $0.layer, fence: $0.fence) })
        let before = keysOfDevice[device] ?? []
        guard now != before else { return false }
        var sooner = false
        for key in before.subtracting(now) {
            devices[key]?.remove(device)
            if devices[key]?.isEmpty == true { devices[key] = nil }
            if markDirty(key) { sooner = true }
        }
        for key in now.subtracting(before) {
            devices[key, default: []].insert(device)
            if markDirty(key) { sooner = true }
        }
        keysOfDevice[device] = now.isEmpty ? nil : now
        return sooner
    }

    /// When `key`'s topic may go out (monotonic): `interval` after its last publication.
    private func due(_ key: OccupancyKey) -> Double { (lastPublished[key] ?? -.infinity) + interval }

    /// Marks `key` changed; true when it is due before the loop looks next.
    private mutating func markDirty(_ key: OccupancyKey) -> Bool {
        dirty.insert(key)
        let due = due(key)
        guard wakeAt.map({ due < $0 }) ?? true else { return false }
        wakeAt = due
        return true
    }

    /// When the publisher's loop must look next (monotonic; nil: nothing is due until a
    /// change), after it took and published what was due.
    mutating func nextDue() -> Double? {
        wakeAt = dirty.map(due).min()
        return wakeAt
    }

    /// The devices in `key`, sorted.
    func devices(in key: OccupancyKey) -> [String] { (devices[key] ?? []).sorted() }

    func count(_ key: OccupancyKey) -> Int { devices[key]?.count ?? 0 }

    /// Every published key is looked at again (the fences or triggers changed: removed ones
    /// are cleared).
    mutating func recheckPublished() {
        for key in published { _ = markDirty(key) }
    }

    /// The keys to publish now (monotonic `now`), taken off the due set; each is then either
    /// ``published(_:at:)`` or ``cleared(_:)``.
    mutating func takeDue(now: Double) -> [OccupancyKey] {
        let due = dirty.filter { now - (lastPublished[$0] ?? -.infinity) >= interval }
        dirty.subtract(due)
        return due.sorted { ($0.trigger, $0.layer, $0.fence) < ($1.trigger, $1.layer, $1.fence) }
    }

    /// `key`'s topic was published at `now`; true the first time in this run.
    mutating func published(_ key: OccupancyKey, at now: Double) -> Bool {
        lastPublished[key] = now
        return published.insert(key).inserted
    }

    /// `key`'s fence or trigger is gone: its topic was cleared (or never published).
    mutating func cleared(_ key: OccupancyKey) -> Bool {
        lastPublished[key] = nil
        return published.remove(key) != nil
    }
}
