extension FenceNotification {
    /// The instant its trigger's schedule judges it by: the fix time that decided it, or for a
    /// `stale` or `fenceRemoved` exit (decided by the gateway, not by a fix) `clock`.
    public func scheduleTime(clock: Double) -> Double {
        switch reason {
        case .stale?, .fenceRemoved?: clock
        case .moved?, nil: decidedAt
        }
    }

    /// True if it is to be published and journaled: no schedule, or its ``scheduleTime(clock:)``
    /// inside one of the schedule's windows. `clock`: the gateway's wall clock (epoch seconds)
    /// when it was decided; `replay` gives its fix-time clock.
    public func isInSchedule(clock: Double) -> Bool {
        guard let schedule else { return true }
        return schedule.contains(scheduleTime(clock: clock))
    }
}

extension Array where Element == FenceNotification {
    /// The notifications to publish and journal, and how many were outside their trigger's
    /// schedule (docs/schedules.md "Which events"): the one place where `serve` and `replay`
    /// drop them. The monitor's state is untouched: a later exit inside a window still carries
    /// the visit and `dwellSeconds` of an enter that was outside.
    public func inSchedule(clock: Double) -> (kept: [FenceNotification], outside: Int) {
        guard contains(where: { $0.schedule != nil }) else { return (self, 0) }
        let kept = filter { $0.isInSchedule(clock: clock) }
        return (kept, count - kept.count)
    }
}
