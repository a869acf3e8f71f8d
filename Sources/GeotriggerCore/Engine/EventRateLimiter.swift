/// `input.maxEventsPerDevice`: how many of one device's events go out per minute of fix time,
/// so that a device flapping across a fence boundary cannot fill the journal and the outbox.
///
/// Minutes are counted on the device's own fix-time clock, never on the wall clock, so a
/// replayed or fast-driven track is judged like a live one (and `input.maxFutureSkew` bounds
/// how far ahead of the wall clock a device can push it). A minute starts at the first event
/// after the previous minute ended; within it the first `limit` events are admitted, the
/// others refused. An event decided at a time before the current minute's start (a stale exit
/// carries the last known position) counts in the current minute: a clock that went back never
/// opens a new one.
///
/// Two words per device, one comparison and one addition per event: nothing is allocated.
public struct EventRateLimiter: Sendable, Equatable {
    /// The length of a counting window, in seconds of fix time.
    public static let window: Double = 60

    /// The fix time at which the current minute started.
    private var windowStart = -Double.infinity
    /// Events decided in the current minute, the refused ones included.
    public private(set) var count = 0

    public init() {}

    /// Whether one more event, decided when the device's fix time is `time`, may go out (at
    /// most `limit` per minute); counts it either way.
    public mutating func admit(at time: Double, limit: Int) -> Bool {
        if time >= windowStart + Self.window {
            windowStart = time
            count = 0
        }
        count += 1
        return count <= limit
    }

    /// Whether the event just refused by ``admit(at:limit:)`` was the first one refused in its
    /// minute (to raise a warning once per device and minute, not per event).
    public func isFirstRefused(limit: Int) -> Bool { count == limit + 1 }
}
