internal import CGPS

/// The reader's rules from TPV reports to events, kept apart from I/O so they can be tested:
/// one fix per receiver epoch, `.noFix` on the change to "no fix", `.clockSkew` when the fix
/// time strays from the system clock.
struct GPSDFixTracker: Sendable {
    /// |fix time − system time| above this many seconds is a clock skew.
    var clockSkewThreshold: Double
    /// The fix time of the last fix yielded (kept across reconnects).
    private(set) var lastFixTime: Double?
    /// Whether the receiver had a fix at the last TPV: nil until one arrives on a connection.
    private(set) var hasFix: Bool?
    private(set) var skewed = false

    init(clockSkewThreshold: Double) {
        self.clockSkewThreshold = clockSkewThreshold
    }

    /// A new connection: the fix state and the skew warning are reported afresh.
    mutating func connectionStarted() {
        hasFix = nil
        skewed = false
    }

    /// The events one TPV report causes, in order, given the system time `now`.
    mutating func events(for report: TPVReport, now: Double) -> [GPSDEvent] {
        if let fix = GPSFix(report: report) {
            // gpsd sends a TPV after several sentences of one epoch (GGA, RMC, GLL, ...): the
            // first with a new fix time is the fix, repeats of that time are the same epoch.
            if fix.time == lastFixTime { return [] }
            lastFixTime = fix.time
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
        if report.reportsNoFix, hasFix != false {
            hasFix = false
            return [.noFix]
        }
        return []
    }
}
