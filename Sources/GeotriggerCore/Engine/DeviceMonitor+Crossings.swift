extension DeviceMonitor {
    /// Infers the stays between the previous accepted fix `previous` (A) and `update` (B) for the
    /// triggers with `crossings` on (docs/crossings.md "When a stay is inferred"), appending their
    /// enter and exit notifications in time order; returns true if it appended any.
    ///
    /// For a (trigger, fence) it infers a stay when all of these hold:
    /// - `B.time - A.time <= crossingMaxGap`, the trigger applies to the device, knew it before
    ///   B (it took an earlier update), and its `filter` accepts B;
    /// - A was decided outside: the monitor holds no entry for (trigger, fence), so neither a
    ///   stay (also one inside the exit margin) nor a pending enter or exit. A pending
    ///   confirmation is left to the ordinary rules (B confirms or cancels it as usual);
    /// - B is outside too: its point, and with `useGeometryWithAccuracy` its accuracy circle
    ///   by the trigger's enter relation (else B is an ordinary enter);
    /// - the straight lon/lat segment A-B meets the fence's buffered geometry, A's and B's
    ///   points being outside it (``PreparedFence/crossing(along:buffer:)``);
    /// - the interpolated stay (exit time minus enter time) is at least `enterAfter`.
    /// Times are interpolated by distance along A-B and rounded to the millisecond. No state is
    /// left behind: the visit opens and closes within the gap, so nothing new is persisted.
    mutating func inferCrossings(
        from previous: Fix, to update: LocationUpdate, rejected: WatchMask, into notifications: inout [FenceNotification]
    ) -> Bool {
        let a = Coordinate(lat: previous.lat, lon: previous.lon), b = update.coordinate
        guard a != b else { return false }
        let snapshot = self.snapshot
        let gap = update.time - previous.time
        // Measured only when some fence is along the segment (it costs trigonometry).
        var measured: LonLatSegment?
        var found: [(fence: Int, watch: Int, buffer: Double, crossing: PreparedFence.SegmentCrossing)] = []
        snapshot.index.query(segmentFrom: a, to: b, cache: nearby) { f in
            // A device never enters the fence that follows it.
            if snapshot.hasFollowingFences, snapshot.fenceFollows[f] == device { return }
            var tracedBuffer = Double.nan
            var crossing: PreparedFence.SegmentCrossing?
            var endDistance = Double.nan
            snapshot.forEachWatch(ofFence: f) { f, w, buffer in
                let rule = snapshot.rules[w]
                guard rule.crossings, gap <= rule.crossingMaxGap, applicable.contains(w), knownMask.contains(w),
                    !rejected.contains(w)
                else { return }
                for i in entries.indices where entries[i].fence == Int32(f) && entries[i].watch == Int32(w) { return }
                if buffer != tracedBuffer {
                    tracedBuffer = buffer
                    let segment = measured ?? LonLatSegment(from: a, to: b)
                    measured = segment
                    crossing = snapshot.fences[f].crossing(along: segment, buffer: buffer)
                }
                guard let crossing else { return }
                if rule.usesAccuracy, let accuracy = update.accuracy, accuracy > 0 {
                    if endDistance.isNaN { endDistance = snapshot.fences[f].signedDistance(to: b) }
                    if rule.relationship.enters(distance: endDistance - buffer, radius: accuracy) { return }
                }
                found.append((f, w, buffer, crossing))
            }
        }
        guard !found.isEmpty else { return false }
        var inferred: [FenceNotification] = []
        for (f, w, buffer, crossing) in found {
            let rule = snapshot.rules[w]
            let enterTime = DeviceMonitor.millisecond(previous.time + gap * crossing.enterFraction)
            let exitTime = max(enterTime, DeviceMonitor.millisecond(previous.time + gap * crossing.exitFraction))
            guard exitTime - enterTime >= rule.enterAfter else { continue }
            let watch = snapshot.watches[w]
            let fence = snapshot.fences[f].fence
            let entry = Entry(
                trigger: watch.settings.trigger, layer: watch.settings.layer, fenceID: fence.id, fenceName: fence.name,
                watchKey: watch.key, watch: Int32(w), fence: Int32(f), buffer: buffer, inside: true, baseline: false,
                since: enterTime, dwellFired: false, pending: nil, lastDistance: 0, lastSameSideFix: enterTime,
                lastSameSideReceived: lastReceived)
            if rule.publishesEnter {
                let position = LocationUpdate(
                    device: device, lat: crossing.enterPoint.lat, lon: crossing.enterPoint.lon, time: enterTime)
                var note = notification(
                    entry: entry, type: .enter, reason: nil, position: position, distance: 0, dwellSeconds: nil,
                    decidedAt: enterTime)
                note.inferred = true
                inferred.append(note)
            }
            if rule.publishesExit {
                let position = LocationUpdate(
                    device: device, lat: crossing.exitPoint.lat, lon: crossing.exitPoint.lon, time: exitTime)
                var note = notification(
                    entry: entry, type: .exit, reason: .moved, position: position, distance: 0,
                    dwellSeconds: exitTime - enterTime, decidedAt: exitTime)
                note.inferred = true
                inferred.append(note)
            }
        }
        guard !inferred.isEmpty else { return false }
        // In time order across fences (a stable sort keeps each enter before its exit).
        inferred.sort { $0.position.time < $1.position.time }
        notifications += inferred
        return true
    }

    /// `t` rounded to the millisecond.
    static func millisecond(_ t: Double) -> Double { (t * 1000).rounded() / 1000 }
}
