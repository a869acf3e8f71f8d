/// Which devices leave memory on a clock tick, as values: hibernation after
/// `gateway.hibernateAfter` (the state stays in the database, the slot goes) and forgetting
/// after `gateway.forgetAfter` (the state leaves the database, the retained state is cleared;
/// docs/configuration.md "Timing").
///
/// Idle time is measured on the gateway clock (monotonic, carried across restarts by
/// ``RunningClock``) from the device's last update, never on the wall clock or fix times: a
/// clock jump or a month switched off forgets nothing. It does nothing itself; the shard's tick
/// asks it about every device and carries out the ``Fate`` (`ShardRetentionTests`).
struct ShardRetention: Sendable, Equatable {
    /// `gateway.hibernateAfter`, seconds.
    let hibernateAfter: Double
    /// `gateway.forgetAfter`, seconds.
    let forgetAfter: Double

    /// What becomes of a device in memory at a tick.
    enum Fate: Sendable, Equatable {
        /// It stays in memory.
        case stays
        /// Its slot leaves memory; `saves`: its state in memory (last accepted position,
        /// pending crossings) is not in the database yet and is committed first.
        case hibernates(saves: Bool)
        /// Idle for `forgetAfter`: forgotten at once.
        case forgotten
    }

    /// The fate at gateway-clock time `now` of a device in memory that last reported at
    /// `lastReceived`. `paused`: the feeds' connection or the device's own feed is down (its
    /// stale clock resumes when the feed comes back, with or without a new update, so it must
    /// stay); `hasDeadline`: its monitor still waits for a deadline (after the tick advanced it;
    /// asked last, only of a device idle long enough, as it walks the monitor's entries);
    /// `unsaved`: its state in memory is not the database's.
    func fate(lastReceived: Double, now: Double, paused: Bool, hasDeadline: @autoclosure () -> Bool, unsaved: Bool) -> Fate {
        let idle = now - lastReceived
        guard !paused, idle >= hibernateAfter, !hasDeadline() else { return .stays }
        return idle >= forgetAfter ? .forgotten : .hibernates(saves: unsaved)
    }

    /// When a device in memory that last reported at `lastReceived` needs a tick for its fate
    /// (the clock time at which ``fate(lastReceived:now:paused:hasDeadline:unsaved:)`` may first
    /// say anything but `stays`): never while paused (a resume asks for a tick), and after its
    /// monitor's `deadline` while it has one (it stays in memory until then).
    func fateDue(lastReceived: Double, paused: Bool, deadline: Double?) -> Double {
        if let deadline { return deadline }
        return paused ? .infinity : lastReceived + hibernateAfter
    }

    /// Whether a hibernated device that last reported at `lastReport` is forgotten at `now`.
    func forgets(lastReport: Double, now: Double) -> Bool {
        now - lastReport >= forgetAfter
    }
}
