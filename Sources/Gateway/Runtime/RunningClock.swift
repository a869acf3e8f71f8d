/// Seconds the gateway has been running, over all its runs: the monotonic clock of this run
/// plus what earlier runs saved (``GatewayStore/runningClock()``). `gateway.forgetAfter` is
/// measured on it, so a wall-clock jump or a month switched off forgets no device.
///
/// The monitors' gateway clock is the monotonic one; this converts between the two (a
/// constant offset within a run).
package struct RunningClock: Sendable {
    /// Running seconds when this run began.
    let carried: Double
    /// The monotonic clock when this run began.
    let start: Double

    package init(carried: Double, start: Double = MonotonicClock.now()) {
        self.carried = carried
        self.start = start
    }

    /// The running seconds at monotonic time `monotonic`.
    func running(atMonotonic monotonic: Double) -> Double { carried + (monotonic - start) }

    /// The monotonic time (of this run; before its start for earlier runs) of running seconds `running`.
    func monotonic(atRunning running: Double) -> Double { running - carried + start }
}

/// Tells a wall-clock step from the monotonic clock: a box without an RTC setting its clock
/// from NTP late, an operator setting the date. Pure: fed both clocks, it returns the step.
struct ClockJumpDetector: Sendable {
    /// A change larger than this (seconds) between the wall and the monotonic clock is a jump.
    static let threshold = 60.0
    private var offset: Double

    init(wall: Double, monotonic: Double) { offset = wall - monotonic }

    /// The wall clock's step (seconds, negative backwards) since the last call, when larger
    /// than ``threshold``; nil otherwise. Small drift is absorbed.
    mutating func check(wall: Double, monotonic: Double) -> Double? {
        let now = wall - monotonic
        let step = now - offset
        offset = now
        return abs(step) > Self.threshold ? step : nil
    }
}
