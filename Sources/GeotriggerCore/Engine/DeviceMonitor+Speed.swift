extension DeviceMonitor {
    /// A visit's ``SpeedWatch`` under a trigger with `speedLimit` (docs/trips.md "Speed limits"),
    /// with its fence's limit in that trigger, read once when the watch begins (and again at a
    /// reload).
    struct SpeedTrack: Sendable, Equatable {
        /// m/s; nil: the fence has no readable limit, and nothing is watched.
        var limit: Double?
        var watch: SpeedWatch
    }

    /// Feeds `update` to the speed watch of every visit whose trigger has a `speedLimit` and
    /// took the update (not `rejected` by its `filter`), where the update is inside: the visit
    /// is confirmed and no exit is pending. A visit's watch begins at its first such update,
    /// measuring from `previous` (the device's fix before it, inside the fence or not). An
    /// `overspeed` or `speedOk` the watch decides is a decision a restart must not lose; it is
    /// published as `rule` publishes enter (`overspeed`) and exit (`speedOk`), at the deciding
    /// update, with the visit of the stay. Returns true if persisted state changed.
    ///
    /// The watch ends with its visit: a device that leaves the fence while overspeed gets the
    /// exit and no `speedOk`, and its next visit begins with a new watch.
    mutating func watchSpeeds(
        _ update: LocationUpdate, previous: Fix?, rejected: WatchMask, into notifications: inout [FenceNotification]
    ) -> Bool {
        var changed = false
        for i in entries.indices {
            let w = Int(entries[i].watch)
            guard snapshot.rules[w].speedLimited, entries[i].inside, entries[i].pending == nil, !rejected.contains(w) else {
                continue
            }
            if entries[i].speedTracks.isEmpty {
                entries[i].speedTracks = [
                    SpeedTrack(
                        limit: snapshot.speedLimit(fence: Int(entries[i].fence), watch: w),
                        watch: SpeedWatch(after: previous?.update(device: device)))
                ]
            }
            guard let limit = entries[i].speedTracks[0].limit,
                let event = entries[i].speedTracks[0].watch.update(update, limit: limit)
            else { continue }
            changed = true
            decided()
            let rule = snapshot.rules[w]
            let type: NotificationType = event == .overspeed ? .overspeed : .speedOk
            guard type == .overspeed ? rule.publishesEnter : rule.publishesExit else { continue }
            var note = notification(
                entry: entries[i], type: type, reason: nil, position: update,
                distance: exactDistance(entries[i], at: update), dwellSeconds: nil, decidedAt: update.time)
            note.speed = entries[i].speedTracks[0].watch.lastSpeed
            note.speedLimit = limit
            notifications.append(note)
        }
        return changed
    }

    /// Entry `entry`'s speed watch as it goes on in `snapshot` (a reload, or a restore), where
    /// the entry is watch `w` and fence `f`: its limit read again; none when the trigger has no
    /// `speedLimit` there any more or the fence no readable limit (an overspeed then ends
    /// without `speedOk`). Returns true if an overspeed ended so.
    static func carrySpeed(of entry: inout Entry, to snapshot: EngineSnapshot, watch w: Int, fence f: Int) -> Bool {
        guard !entry.speedTracks.isEmpty else { return false }
        if snapshot.rules[w].speedLimited, let limit = snapshot.speedLimit(fence: f, watch: w) {
            entry.speedTracks[0].limit = limit
            return false
        }
        let wasOverspeed = entry.speedTracks[0].watch.isOverspeed
        entry.speedTracks = []
        return wasOverspeed
    }

    /// True while entry `i`'s speed watch says overspeed (for tests and the persisted state).
    func isOverspeed(entry i: Int) -> Bool { entries[i].speedTracks.first?.watch.isOverspeed ?? false }

    /// The visits that are overspeed now, as (trigger, layer, fence).
    public var overspeedStays: [Stay] {
        entries.indices.filter { isOverspeed(entry: $0) }.map {
            let e = entries[$0]
            return Stay(trigger: e.trigger, layer: e.layer, fence: e.fenceID, since: e.since, visit: visit(of: e))
        }
    }
}
