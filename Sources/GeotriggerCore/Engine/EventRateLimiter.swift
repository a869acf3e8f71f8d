/// `input.maxEventsPerDevice`: how many of one device's events go out per minute, so that a
/// device flapping across a fence boundary, or one that steps its fix time as it likes, cannot
/// fill the journal and the outbox.
///
/// Two windows, both must admit an event:
/// - **fix time**: at most `limit` events per minute of the device's own fix time, so a
///   replayed or fast-driven track is judged like a live one (and `input.maxFutureSkew` bounds
///   how far ahead of the wall clock a device can push it). A minute starts at the first event
///   after the previous minute ended; within it the first `limit` events are admitted, the
///   others refused. An event decided at a time before the current minute's start (a stale exit
///   carries the last known position) counts in the current minute: a clock that went back
///   never opens a new one.
/// - **running clock**: at most ``runningFactor`` x `limit` of the events the fix-time window
///   admitted per minute of the gateway's clock (the caller's `now`, monotonic), counted the
///   same way. A device's fix time only has to be after 1970: one that steps it a minute per
///   message would open a fix-time minute with every message; this bounds what it buys to ten
///   times what real time gives, while a phone uploading an hour of backlog at once (a few
///   events per minute of its fix time) still passes whole.
///
/// Four words per device, a few comparisons and additions per event: nothing is allocated.
/// The clock is injected (`now`), so every rule is testable without waiting.
public struct EventRateLimiter: Sendable, Equatable {
    /// The length of a counting window, in seconds (of fix time, and of the running clock).
    public static let window: Double = 60
    /// A device's events per minute of the running clock: this many times the per-minute limit.
    public static let runningFactor = 10

    /// The window that refused an event.
    public enum Window: Sendable, Equatable {
        /// A minute of the device's fix time: more than `limit` events.
        case fixTime
        /// A minute of the gateway's running clock: more than ``runningFactor`` x `limit`.
        case runningClock
    }

    /// What ``admit(at:now:limit:)`` says of one event.
    public enum Verdict: Sendable, Equatable {
        case admitted
        /// Refused by `window`; `first`: the first refused in that window's current minute (to
        /// raise a warning once per device and minute, not per event).
        case refused(first: Bool, window: Window)
    }

    /// The fix time at which the current fix-time minute started.
    private var windowStart = -Double.infinity
    /// Events decided in the current fix-time minute, the refused ones included.
    public private(set) var count = 0
    /// The running clock at which the current running minute started.
    private var runningStart = -Double.infinity
    /// Events the fix-time window admitted in the current running minute.
    public private(set) var runningCount = 0

    public init() {}

    /// The most events per minute of the running clock for a per-minute `limit`.
    public static func runningLimit(_ limit: Int) -> Int {
        let (product, overflow) = max(limit, 0).multipliedReportingOverflow(by: runningFactor)
        return overflow ? Int.max : product
    }

    /// Whether one more event, decided when the device's fix time is `time` and the gateway's
    /// clock reads `now`, may go out (at most `limit` per minute of fix time, and
    /// ``runningLimit(_:)`` per minute of the running clock); counts it either way.
    public mutating func admit(at time: Double, now: Double, limit: Int) -> Verdict {
        if time >= windowStart + Self.window {
            windowStart = time
            count = 0
        }
        if now >= runningStart + Self.window {
            runningStart = now
            runningCount = 0
        }
        count += 1
        guard count <= limit else { return .refused(first: count == limit + 1, window: .fixTime) }
        let runningLimit = Self.runningLimit(limit)
        runningCount += 1
        guard runningCount <= runningLimit else { return .refused(first: runningCount == runningLimit + 1, window: .runningClock) }
        return .admitted
    }
}
