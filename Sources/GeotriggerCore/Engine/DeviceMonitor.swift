/// The per-device monitor (docs/configuration.md "Timing"; docs/architecture.md "The way of one location
/// update"): a value kept by the gateway's device shard for that device (under the shard's
/// lock, so one step at a time), driven by the device's updates and by the gateway's clock.
///
/// State is kept only where there is something to remember: one ``Entry`` per (trigger, layer,
/// fence) where the device is inside or a crossing waits for confirmation; "outside" is the
/// absence of an entry. A device outside every fence holds its last accepted update, the keys of
/// the triggers that have seen it (so `initial` applies only to state that never existed) and a
/// few clocks.
///
/// Two clocks: *fix time* (the updates' `time`) orders updates and decides crossings, holds
/// and dwell; the *gateway clock* (`now`, seconds, any monotonic origin within one process)
/// decides confirmation by silence and `staleAfter`. Gateway-clock readings are not persisted:
/// a restored monitor starts them afresh (``restore(from:snapshot:now:)``), and
/// ``pause(at:)``/``resume(at:)`` stop them while a feed's connection is down.
///
/// Semantics in detail:
/// - Updates with a fix time older than (or equal to) the last accepted one are dropped
///   (`outOfOrder`, `duplicate`) and change nothing, not even liveness.
/// - A trigger whose `filter` rejects an update ignores it; if every applicable trigger rejects
///   it the update is `filtered`: it keeps the device alive (stale clock) and changes nothing else.
/// - Sides: from outside, an update is inside when the trigger's enter relation holds; from
///   inside (or a pending enter), it is outside when the exit relation holds at `d - exitMargin`.
///   Between the two (accuracy dead band, exit margin) an update stays on the side it was.
/// - A crossing (first update on the new side) is confirmed at once when the hold
///   (`enterAfter`/`exitAfter`) is 0; else by a later update on the same side with fix time >=
///   crossing + hold, or when no update has arrived for the hold on the gateway clock since the
///   last update on the new side was received. An update back on the old side cancels it.
/// - `dwell` fires once per visit (baseline stays included), independent of `rule`: by an inside
///   update with fix time >= enter + dwell, or by silence: no update since the last inside one was
///   received for as long as the visit still needed (dwell − (its fix time − enter)). Not while
///   an exit is pending.
/// - `staleAfter`: no accepted or filtered update for that long on the gateway clock: every
///   inside stay of that trigger exits with reason `stale` at the last known position; pending
///   enters are dropped. The next update inside is a normal enter.
/// - `initial` applies when the trigger never saw this device; `baseline` records the stay
///   silently (visit id = the baseline's id). After a restart the trigger has seen it.
/// - `speedLimit`: each visit of a trigger with one has a ``SpeedWatch`` against its fence's
///   limit, fed the updates inside it (none while an exit is pending); `overspeed` and
///   `speedOk` are published as `rule` publishes enter and exit. The watch ends with the visit
///   (``watchSpeeds(_:previous:rejected:into:)``).
public struct DeviceMonitor: Sendable {
    /// A crossing waiting for confirmation.
    struct Pending: Sendable, Equatable {
        var toInside: Bool
        var crossing: LocationUpdate
        var distance: Double
    }

    /// The state of one (trigger, layer, fence) where the device is inside or crossing.
    struct Entry: Sendable, Equatable {
        var trigger: String
        var layer: String
        var fenceID: String
        var fenceName: String?
        var watchKey: UInt64
        /// Numbers of the watch and fence in the monitor's snapshot, and the effective buffer.
        var watch: Int32
        var fence: Int32
        var buffer: Double
        /// Confirmed inside (a visit is going on).
        var inside: Bool
        /// The visit began as a silent baseline.
        var baseline: Bool
        /// Fix time of the visit's enter crossing (or baseline update).
        var since: Double
        var dwellFired: Bool
        var pending: Pending?
        /// Signed distance of the last update evaluated (for exits at the last known position).
        var lastDistance: Double
        /// Fix time and gateway-clock receipt of the last update on the current (or pending) side.
        var lastSameSideFix: Double
        var lastSameSideReceived: Double
        /// The visit's speed watch, under a trigger with `speedLimit`: none, or one. Out of line,
        /// so that an entry of any other trigger grows by one word and allocates nothing.
        var speedTracks: [SpeedTrack] = []
    }

