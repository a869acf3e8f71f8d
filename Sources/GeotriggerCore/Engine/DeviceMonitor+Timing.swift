extension DeviceMonitor {
    /// What happens at an entry's next gateway-clock deadline.
    enum Deadline {
        case confirmBySilence
        case dwellBySilence
        case stale
    }

    /// Entry `i`'s next deadline on the gateway clock, if any.
    func deadline(ofEntry i: Int) -> (time: Double, kind: Deadline)? {
        let entry = entries[i]
        let settings = snapshot.rules[Int(entry.watch)]
        var best: (time: Double, kind: Deadline)?
        func consider(_ time: Double, _ kind: Deadline) {
            if best == nil || time < best!.time { best = (time, kind) }
        }
        if let pending = entry.pending {
            let hold = pending.toInside ? settings.enterAfter : settings.exitAfter
            consider(entry.lastSameSideReceived + hold, .confirmBySilence)
        } else if entry.inside, !entry.dwellFired, let dwell = settings.dwell {
            let remaining = max(0, entry.since + dwell - entry.lastSameSideFix)
            consider(entry.lastSameSideReceived + remaining, .dwellBySilence)
        }
        if let staleAfter = settings.staleAfter {
            consider(lastReceived + staleAfter, .stale)
        }
        return best
    }

    /// The earliest gateway-clock time at which ``advance(to:)`` has something to do; nil when
    /// nothing waits on the clock (or the monitor is paused).
    public func nextDeadline() -> Double? {
        guard pausedAt == nil else { return nil }
        var best: Double?
        for i in entries.indices {
            if let d = deadline(ofEntry: i), best == nil || d.time < best! { best = d.time }
        }
        return best
    }

    /// Decides everything due by gateway-clock time `now`, in deadline order: confirmations and
    /// dwells by silence, `stale` exits. Returns the notifications (the state changed iff any
    /// deadline was due: see ``advance(to:stateChanged:)``).
    public mutating func advance(to now: Double) -> [FenceNotification] {
        var changed = false
        return advance(to: now, stateChanged: &changed)
    }

    /// ``advance(to:)`` also telling whether persisted state changed (a silent cancellation such
    /// as a stale pending enter changes state without a notification).
    public mutating func advance(to now: Double, stateChanged: inout Bool) -> [FenceNotification] {
        guard pausedAt == nil else { return [] }
        var notifications: [FenceNotification] = []
        while true {
            var next: (index: Int, time: Double, kind: Deadline)?
            for i in entries.indices {
                if let d = deadline(ofEntry: i), d.time <= now, next == nil || d.time < next!.time {
                    next = (i, d.time, d.kind)
                }
            }
            guard let next else { break }
            stateChanged = true
            switch next.kind {
            case .confirmBySilence:
                confirm(entry: next.index, by: nil, into: &notifications)
                if !entries[next.index].inside && entries[next.index].pending == nil { entries.remove(at: next.index) }
            case .dwellBySilence:
                let position = lastUpdate ?? placeholderUpdate
                fireDwell(
                    entry: next.index, position: position, distance: exactDistance(entries[next.index], at: position),
                    into: &notifications)
            case .stale:
                staleOut(watch: entries[next.index].watch, into: &notifications)
            }
        }
        return notifications
    }

    /// A `stale` exit from every stay of watch `w`; pending enters of it are dropped.
    private mutating func staleOut(watch w: Int32, into notifications: inout [FenceNotification]) {
        let publishesExit = snapshot.rules[Int(w)].publishesExit
        let position = lastUpdate ?? placeholderUpdate
        var i = 0
        while i < entries.count {
            guard entries[i].watch == w else {
                i += 1
                continue
            }
            if entries[i].inside { decided() }
            if entries[i].inside && publishesExit {
                notifications.append(
                    notification(
                        entry: entries[i], type: .exit, reason: .stale, position: position,
                        distance: exactDistance(entries[i], at: position), dwellSeconds: max(0, position.time - entries[i].since),
                        decidedAt: position.time))
            }
            entries.remove(at: i)
        }
    }

    /// Never used in practice (entries exist only after an update); keeps the code total.
    var placeholderUpdate: LocationUpdate { LocationUpdate(device: device, lat: 0, lon: 0, time: 0) }

    /// Stops the gateway clocks (silence, stale) at `now`, e.g. while the feed's broker or gpsd
    /// connection is down. Updates still handled meanwhile resume the clocks first.
    public mutating func pause(at now: Double) {
        if pausedAt == nil { pausedAt = now }
    }

    /// Restarts the gateway clocks at `now`: after ``pause(at:)`` they go on where they stopped
    /// (shifted by the time paused); otherwise (a restored monitor, a gateway start) they start
    /// afresh from `now`.
    public mutating func resume(at now: Double) {
        if let pausedAt {
            let shift = now - pausedAt
            lastReceived += shift
            for i in entries.indices { entries[i].lastSameSideReceived += shift }
            self.pausedAt = nil
        } else {
            lastReceived = now
            for i in entries.indices { entries[i].lastSameSideReceived = now }
        }
    }

    /// True while the clocks are paused.
    public var isPaused: Bool { pausedAt != nil }

    // MARK: - Reloads

    /// Switches to `newSnapshot` (a reload). A stay whose (trigger, layer, fence) the new
    /// snapshot no longer has for this device (fence removed, trigger removed, `where` or
    /// `devices` changed) exits with reason `fenceRemoved` at the last known position, decided
    /// with the old snapshot's trigger settings and fence; pending enters there are dropped.
    /// A fence's geometry or buffer may change: the stay goes on and the next update decides.
    /// A visit's speed watch goes on against its limit as read again (none any more: it ends,
    /// an overspeed without `speedOk`).
    /// A fence new to a trigger with `initial: baseline` that already knows the device is
    /// recorded silently where the last known position is inside it; other new fences get a
    /// normal enter from the next update. (A restored monitor cannot tell which fences are new:
    /// ``restore(from:snapshot:now:)`` treats all as known.)
    public mutating func adopt(_ newSnapshot: EngineSnapshot, now: Double) -> [FenceNotification] {
        guard newSnapshot !== snapshot else { return [] }
        var changed = false
        return adopt(newSnapshot, now: now, stateChanged: &changed)
    }

    /// ``adopt(_:now:)`` also telling whether persisted state changed.
    public mutating func adopt(_ newSnapshot: EngineSnapshot, now: Double, stateChanged: inout Bool) -> [FenceNotification] {
        guard newSnapshot !== snapshot else { return [] }
        let old = snapshot
        var notifications: [FenceNotification] = []
        var kept: [Entry] = []
        for var entry in entries {
            if let w = newSnapshot.watchNumbers[entry.watchKey],
                newSnapshot.watches[Int(w)].settings.applies(to: device),
                let f = newSnapshot.fenceNumbers[EngineSnapshot.FenceKey(layer: entry.layer, id: entry.fenceID)],
                let buffer = newSnapshot.buffer(fence: Int(f), watch: Int(w))
            {
                entry.watch = w
                entry.fence = f
                entry.buffer = buffer
                entry.fenceName = newSnapshot.fences[Int(f)].fence.name
                if DeviceMonitor.carrySpeed(of: &entry, to: newSnapshot, watch: Int(w), fence: Int(f)) {
                    stateChanged = true
                    decided()
                }
                kept.append(entry)
                continue
            }
            stateChanged = true
            decided()
            if entry.inside && old.watches[Int(entry.watch)].settings.rule.publishesExit {
                let position = lastUpdate ?? placeholderUpdate
                notifications.append(
                    notification(
                        entry: entry, type: .exit, reason: .fenceRemoved, position: position,
                        distance: exactDistance(entry, at: position, in: old),
                        dwellSeconds: max(0, position.time - entry.since), decidedAt: position.time, in: old))
            }
        }
        entries = kept
        snapshot = newSnapshot
        nearby = FenceIndex.NearbyCache()
        computeMasks()
        if baselineNewFences(since: old) {
            stateChanged = true
            decided()
        }
        return notifications
    }

    /// `initial: baseline` for fences new to a trigger that already knows the device: no state
    /// ever existed for them, so where the last known position is inside one, the stay is
    /// recorded silently (as on a first update). Returns true if any was recorded.
    /// (A trigger new to the device needs nothing here: its first update applies `initial`.)
    private mutating func baselineNewFences(since old: EngineSnapshot) -> Bool {
        guard let fix = lastFix, snapshot.rules.contains(where: \.baseline) else { return false }
        let update = fix.update(device: device)
        let accuracy = max(0, fix.accuracy ?? 0)
        var added = false
        let snapshot = self.snapshot
        snapshot.index.query(update.coordinate, radius: accuracyApplies ? accuracy : 0) { f in
            if snapshot.hasFollowingFences, snapshot.fenceFollows[f] == device { return }
            let fence = snapshot.fences[f]
            let key = EngineSnapshot.FenceKey(layer: fence.fence.layer, id: fence.fence.id)
            var distance: Double?
            snapshot.forEachWatch(ofFence: f) { f, w, buffer in
                let rule = snapshot.rules[w]
                guard rule.baseline, applicable.contains(w), knownMask.contains(w) else { return }
                let watchKey = snapshot.watches[w].key
                if let ow = old.watchNumbers[watchKey], let of = old.fenceNumbers[key], old.buffer(fence: Int(of), watch: Int(ow)) != nil {
                    return  // not new: its state (outside, or an entry) already exists
                }
                if entries.contains(where: { $0.watch == Int32(w) && $0.fence == Int32(f) }) { return }
                let s = distance ?? fence.signedDistance(to: update.coordinate)
                distance = s
                let d = s - buffer
                guard rule.relationship.enters(distance: d, radius: rule.usesAccuracy ? accuracy : 0) else { return }
                entries.append(
                    Entry(
                        trigger: snapshot.watches[w].settings.trigger, layer: snapshot.watches[w].settings.layer,
                        fenceID: fence.fence.id, fenceName: fence.fence.name, watchKey: watchKey, watch: Int32(w),
                        fence: Int32(f), buffer: buffer, inside: true, baseline: true, since: fix.time, dwellFired: false,
                        pending: nil, lastDistance: d, lastSameSideFix: fix.time, lastSameSideReceived: lastReceived))
                added = true
            }
        }
        return added
    }
}
