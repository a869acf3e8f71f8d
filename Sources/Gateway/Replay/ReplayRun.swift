import GeotriggerCore

/// The engine run offline over a recorded track, with the clock driven by the fix times
/// (docs/configuration.md "Timing": "`replay` drives the same clock by the track's fix times"), so a replay is
/// deterministic.
///
/// Trips (docs/trips.md "Trips in replay and simulate") are decided by the same core as in
/// `serve` (``TripProgress``): each accepted fix of a trip's device goes to its trips after
/// the device's monitor, as the device's shard hands it on; `by` is read on the fix-time clock
/// (`missed` when it passes before an arrival), as every deadline of a replay is.
struct ReplayRun {
    /// One notification and the (fix-time) clock reading when it was decided.
    struct Decision {
        var notification: FenceNotification
        var decidedAt: Double
    }

    /// One event of a trip and the (fix-time) clock reading when it was decided.
    struct TripDecision {
        var event: TripEvent
        /// The trip as it stood right after (its id, device and creation time name the event).
        var trip: TripRun
        var decidedAt: Double
    }

    /// A fence event or a trip event, in the order decided.
    enum Entry {
        case fence(Decision)
        case trip(TripDecision)
    }

    /// How long the clock runs on after the last fix, so that holds and dwell decided by silence
    /// (and stale exits within that time) still show.
    static let tail: Double = 3600

    /// Every event kept, in the order decided.
    var entries: [Entry] = []
    /// The fence events of ``entries``.
    var decisions: [Decision] {
        entries.compactMap { if case .fence(let d) = $0 { d } else { nil } }
    }
    /// The trip events of ``entries``.
    var tripDecisions: [TripDecision] {
        entries.compactMap { if case .trip(let d) = $0 { d } else { nil } }
    }
    /// Each trip as it stood after the last fix (and the clock's run-on), in the order given.
    var trips: [TripRun] = []
    /// Counts of updates the monitors did not accept, by reason.
    var dropped: [String: Int] = [:]
    var accepted = 0
    /// Events decided outside their trigger's `schedule` (not in ``decisions``).
    var outsideSchedule = 0

    /// `maxAccuracy`: `input.maxAccuracy`, as `serve` drops a less accurate fix (`outOfRange`).
    /// `trips`: followed from the first fix (each created then, for its event ids).
    init(updates: [LocationUpdate], snapshot: EngineSnapshot, maxAccuracy: Double = .infinity, trips requests: [TripRequest] = []) {
        let created = updates.first?.time ?? 0
        trips = requests.map { request in
            var r = request
            r.created = created
            return TripRun(r)
        }
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
            clockTrips(before: update.time)
            let outcome = monitors[update.device]!.handle(update, receivedAt: update.time)
            switch outcome.disposition {
            case .accepted: accepted += 1
            default: dropped[outcome.disposition.rawValue, default: 0] += 1
            }
            record(outcome.notifications, at: update.time)
            if outcome.disposition == .accepted {
                for k in trips.indices where trips[k].device == update.device {
                    recordTrip(trips[k].progress.update(update), of: k, at: update.time)
                }
            }
            last = max(last, update.time)
        }
        for device in order { advance(&monitors[device]!, to: last + ReplayRun.tail) }
        clockTrips(before: last + ReplayRun.tail, including: true)
    }

    /// The fix-time clock reached `time`: trips whose `by` is before it (or at it, `including`)
    /// are missed, at their `by`.
    private mutating func clockTrips(before time: Double, including: Bool = false) {
        for k in trips.indices {
            guard let deadline = trips[k].progress.deadline, deadline < time || (including && deadline == time) else { continue }
            recordTrip(trips[k].progress.clock(deadline), of: k, at: deadline)
        }
    }

    private mutating func recordTrip(_ events: [TripEvent], of k: Int, at time: Double) {
        entries += events.map { .trip(TripDecision(event: $0, trip: trips[k], decidedAt: time)) }
    }

    /// Keeps the notifications decided at clock `time` that are inside their schedule (the same
    /// function as `serve`'s, with the fix-time clock), and counts the others.
    private mutating func record(_ notes: [FenceNotification], at time: Double) {
        let (kept, outside) = notes.inSchedule(clock: time)
        outsideSchedule += outside
        entries += kept.map { .fence(Decision(notification: $0, decidedAt: time)) }
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