    public let device: String
    /// The snapshot the monitor decides with; change it with ``adopt(_:now:)``.
    public internal(set) var snapshot: EngineSnapshot
    /// The last accepted update.
    public internal(set) var lastUpdate: LocationUpdate? {
        get { lastFix?.update(device: device) }
        set { lastFix = newValue.map(Fix.init) }
    }
    var lastFix: Fix?
    /// The fix time of the last accepted update: the device's own clock.
    public var lastFixTime: Double? { lastFix?.time }
    /// Gateway clock: the last accepted or filtered update, or the (re)start.
    var lastReceived: Double
    var pausedAt: Double?
    /// Some applicable watch has a `speedLimit` (computed with the masks below; here, in the
    /// padding after `pausedAt`, where a flag costs no byte).
    var speedLimitsApply: Bool
    /// Counts the monitor's decisions that a restart must not lose: a stay confirmed, ended or
    /// recorded by a baseline, a dwell fired, an overspeed or speedOk decided (published or
    /// not), a trigger that newly knows the device. A pending
    /// crossing starting or being cancelled, and the last position, do not count: they live in
    /// memory until a hibernation or a stop (docs/configuration.md "Durability"). Not persisted; compare two
    /// readings of one run. (Here, in the padding after `pausedAt`: the
    /// monitor stays 240 bytes.)
    public internal(set) var decisions: UInt32 = 0
    /// Keys of the watches (trigger, layer) that have state for this device.
    var known: [UInt64]
    var entries: [Entry]
    /// Bit `w` set: watch `w` of the snapshot applies to this device (its `devices` globs).
    var applicable: WatchMask
    /// Bit `w` set: watch `w` is in ``known``.
    var knownMask: WatchMask
    /// Some applicable watch has a `filter`.
    var filtersApply: Bool
    /// Some applicable watch compares accuracy circles.
    var accuracyApplies: Bool
    /// Every applicable watch is in ``known``.
    var allKnown: Bool
    /// Some applicable watch infers stays between sparse fixes (`crossings`).
    var crossingsApply: Bool
    /// The fences near the device's recent positions, for the next query of `snapshot.index`.
    var nearby = FenceIndex.NearbyCache()

    /// A monitor for a device never seen before, from gateway-clock time `now`.
    public init(device: String, snapshot: EngineSnapshot, now: Double) {
        self.device = device
        self.snapshot = snapshot
        self.lastFix = nil
        self.lastReceived = now
        self.pausedAt = nil
        self.known = []
        self.entries = []
        self.applicable = WatchMask()
        self.knownMask = WatchMask()
        self.filtersApply = false
        self.accuracyApplies = false
        self.allKnown = false
        self.crossingsApply = false
        self.speedLimitsApply = false
        computeMasks()
    }

    /// One more decision a restart must not lose (``decisions``).
    mutating func decided() { decisions &+= 1 }

    /// True when the device is outside every fence with nothing pending (its memory is minimal).
    public var isIdle: Bool { entries.isEmpty }

    /// Recomputes the per-snapshot bit masks.
    mutating func computeMasks() {
        applicable = WatchMask(count: snapshot.watches.count)
        knownMask = WatchMask(count: snapshot.watches.count)
        filtersApply = false
        accuracyApplies = false
        allKnown = true
        crossingsApply = false
        speedLimitsApply = false
        for (w, watch) in snapshot.watches.enumerated() {
            let known = known.contains(watch.key)
            if known { knownMask.insert(w) }
            if watch.settings.applies(to: device) {
                applicable.insert(w)
                if watch.expressions.hasFilter { filtersApply = true }
                if watch.usesAccuracy { accuracyApplies = true }
                if watch.settings.crossings { crossingsApply = true }
                if watch.settings.speedLimit != nil { speedLimitsApply = true }
                if !known { allKnown = false }
            }
        }
    }

    // MARK: - Updates

