/// A monitor's persisted form (``DeviceMonitor/serialized()``), read but not bound to a
/// snapshot: what the database holds of a device. The journal's events after it are folded
/// into it (``replay(_:)``), so that a device whose step only decided what its journaled events
/// say needs no write of its own (docs/architecture.md "Commit and outbox").
struct MonitorRecord {
    var device: String
    var lastUpdate: LocationUpdate?
    /// Keys of the watches that know the device.
    var known: [UInt64]
    /// Stays and pending crossings; their watch and fence are not resolved (-1), and an
    /// overspeed visit carries one ``SpeedTrack`` (``isOverspeed(_:)``).
    var entries: [DeviceMonitor.Entry]

    init(device: String, lastUpdate: LocationUpdate?, known: [UInt64], entries: [DeviceMonitor.Entry]) {
        (self.device, self.lastUpdate, self.known, self.entries) = (device, lastUpdate, known, entries)
    }

    static func isOverspeed(_ entry: DeviceMonitor.Entry) -> Bool { entry.speedTracks.first?.watch.isOverspeed ?? false }

    func serialized() -> [UInt8] {
        var w = StateWriter()
        let speeds = entries.contains { Self.isOverspeed($0) }
        for b in speeds ? DeviceMonitor.stateMagicWithSpeed : DeviceMonitor.stateMagic { w.write(UInt64(b)) }
        w.write(device)
        w.write(lastUpdate != nil)
        if let u = lastUpdate { Self.write(u, to: &w) }
        w.write(known.count)
        for k in known { w.write(fixed: k) }
        w.write(entries.count)
        for e in entries {
            w.write(e.trigger)
            w.write(e.layer)
            w.write(e.fenceID)
            w.write(e.fenceName)
            w.write(e.inside)
            w.write(e.baseline)
            w.write(e.since)
            w.write(e.dwellFired)
            w.write(e.lastDistance)
            w.write(e.lastSameSideFix)
            w.write(e.pending != nil)
            if let p = e.pending {
                w.write(p.toInside)
                w.write(p.distance)
                Self.write(p.crossing, to: &w)
            }
            if speeds { w.write(Self.isOverspeed(e)) }
        }
        return w.bytes
    }

    init(bytes: [UInt8]) throws(MonitorStateError) {
        var r = StateReader(bytes)
        var magic: [UInt64] = []
        for _ in DeviceMonitor.stateMagic { magic.append(try r.varint()) }
        let speeds = magic == DeviceMonitor.stateMagicWithSpeed.map(UInt64.init)
        guard speeds || magic == DeviceMonitor.stateMagic.map(UInt64.init) else {
            throw MonitorStateError("not a geotrigger monitor state (version 1 or 2)")
        }
        device = try r.string()
        lastUpdate = try r.bool() ? try Self.readUpdate(&r, device: device) : nil
        known = []
        let knownCount = try r.count()
        for _ in 0..<knownCount { known.append(try r.fixed()) }
        entries = []
        let entryCount = try r.count()
        for _ in 0..<entryCount {
            let trigger = try r.string(), layer = try r.string(), fenceID = try r.string()
            let fenceName = try r.optionalString()
            var e = DeviceMonitor.Entry(
                trigger: trigger, layer: layer, fenceID: fenceID, fenceName: fenceName,
                watchKey: StableHash.watchKey(trigger: trigger, layer: layer), watch: -1, fence: -1, buffer: 0,
                inside: try r.bool(), baseline: try r.bool(), since: try r.double(), dwellFired: try r.bool(),
                pending: nil, lastDistance: try r.double(), lastSameSideFix: try r.double(), lastSameSideReceived: 0)
            if try r.bool() {
                let toInside = try r.bool(), distance = try r.double()
                e.pending = DeviceMonitor.Pending(toInside: toInside, crossing: try Self.readUpdate(&r, device: device), distance: distance)
            }
            if speeds, try r.bool() { e.speedTracks = [DeviceMonitor.SpeedTrack(limit: nil, watch: SpeedWatch(after: nil, overspeed: true))] }
            entries.append(e)
        }
        guard r.atEnd else { throw MonitorStateError("\(bytes.count - r.offset) unexpected bytes at the end") }
    }

    private static func write(_ u: LocationUpdate, to w: inout StateWriter) {
        w.write(u.lat)
        w.write(u.lon)
        w.write(u.time)
        w.write(u.accuracy)
        w.write(u.speed)
        w.write(u.heading)
        w.write(u.altitude)
    }

