import GeotriggerCore

/// The engine run offline over a recorded track, with the clock driven by the fix times
/// (docs/configuration.md "Timing": "`replay` drives the same clock by the track's fix times"), so a replay is
/// deterministic.
struct ReplayRun {
    /// One notification and the (fix-time) clock reading when it was decided.
    struct Decision {
        var notification: FenceNotification
        var decidedAt: Double
    }

    /// How long the clock runs on after the last fix, so that holds and dwell decided by silence
    /// (and stale exits within that time) still show.
    static let tail: Double = 3600

    var decisions: [Decision] = []
    /// Counts of updates the monitors did not accept, by reason.
    var dropped: [String: Int] = [:]
    var accepted = 0
    /// Events decided outside their trigger's `schedule` (not in ``decisions``).
    var outsideSchedule = 0

    /// `maxAccuracy`: `input.maxAccuracy`, as `serve` drops a less accurate fix (`outOfRange`).
    init(updates: [LocationUpdate], snapshot: EngineSnapshot, maxAccuracy: Double = .infinity) {
        var monitors: [String: DeviceMonitor] = [:]
        var order: [String] = []
        var last = -Double.infinity
        for update in updates {
            if let accuracy = update.accuracy, accuracy > maxAccuracy {
                dropped[DropReason.outOfRange.rawValue, default: 0] += 1
                continue
            }
            if monitors[update.device] == nil {
                monitors[update.device] = DeviceMonitor(device: update.device, snapshot: snapshot, now: update.time)
                order.append(update.device)
            }
            // Deadlines that fall before this fix are decided first, on every device.
            for device in order { advance(&monitors[device]!, to: update.time) }
            let outcome = monitors[update.device]!.handle(update, receivedAt: update.time)
            switch outcome.disposition {
            case .accepted: accepted += 1
            default: dropped[outcome.disposition.rawValue, default: 0] += 1
            }
            record(outcome.notifications, at: update.time)
            last = max(last, update.time)
        }
        for device in order { advance(&monitors[device]!, to: last + ReplayRun.tail) }
    }

    /// Keeps the notifications decided at clock `time` that are inside their schedule (the same
    /// function as `serve`'s, with the fix-time clock), and counts the others.
    private mutating func record(_ notes: [FenceNotification], at time: Double) {
        let (kept, outside) = notes.inSchedule(clock: time)
        outsideSchedule += outside
        decisions += kept.map { Decision(notification: $0, decidedAt: time) }
    }

    /// Fires every deadline of `monitor` up to `time`, each at its own time.
    private mutating func advance(_ monitor: inout DeviceMonitor, to time: Double) {
        while let deadline = monitor.nextDeadline(), deadline <= time {
            let notes = monitor.advance(to: deadline)
            record(notes, at: deadline)
            if notes.isEmpty, monitor.nextDeadline() == deadline { break }
        }
    }
}
