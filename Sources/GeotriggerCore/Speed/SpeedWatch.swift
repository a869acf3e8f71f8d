/// Overspeed against a speed limit, for one device (docs/trips.md "Speed limits"): `overspeed`
/// once it has been faster than the limit plus 5 % for 10 s of fix time, then `speedOk` once it
/// has been slower than the limit minus 5 % for 10 s.
///
/// Each fix gives at most one speed reading: the speed the device reports with it, else the
/// speed measured between its fixes (``FixSpeed``: at most 60 s apart, moved more than both
/// accuracies). A reading past the threshold starts a hold at its fix time (unless one runs);
/// a reading that is not past it ends the hold; a reading past it at least ``holdSeconds``
/// after the hold began decides. A fix without a reading (a standing device's jitter) neither
/// starts, keeps nor ends a hold, but readings more than 60 s apart (``FixSpeed/maximumInterval``)
/// do not join: nothing is known of the time between them, so a hold starts afresh. Only
/// readings decide: there is no clock here, so silence never decides anything. A fix at or
/// before the previous one's time is ignored.
///
/// The limit is passed with each fix (a device may cross into a fence with another limit; a
/// hold runs on against the new one).
public struct SpeedWatch: Sendable, Equatable {
    /// What a fix decided.
    public enum Event: Sendable, Equatable {
        case overspeed
        case speedOk
    }

    /// The share of the limit a speed must pass it by: over `limit × 1.05` is fast, under
    /// `limit × 0.95` is slow again.
    public static let margin = 0.05
    /// Seconds of fix time a speed must hold before it decides.
    public static let holdSeconds = 10.0

    /// True from `overspeed` until `speedOk`.
    public private(set) var isOverspeed = false
    /// The fix time the running hold began at, if one runs.
    public private(set) var holdStart: Double?
    /// The last reading (m/s).
    public private(set) var lastSpeed: Double?
    /// The fix time of the last reading (-infinity before the first).
    public private(set) var lastReadingTime = -Double.infinity
    private var lastTime = -Double.infinity
    private var fixSpeed = FixSpeed()

    public init() {}

    /// A watch that measures its first fix from `previous` (the device's fix before it, if any),
    /// so that a watch begun as a device enters a fence reads a speed at the first fix inside;
    /// `overspeed`: it begins overspeed (a watch restored after a restart).
    public init(after previous: LocationUpdate?, overspeed: Bool = false) {
        isOverspeed = overspeed
        if let previous {
            _ = fixSpeed.measure(previous)
            lastTime = previous.time
        }
    }

    /// Takes `fix` against `limit` (m/s): the event it decides, if any. A `limit` that is not
    /// a finite number > 0 (`.infinity`: no limit) decides nothing and ends any hold, but the
    /// fix is still read (``lastSpeed``).
    public mutating func update(_ fix: LocationUpdate, limit: Double) -> Event? {
        guard fix.time > lastTime else { return nil }
        lastTime = fix.time
        guard let speed = fixSpeed.speed(of: fix) else { return nil }
        if fix.time - lastReadingTime > FixSpeed.maximumInterval { holdStart = nil }
        lastSpeed = speed
        lastReadingTime = fix.time
        guard limit.isFinite, limit > 0 else {
            holdStart = nil
            return nil
        }
        let pastThreshold = isOverspeed ? speed < limit * (1 - SpeedWatch.margin) : speed > limit * (1 + SpeedWatch.margin)
        guard pastThreshold else {
            holdStart = nil
            return nil
        }
        guard let start = holdStart else {
            holdStart = fix.time
            return nil
        }
        guard fix.time - start >= SpeedWatch.holdSeconds else { return nil }
        holdStart = nil
        isOverspeed.toggle()
        return isOverspeed ? .overspeed : .speedOk
    }
}
