internal import CGPS

/// The reader's rules from TPV reports to events, kept apart from I/O so they can be tested:
/// one fix per receiver epoch, `.noFix` on the change to "no fix", `.clockSkew` when the fix
/// time strays from the system clock.
///
/// One epoch, several TPVs: until gpsd has learnt which sentence ends a receiver's cycle (at
/// start, after a period without fix, or never for some receivers) it sends a TPV per sentence,
/// each with only that sentence's fields: after a no-fix period a GGA's TPV has no track, the
/// RMC's that follows (same fix time) has it. The tracker merges the TPVs of an epoch: a fix
/// lacking a field (speed, track, accuracy, altitude) that the previous epoch had is held until
/// a TPV of the same epoch brings it, a TPV of a later epoch or a no-fix report arrives, or
/// `settleTime` seconds pass without one (`releaseDeadline`, `release(now:force:)`). A complete
/// TPV, as gpsd sends once it knows the cycle, is a fix at once.
struct GPSDFixTracker: Sendable {
    /// |fix time − system time| above this many seconds is a clock skew.
    var clockSkewThreshold: Double
    /// Longest wait for the rest of an incomplete epoch, in seconds.
    var settleTime: Double
    /// The fix time of the last fix yielded (kept across reconnects).
    private(set) var lastFixTime: Double?
    /// Whether the receiver had a fix at the last TPV: nil until one arrives on a connection.
    private(set) var hasFix: Bool?
    private(set) var skewed = false
    /// An epoch's fix waiting for its missing fields, and when its last TPV came (system clock).
    private(set) var pending: (fix: GPSFix, updated: Double)?
    /// The optional fields the last epoch carried over all its TPVs.
    private var expected = Fields()

    init(clockSkewThreshold: Double, settleTime: Double = 0.5) {
        self.clockSkewThreshold = clockSkewThreshold
        self.settleTime = settleTime
    }

    /// A new connection: the fix state and the skew warning are reported afresh.
    mutating func connectionStarted() {
        hasFix = nil
        skewed = false
    }

    /// When the held fix is due at the latest (system clock), if one is held.
    var releaseDeadline: Double? { pending.map { $0.updated + settleTime } }

    /// The events one TPV report causes, in order, given the system time `now`.
    mutating func events(for report: TPVReport, now: Double) -> [GPSDEvent] {
        if let fix = GPSFix(report: report) {
            if let held = pending, held.fix.time == fix.time {
                let merged = held.fix.merged(with: fix)
                pending = (merged, now)
                return Fields(merged).isSuperset(of: expected) ? release(now: now, force: true) : []
            }
            // A later TPV of an epoch already yielded: only learn which fields epochs carry.
            if fix.time == lastFixTime {
                expected.formUnion(Fields(fix))
                return []
            }
            var events = release(now: now, force: true)
            if Fields(fix).isSuperset(of: expected) {
                events += emit(fix, now: now)
            } else {
                pending = (fix, now)
            }
            return events
        }
        if report.reportsNoFix, hasFix != false {
            var events = release(now: now, force: true)
            hasFix = false
            events.append(.noFix)
            return events
        }
        return []
    }

    /// The held fix, if one is held and (unless `force`) its `settleTime` has passed at `now`.
    /// The fields it lacks are then no longer expected.
    mutating func release(now: Double, force: Bool) -> [GPSDEvent] {
        guard let held = pending, force || now >= held.updated + settleTime else { return [] }
        pending = nil
        return emit(held.fix, now: now)
    }

    private mutating func emit(_ fix: GPSFix, now: Double) -> [GPSDEvent] {
        lastFixTime = fix.time
        expected = Fields(fix)
        hasFix = true
        var events: [GPSDEvent] = []
        let skew = fix.time - now
        if abs(skew) > clockSkewThreshold {
            if !skewed { events.append(.clockSkew(seconds: skew)) }
            skewed = true
        } else {
            skewed = false
        }
        events.append(.fix(fix))
        return events
    }

    /// Which optional fields a fix carries.
    struct Fields: OptionSet, Sendable {
        let rawValue: UInt8
        static let accuracy = Fields(rawValue: 1)
        static let speed = Fields(rawValue: 2)
        static let track = Fields(rawValue: 4)
        static let altitude = Fields(rawValue: 8)

        init(rawValue: UInt8) { self.rawValue = rawValue }

        init(_ fix: GPSFix) {
            var fields: Fields = []
            if fix.accuracy != nil { fields.insert(.accuracy) }
            if fix.speed != nil { fields.insert(.speed) }
            if fix.track != nil { fields.insert(.track) }
            if fix.altitude != nil { fields.insert(.altitude) }
            self = fields
        }
    }
}

extension GPSFix {
    /// This fix completed by a later TPV of the same epoch: the later values where it has them.
    func merged(with later: GPSFix) -> GPSFix {
        GPSFix(
            time: time, lat: later.lat, lon: later.lon, mode: max(mode, later.mode),
            accuracy: later.accuracy ?? accuracy, speed: later.speed ?? speed, track: later.track ?? track,
            altitude: later.altitude ?? altitude)
    }
}
