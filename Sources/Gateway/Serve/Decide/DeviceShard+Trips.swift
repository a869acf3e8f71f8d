import GeotriggerCore
import Store

/// Trips in the device's shard (docs/trips.md; docs/architecture.md "Trips"): each open trip is
/// decided by the shard that owns its device's monitor, under the same lock, so a trip has one
/// owner and sees its device's fixes in the monitor's order. Fixes reach a trip from the update
/// path (``follow(_:trips:into:)``), the wall clock's `by` from the shard's tick
/// (``tickTrips(_:mustWait:)``), assignments and cancels from ``Trips`` through the mailbox
/// (``apply(_:)``). What a trip decides is handed over in the update's own item: its events,
/// its progress and its committed fields commit together.
extension DeviceShard {
    /// The trip deadlines are wall-clock times: the shard looks again at most this long ahead
    /// (seconds), so a stepped wall clock is noticed.
    static let longestTripSleep = 60.0

    /// When the shard's tick is next due for its trips' `by` (monotonic; infinity: none open
    /// with one): in the millisecond after the earliest, at most ``longestTripSleep`` ahead.
    func tripsDue(_ s: State, now: Double) -> Double {
        guard s.tripDeadline.isFinite else { return .infinity }
        let wait = ((s.tripDeadline * 1000).rounded(.down) + 1) / 1000 - WallClock.now()
        return now + min(max(wait, 0), Self.longestTripSleep)
    }

    /// Trips restored from the database at start, before the pool runs: a tick looks at
    /// their deadlines at once (a `by` may have passed while the gateway was down).
    func restoreTrips(_ runs: [TripRun]) {
        guard !runs.isEmpty else { return }
        state.withLock { s in
            for run in runs {
                s.trips[run.device, default: []].append(run)
                context.counters.countTrip(from: nil, to: run.progress.state)
                if let deadline = run.progress.deadline { s.tripDeadline = min(s.tripDeadline, deadline) }
            }
            ticksDue(by: MonotonicClock.now())
        }
    }

    /// Carries out an order of ``Trips``.
    func apply(_ order: TripOrder) async {
        switch order {
        case .assign(let run):
            await wake(run.device)
            await mutate { s, _ in
                var runs = s.trips.removeValue(forKey: run.device) ?? []
                if let k = runs.firstIndex(where: { $0.id == run.id }) {
                    context.counters.countTrip(from: runs[k].progress.state, to: nil)
                    runs.remove(at: k)
                }
                runs.append(run)
                s.trips[run.device] = runs
                context.counters.countTrip(from: nil, to: run.progress.state)
                if let deadline = run.progress.deadline {
                    s.tripDeadline = min(s.tripDeadline, deadline)
                    ticksDue(by: tripsDue(s, now: MonotonicClock.now()))
                }
            }
        case .cancel(let id, let device, let created, let clearProgress):
            await mutate { s, mustWait in
                if var runs = s.trips.removeValue(forKey: device) {
                    if let k = runs.firstIndex(where: { $0.id == id && $0.created == created }) {
                        context.counters.countTrip(from: runs[k].progress.state, to: nil)
                        runs.remove(at: k)
                    }
                    if !runs.isEmpty { s.trips[device] = runs }
                }
                // After whatever the trip published before: the committer publishes in order.
                if clearProgress {
                    var item = EventCommitter.Item()
                    item.retained.append(.init(topic: tripEmission.progressTopic(id), payload: nil))
                    handOver(item, mustWait: &mustWait)
                }
            }
        }
    }