    /// Takes one update of this device received at gateway-clock time `now`.
    public mutating func handle(_ update: LocationUpdate, receivedAt now: Double) -> MonitorOutcome {
        if pausedAt != nil { resume(at: now) }
        if let last = lastFix {
            if update.time < last.time { return MonitorOutcome(disposition: .outOfOrder) }
            if update.time == last.time { return MonitorOutcome(disposition: .duplicate) }
        }
        var rejected = WatchMask()
        if filtersApply {
            rejected = WatchMask(count: snapshot.watches.count)
            var anyAccepted = false
            var anyApplicable = false
            for (w, watch) in snapshot.watches.enumerated() where applicable.contains(w) {
                anyApplicable = true
                if watch.expressions.hasFilter && !watch.expressions.accepts(update) {
                    rejected.insert(w)
                } else {
                    anyAccepted = true
                }
            }
            if anyApplicable && !anyAccepted {
                lastReceived = now
                return MonitorOutcome(disposition: .filtered)
            }
        }
        lastReceived = now
        let previous = lastFix
        lastFix = Fix(update)
        var notifications: [FenceNotification] = []
        var changed = false
        // 0. Stays inferred between the previous fix and this one (`crossings`), before this
        // update's own crossings, which come later in time.
        if crossingsApply, let previous, let gap = snapshot.crossingMaxGap, update.time - previous.time <= gap {
            if inferCrossings(from: previous, to: update, rejected: rejected, into: &notifications) {
                changed = true
                decided()
            }
        }
        let point = update.coordinate
        var preparedPoint: PreparedPoint?
        /// Prepared for distances only when some fence is near (it costs trigonometry).
        func prepared() -> PreparedPoint {
            if let preparedPoint { return preparedPoint }
            let p = PreparedPoint(point)
            preparedPoint = p
            return p
        }
        let accuracy = (update.accuracy ?? 0) >= 0 ? (update.accuracy ?? 0) : 0
        let snapshot = self.snapshot
        // Distances are exact within the fence's reach (+ accuracy): enough to decide every
        // relation; beyond it they only have the right sign, and events recompute them exactly.
        let slack = accuracyApplies ? accuracy : 0

        // 1. Every stay or pending crossing, wherever the update is.
        var cachedFence = -1
        var cachedDistance = 0.0
        var i = 0
        while i < entries.count {
            let w = Int(entries[i].watch)
            if rejected.contains(w) {
                i += 1
                continue
            }
            let f = Int(entries[i].fence)
            if f != cachedFence {
                cachedFence = f
                cachedDistance = snapshot.fences[f].signedDistance(to: prepared(), within: snapshot.fenceReach[f] + slack)
            }
            let rule = snapshot.rules[w]
            let radius = rule.usesAccuracy ? accuracy : 0
            let d = cachedDistance - entries[i].buffer
            if step(
                entry: i, update: update, point: prepared(), distance: d, radius: radius, rule: rule, now: now,
                into: &notifications)
            {
                changed = true
            }
            if entries[i].inside || entries[i].pending != nil {
                i += 1
            } else {
                entries.remove(at: i)
            }
        }

        // 2. Fences near the update that have no entry yet: crossings in (or baselines).
        let queryRadius = slack
        let existing = entries.count
        // A copy: the closure below uses `self`, which must not be in an inout access meanwhile.
        var nearby = self.nearby
        defer { self.nearby = nearby }
        snapshot.index.query(point, radius: queryRadius, cache: &nearby) { f in
            // A device never enters the fence that follows it.
            if snapshot.hasFollowingFences, snapshot.fenceFollows[f] == device { return }
            var distance = Double.nan
            snapshot.forEachWatch(ofFence: f) { f, w, buffer in
                guard applicable.contains(w), !rejected.contains(w) else { return }
                for j in 0..<existing where entries[j].fence == Int32(f) && entries[j].watch == Int32(w) { return }
                if distance.isNaN {
                    distance =
                        f == cachedFence
                        ? cachedDistance
                        : snapshot.fences[f].signedDistance(to: prepared(), within: snapshot.fenceReach[f] + slack)
                }
                let rule = snapshot.rules[w]
                let radius = rule.usesAccuracy ? accuracy : 0
                let d = distance - buffer
                guard rule.relationship.enters(distance: d, radius: radius) else { return }
                changed = true
                let exact = abs(distance) > snapshot.fenceReach[f] + slack ? snapshot.fences[f].signedDistance(to: point) - buffer : d
                cross(fence: f, watch: w, buffer: buffer, update: update, distance: exact, now: now, into: &notifications)
            }
        }

        // 2b. The speed of every visit under a trigger with `speedLimit`, this update's enters
        // included (after them: an overspeed is about a visit).
        if speedLimitsApply, watchSpeeds(update, previous: previous, rejected: rejected, into: &notifications) {
            changed = true
        }

        // 3. Every trigger that took the update now knows the device.
        if !allKnown {
            var all = true
            for w in 0..<snapshot.watches.count where applicable.contains(w) && !knownMask.contains(w) {
                if rejected.contains(w) {
                    all = false
                    continue
                }
                knownMask.insert(w)
                known.append(snapshot.watches[w].key)
                changed = true
                decided()
            }
            allKnown = all
        }
        return MonitorOutcome(
            disposition: .accepted, notifications: notifications, stateChanged: changed, positionChanged: true)
    }