    private static func readUpdate(_ r: inout StateReader, device: String) throws(MonitorStateError) -> LocationUpdate {
        let lat = try r.double(), lon = try r.double(), time = try r.double()
        return LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: try r.optionalDouble(), speed: try r.optionalDouble(),
            heading: try r.optionalDouble(), altitude: try r.optionalDouble())
    }

    /// The facts a restart keeps (``CommittedFacts``).
    var facts: CommittedFacts { CommittedFacts(known: known.count, entries: entries) }

    /// Applies one journaled event, as the monitor decided it: an enter begins the stay at the
    /// event's fix time (a pending crossing of that fence is settled by it), an exit ends it, a
    /// dwell marks it fired. The last accepted update moves on to the event's position when
    /// that is later, so an older fix is not taken again after the restart.
    mutating func replay(_ event: JournaledDecision) {
        let index = entries.firstIndex { $0.trigger == event.trigger && $0.layer == event.layer && $0.fenceID == event.fence }
        switch event.type {
        case .enter:
            var entry = index.map { entries[$0] } ?? DeviceMonitor.Entry(
                trigger: event.trigger, layer: event.layer, fenceID: event.fence, fenceName: nil,
                watchKey: StableHash.watchKey(trigger: event.trigger, layer: event.layer), watch: -1, fence: -1, buffer: 0,
                inside: true, baseline: false, since: event.fixTime, dwellFired: false, pending: nil,
                lastDistance: event.distance ?? 0, lastSameSideFix: event.fixTime, lastSameSideReceived: 0)
            entry.inside = true
            entry.baseline = false
            entry.since = event.fixTime
            entry.dwellFired = false
            entry.pending = nil
            entry.speedTracks = []
            if let index { entries[index] = entry } else { entries.append(entry) }
        case .exit:
            if let index { entries.remove(at: index) }
        case .dwell:
            if let index { entries[index].dwellFired = true }
        }
        if let position = event.position, position.time > lastUpdate?.time ?? -.infinity {
            lastUpdate = LocationUpdate(
                device: device, lat: position.lat, lon: position.lon, time: position.time, accuracy: position.accuracy,
                speed: nil, heading: nil, altitude: nil)
        }
    }
}

/// An event as the journal holds it, reduced to what it decided for its device's state.
public struct JournaledDecision: Sendable {
    public enum Kind: String, Sendable { case enter, exit, dwell }
    public var type: Kind
    public var trigger: String
    public var layer: String
    public var fence: String
    /// The fix time that decided it (an enter's: the crossing, where the stay begins).
    public var fixTime: Double
    /// The event's position, and its distance to the boundary (nil where not known).
    public var position: (lat: Double, lon: Double, time: Double, accuracy: Double?)?
    public var distance: Double?

    public init(type: Kind, trigger: String, layer: String, fence: String, fixTime: Double,
                position: (lat: Double, lon: Double, time: Double, accuracy: Double?)? = nil, distance: Double? = nil) {
        (self.type, self.trigger, self.layer, self.fence, self.fixTime) = (type, trigger, layer, fence, fixTime)
        (self.position, self.distance) = (position, distance)
    }
}

/// What a restart keeps of a device's monitor and its journal must account for: which
/// triggers know it, and each confirmed stay (since when, whether a baseline, whether its
/// dwell fired, whether overspeed). A step whose new facts are its old ones with its journaled
/// events applied (``applying(_:)``) writes no state: the journal's rows carry it.
public struct CommittedFacts: Sendable, Equatable {
    struct Stay: Sendable, Equatable {
        var trigger: String
        var layer: String
        var fence: String
        var since: Double
        var baseline: Bool
        var dwellFired: Bool
        var overspeed: Bool
    }

    var known: Int
    /// In the order of their keys, so that equal facts compare equal.
    var stays: [Stay]

    /// No trigger knows the device yet.
    public static let none = CommittedFacts(known: 0, entries: [])

    init(known: Int, entries: [DeviceMonitor.Entry]) {
        self.known = known
        stays = entries.filter(\.inside).map {
            Stay(trigger: $0.trigger, layer: $0.layer, fence: $0.fenceID, since: $0.since, baseline: $0.baseline,
                 dwellFired: $0.dwellFired, overspeed: MonitorRecord.isOverspeed($0))
        }
        stays.sort { ($0.trigger, $0.layer, $0.fence) < ($1.trigger, $1.layer, $1.fence) }
    }

    /// The facts of persisted state bytes (nil if they are not a monitor's state).
    public init?(serialized bytes: [UInt8]) {
        guard let record = try? MonitorRecord(bytes: bytes) else { return nil }
        self = record.facts
    }

    /// These facts after `event`, as ``DeviceMonitor/replay(_:onto:)`` leaves a stored state.
    public func applying(_ event: JournaledDecision) -> CommittedFacts {
        var next = self
        let index = stays.firstIndex { $0.trigger == event.trigger && $0.layer == event.layer && $0.fence == event.fence }
        switch event.type {
        case .enter:
            let stay = Stay(trigger: event.trigger, layer: event.layer, fence: event.fence, since: event.fixTime, baseline: false,
                            dwellFired: false, overspeed: false)
            if let index { next.stays[index] = stay } else {
                next.stays.append(stay)
                next.stays.sort { ($0.trigger, $0.layer, $0.fence) < ($1.trigger, $1.layer, $1.fence) }
            }
        case .exit:
            if let index { next.stays.remove(at: index) }
        case .dwell:
            if let index { next.stays[index].dwellFired = true }
        }
        return next
    }
}

extension DeviceMonitor {
    /// The facts a restart keeps of this monitor (``CommittedFacts``).
    public var committedFacts: CommittedFacts { CommittedFacts(known: known.count, entries: entries) }

    /// Stored state `bytes` with the journal's later `events` of its device applied in order
    /// (``MonitorRecord/replay(_:)``): what the database holds of the device afterwards.
    public static func replay(_ events: [JournaledDecision], onto bytes: [UInt8]) throws(MonitorStateError) -> [UInt8] {
        var record = try MonitorRecord(bytes: bytes)
        for event in events { record.replay(event) }
        return record.serialized()
    }
}
