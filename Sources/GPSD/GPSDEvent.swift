internal import CGPS

/// What a `GPSDReader` reports, in order.
public enum GPSDEvent: Sendable, Equatable {
    /// A connection to gpsd is open and watching (after every successful (re)connect).
    case connected
    /// A fix: one per receiver epoch (a TPV repeating the previous fix time is not repeated).
    case fix(GPSFix)
    /// The receiver reports no fix (TPV mode 1): yielded when the state changes to "no fix",
    /// and once after each connect if the first report says so. The next `.fix` ends it.
    case noFix
    /// A connection attempt failed or an open connection was lost; the reader retries with
    /// backoff. Yielded after every failed attempt.
    case disconnected(GPSDError)
    /// The receiver's fix time is this many seconds ahead of (positive) or behind (negative)
    /// the system clock, beyond the configured threshold. A warning only: fixes still follow.
    /// Yielded when the skew starts and again after it ended and started anew (or reconnect).
    case clockSkew(seconds: Double)
}