    /// A first update inside fence `f` for watch `w` (no entry): a baseline, an immediate enter,
    /// or a pending one.
    private mutating func cross(
        fence f: Int, watch w: Int, buffer: Double, update: LocationUpdate, distance d: Double, now: Double,
        into notifications: inout [FenceNotification]
    ) {
        let watch = snapshot.watches[w]
        let fence = snapshot.fences[f].fence
        let rule = snapshot.rules[w]
        var entry = Entry(
            trigger: watch.settings.trigger, layer: watch.settings.layer, fenceID: fence.id, fenceName: fence.name,
            watchKey: watch.key, watch: Int32(w), fence: Int32(f), buffer: buffer, inside: false, baseline: false,
            since: update.time, dwellFired: false, pending: nil, lastDistance: d, lastSameSideFix: update.time,
            lastSameSideReceived: now)
        if rule.baseline && !knownMask.contains(w) {
            entry.inside = true
            entry.baseline = true
            entries.append(entry)
            decided()
            return
        }
        entry.pending = Pending(toInside: true, crossing: update, distance: d)
        entries.append(entry)
        if rule.enterAfter == 0 {
            confirm(entry: entries.count - 1, by: nil, into: &notifications)
        }
    }

    /// Applies one update to entry `i`; returns true if persisted state changed.
    private mutating func step(
        entry i: Int, update: LocationUpdate, point: PreparedPoint, distance approximate: Double, radius: Double,
        rule: EngineSnapshot.Rule, now: Double, into notifications: inout [FenceNotification]
    ) -> Bool {
        let d = approximate
        let fence = snapshot.fences[Int(entries[i].fence)]
        let buffer = entries[i].buffer
        let reach = snapshot.fenceReach[Int(entries[i].fence)] + radius
        /// The exact distance (only needed when something is recorded or published).
        let exactDistance = { abs(d + buffer) <= reach ? d : fence.signedDistance(to: point, within: .infinity) - buffer }
        entries[i].lastDistance = d
        let tentativeInside = entries[i].pending?.toInside ?? entries[i].inside
        let updateInside =
            tentativeInside
            ? !rule.relationship.exits(distance: d - rule.exitMargin, radius: radius)
            : rule.relationship.enters(distance: d, radius: radius)
        if updateInside == tentativeInside {
            entries[i].lastSameSideFix = update.time
            entries[i].lastSameSideReceived = now
            if let pending = entries[i].pending {
                let hold = pending.toInside ? rule.enterAfter : rule.exitAfter
                guard update.time >= pending.crossing.time + hold else { return false }
                entries[i].lastDistance = exactDistance()
                confirm(entry: i, by: update, into: &notifications)
                return true
            }
            return checkDwell(entry: i, update: update, distance: exactDistance, rule: rule, into: &notifications)
        }
        if entries[i].pending != nil {
            // Back on the old side: the crossing is cancelled, the visit (if any) goes on.
            entries[i].pending = nil
            entries[i].lastSameSideFix = update.time
            entries[i].lastSameSideReceived = now
            if entries[i].inside {
                _ = checkDwell(entry: i, update: update, distance: exactDistance, rule: rule, into: &notifications)
            }
            return true
        }
        // A crossing out of a confirmed stay (an entry without pending is inside).
        let exact = exactDistance()
        entries[i].lastDistance = exact
        entries[i].pending = Pending(toInside: false, crossing: update, distance: exact)
        entries[i].lastSameSideFix = update.time
        entries[i].lastSameSideReceived = now
        if rule.exitAfter == 0 {
            confirm(entry: i, by: nil, into: &notifications)
        }
        return true
    }