    /// A trip's device hibernated in this run comes back into memory (its state read from the
    /// store, as an update would), and stays there while it has open trips: its fixes are
    /// then handled where they arrive.
    private func wake(_ device: String) async {
        let hibernated = state.withLock { s in s.slots[device] == nil && s.queued[device] == nil && s.hibernated[device] != nil }
        guard hibernated, let bytes = try? await context.store.deviceState(device) else { return }
        let now = MonotonicClock.now()
        await mutate { s, mustWait in
            guard s.slots[device] == nil, s.queued[device] == nil, let lastReport = s.hibernated[device],
                let (monitor, notes) = try? DeviceMonitor.restore(from: bytes, snapshot: s.snapshot, now: now)
            else { return }
            s.hibernated[device] = nil
            var slot = Slot(restored: monitor, from: bytes, lastReceived: lastReport)
            if s.pausedDevices[device] != nil { slot.monitor.pause(at: now) }
            handOver(item(notes, changed: !notes.isEmpty, now: now, slot: &slot), mustWait: &mustWait)
            s.slots[device] = SlotBox(slot)
            context.logger.debug("woke a hibernated device for its trip", ["device.id": device])
        }
    }

    /// An accepted fix of a device with open trips: each takes it (``TripProgress/update(_:)``);
    /// what they decide joins `item`. Ended trips leave.
    func follow(_ update: LocationUpdate, trips: inout [String: [TripRun]], into item: inout EventCommitter.Item?) {
        // Taken out and put back, as the tick does: reading a run through `trips[device]![k]`
        // copied it (its progress, plan and speeds) at every fix.
        guard var runs = trips.removeValue(forKey: update.device) else { return }
        var wall: Double?
        var ended = false
        for k in runs.indices {
            let before = runs[k].progress.state
            let events = runs[k].progress.update(update)
            guard !events.isEmpty || runs[k].progress.shouldPublishProgress else { continue }
            let now = wall ?? WallClock.now()
            wall = now
            ended = emit(events, of: &runs[k], from: before, wall: now, into: &item) || ended
        }
        if ended { runs.removeAll { $0.progress.state.isFinal } }
        if !runs.isEmpty { trips[update.device] = runs }
    }

    /// The shard's tick: trips whose `by` passed on the wall clock are missed.
    func tickTrips(_ s: inout State, mustWait: inout Bool) {
        guard s.tripDeadline.isFinite else { return }
        let wall = WallClock.now()
        guard wall >= s.tripDeadline else { return }
        var next = Double.infinity
        for device in Array(s.trips.keys) {
            var runs = s.trips.removeValue(forKey: device)!
            var item: EventCommitter.Item?
            for k in runs.indices {
                if let deadline = runs[k].progress.deadline, deadline <= wall {
                    let before = runs[k].progress.state
                    emit(runs[k].progress.clock(wall), of: &runs[k], from: before, wall: wall, into: &item)
                }
                if let deadline = runs[k].progress.deadline { next = min(next, deadline) }
            }
            runs.removeAll { $0.progress.state.isFinal }
            if !runs.isEmpty { s.trips[device] = runs }
            handOver(item, mustWait: &mustWait)
        }
        s.tripDeadline = next
    }

    /// Hands over what `run` decided (its state was `before`), counts its state, and tells
    /// ``Trips`` of its end; true when it ended.
    @discardableResult
    private func emit(_ events: [TripEvent], of run: inout TripRun, from before: TripState, wall: Double,
                      into item: inout EventCommitter.Item?) -> Bool {
        let ended = tripEmission.emit(events, of: &run, wall: wall, into: &item)
        let after = run.progress.state
        context.counters.countTrip(from: before, to: after.isFinal ? nil : after)
        for event in events {
            context.logger.info("trip event", ["trip": run.id, "device.id": run.device, "type": event.kind.rawValue])
        }
        if ended { context.trips?.ended(id: run.id, created: run.created) }
        return ended
    }

    /// The open trips of `device` (nil: of every device of this shard), as the `trips` query
    /// lists them: the progress payload, `by` and `created`.
    static func tripList(_ trips: [String: [TripRun]], device: String?, emission: TripEmission) -> [JSONValue] {
        let runs: [TripRun] = device.map { trips[$0] ?? [] } ?? trips.values.flatMap { $0 }
        return runs.map { run in
            guard case .object(var object) = emission.progressJSON(run) else { return .null }
            if let by = run.progress.plan.by { object["by"] = .string(ISO8601Time.format(by)) }
            object["created"] = .string(ISO8601Time.format(run.created, milliseconds: true))
            return .object(object)
        }
    }
}

