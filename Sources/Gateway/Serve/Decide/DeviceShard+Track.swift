import GeotriggerCore

/// Recent tracks (the console's `track` query, docs/control-plane.md): each device's accepted
/// positions of the last 24 hours, thinned to one per 10 s of fix time (``RecentTrack``), kept
/// in its slot while it is in memory and in ``State/hibernatedTracks`` while it hibernates;
/// dropped when the device is forgotten, in memory only (a restart loses them). Together they
/// hold at most ``trackBudget`` bytes (the shard's share of `output.trackMemory`): past it the
/// oldest chunk of 256 positions among the shard's devices goes.
extension DeviceShard {
    /// Records an accepted fix in `slot`'s track; returns the change in the bytes it holds.
    ///
    /// What it costs an update, under the shard's lock and with no lookup (the track is in the
    /// slot already in hand): for a fix within 10 s of fix time of the last kept one, a
    /// subtraction and a comparison. A kept fix (one per 10 s at most) also pays a distance, a
    /// 6-byte append, a look at the oldest chunk (expiry) and the sum of its chunks' sizes
    /// (about 34 for a day).
    func record(_ update: LocationUpdate, in slot: inout Slot) -> Int {
        guard slot.track.record(update.coordinate, time: update.time, accuracy: update.accuracy) else { return 0 }
        slot.track.expire(now: update.time)
        let bytes = slot.track.bytes
        defer { slot.trackBytes = bytes }
        return bytes - slot.trackBytes
    }

    /// Under the lock, with the tracks over ``trackBudget``: drops the oldest chunk among the
    /// shard's tracks (in memory or hibernated) until they fit. A scan of the devices per chunk
    /// dropped, which happens once per 256 positions kept at most.
    func trimTracks(_ s: inout State) {
        while s.trackBytes > trackBudget {
            var oldest: (device: String, time: Double, hibernated: Bool)?
            for (device, box) in s.slots {
                if let time = box.slot.track.oldestTime, time < oldest?.time ?? .infinity { oldest = (device, time, false) }
            }
            for (device, kept) in s.hibernatedTracks {
                if let time = kept.track.oldestTime, time < oldest?.time ?? .infinity { oldest = (device, time, true) }
            }
            guard let oldest else { return }
            if oldest.hibernated {
                var kept = s.hibernatedTracks[oldest.device]!
                kept.track.dropOldestChunk()
                let bytes = kept.track.oldestTime == nil ? 0 : kept.track.bytes
                s.trackBytes += bytes - kept.bytes
                s.hibernatedTracks[oldest.device] = bytes == 0 ? nil : (kept.track, bytes)
            } else {
                let box = s.slots[oldest.device]!
                box.slot.track.dropOldestChunk()
                // An emptied track gives back its array too.
                if box.slot.track.oldestTime == nil { box.slot.track = RecentTrack() }
                let bytes = box.slot.track.oldestTime == nil ? 0 : box.slot.track.bytes
                s.trackBytes += bytes - box.slot.trackBytes
                box.slot.trackBytes = bytes
            }
        }
    }

    /// The answer to ``Query/track(device:since:offset:limit:)`` (under the lock, on the shard's
    /// worker): `device`'s positions from `since` (nil: 24 hours before `now`, wall clock), the
    /// first `offset` skipped, at most `limit`, after dropping what is older than 24 hours.
    /// An unknown device gets no ``QueryAnswer/track``; a hibernated or saved one without a
    /// track, an empty one.
    func track(of device: String, since: Double?, offset: Int, limit: Int, state s: inout State, now: Double) -> QueryAnswer {
        var answer = QueryAnswer()
        let since = since ?? now - RecentTrack.window
        if let box = s.slots[device] {
            if box.slot.track.expire(now: now) > 0 {
                let bytes = box.slot.track.bytes
                s.trackBytes += bytes - box.slot.trackBytes
                box.slot.trackBytes = bytes
            }
            answer.track = box.slot.track.positions(since: since, offset: offset, limit: limit)
        } else if var kept = s.hibernatedTracks[device] {
            if kept.track.expire(now: now) > 0 {
                let bytes = kept.track.oldestTime == nil ? 0 : kept.track.bytes
                s.trackBytes += bytes - kept.bytes
                s.hibernatedTracks[device] = bytes == 0 ? nil : (kept.track, bytes)
                kept.bytes = bytes
            }
            answer.track = kept.track.positions(since: since, offset: offset, limit: limit)
        } else if s.hibernated[device] != nil || saved.contains(device) {
            answer.track = ([], false)
        }
        return answer
    }
}