    /// Confirms entry `i`'s pending crossing; `update` is the later same-side update that
    /// confirmed it (nil: at once, or by silence).
    mutating func confirm(entry i: Int, by update: LocationUpdate?, into notifications: inout [FenceNotification]) {
        guard let pending = entries[i].pending else { return }
        let rule = snapshot.rules[Int(entries[i].watch)]
        entries[i].pending = nil
        decided()
        if pending.toInside {
            entries[i].inside = true
            entries[i].baseline = false
            entries[i].since = pending.crossing.time
            entries[i].dwellFired = false
            if rule.publishesEnter {
                notifications.append(
                    notification(
                        entry: entries[i], type: .enter, reason: nil, position: pending.crossing,
                        distance: pending.distance, dwellSeconds: nil, decidedAt: pending.crossing.time))
            }
            if let update {
                let distance = entries[i].lastDistance
                _ = checkDwell(entry: i, update: update, distance: { distance }, rule: rule, into: &notifications)
            }
        } else {
            entries[i].inside = false
            if rule.publishesExit {
                notifications.append(
                    notification(
                        entry: entries[i], type: .exit, reason: .moved, position: pending.crossing,
                        distance: pending.distance, dwellSeconds: pending.crossing.time - entries[i].since,
                        decidedAt: pending.crossing.time))
            }
        }
    }

    /// Fires dwell for entry `i` if `update` (inside, no exit pending) shows the visit long enough.
    private mutating func checkDwell(
        entry i: Int, update: LocationUpdate, distance: () -> Double, rule: EngineSnapshot.Rule,
        into notifications: inout [FenceNotification]
    ) -> Bool {
        guard let dwell = rule.dwell, entries[i].inside, !entries[i].dwellFired, entries[i].pending == nil,
            update.time >= entries[i].since + dwell
        else { return false }
        fireDwell(entry: i, position: update, distance: distance(), into: &notifications)
        return true
    }

    mutating func fireDwell(entry i: Int, position: LocationUpdate, distance: Double, into notifications: inout [FenceNotification]) {
        let dwell = snapshot.rules[Int(entries[i].watch)].dwell ?? 0
        entries[i].dwellFired = true
        decided()
        notifications.append(
            notification(
                entry: entries[i], type: .dwell, reason: nil, position: position, distance: distance,
                dwellSeconds: max(dwell, position.time - entries[i].since), decidedAt: entries[i].since + dwell))
    }

    // MARK: - Notifications

    /// The exact signed distance from `position` to entry `entry`'s buffered boundary in `snapshot`.
    func exactDistance(_ entry: Entry, at position: LocationUpdate, in source: EngineSnapshot? = nil) -> Double {
        let snap = source ?? snapshot
        return snap.fences[Int(entry.fence)].signedDistance(to: position.coordinate) - entry.buffer
    }

    /// The visit id of an entry's stay.
    func visit(of entry: Entry) -> String {
        EventID.make(
            trigger: entry.trigger, layer: entry.layer, fence: entry.fenceID, device: device,
            type: entry.baseline ? "baseline" : "enter", time: entry.since)
    }

    /// Builds a notification for `entry`, evaluating its trigger's message in `snapshot` (or in
    /// `source`, e.g. the snapshot being replaced).
    func notification(
        entry: Entry, type: NotificationType, reason: ExitReason?, position: LocationUpdate, distance: Double,
        dwellSeconds: Double?, decidedAt: Double, in source: EngineSnapshot? = nil
    ) -> FenceNotification {
        let snap = source ?? snapshot
        return notification(
            entry: entry, watch: snap.watches[Int(entry.watch)], fence: snap.fences[Int(entry.fence)].fence, type: type,
            reason: reason, position: position, distance: distance, dwellSeconds: dwellSeconds, decidedAt: decidedAt)
    }

    /// Builds a notification for `entry` with `watch`'s message and delivery (nil: no message,
    /// local delivery) and `fence`'s name and properties.
    func notification(
        entry: Entry, watch: EngineSnapshot.Watch?, fence: Fence, type: NotificationType, reason: ExitReason?,
        position: LocationUpdate, distance: Double, dwellSeconds: Double?, decidedAt: Double
    ) -> FenceNotification {
        let (message, messageError) =
            watch?.expressions.message(fence: fence, update: position, notification: type) ?? (nil, nil)
        return FenceNotification(
            id: EventID.make(
                trigger: entry.trigger, layer: entry.layer, fence: entry.fenceID, device: device, type: type.rawValue,
                time: decidedAt),
            visit: visit(of: entry), trigger: entry.trigger, layer: entry.layer, fenceID: entry.fenceID,
            fenceName: fence.name, fenceProperties: fence.properties, device: device, type: type, reason: reason,
            position: position, distance: distance, dwellSeconds: dwellSeconds,
            message: message, messageError: messageError, delivery: watch?.settings.delivery ?? .local,
            decidedAt: decidedAt, schedule: watch?.settings.schedule, fenceTruncated: fence.truncated)
    }
}
