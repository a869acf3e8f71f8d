#if canImport(Glibc)
import Glibc
#endif

/// The gateway's clock: wall time in seconds since 1970 (fix times are compared to it).
public enum WallClock {
    public static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// The time at the kernel's last tick (up to a few milliseconds behind ``now()``), which
    /// reads no hardware clock: for checks at the scale of seconds done for every update.
    public static func coarse() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// The gateway clock of the monitors (silence confirmations, `staleAfter`, hibernation):
/// monotonic seconds, unaffected by wall-clock steps.
public enum MonotonicClock {
    public static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
