extension DeviceMonitor {
    /// Version 1 of the persisted form.
    static let stateMagic: [UInt8] = Array("GTM1".utf8)
    /// Version 2: version 1 with one more flag per stay, after its pending crossing: overspeed
    /// (`speedLimit`). Written only when some stay is overspeed, so every other state keeps the
    /// bytes of version 1 (and a gateway that reads only those).
    static let stateMagicWithSpeed: [UInt8] = Array("GTM2".utf8)

    /// The monitor's persisted state as bytes (compact; typically under 100 bytes for a device
    /// outside every fence): device, last accepted update, the triggers that know the device, and
    /// every stay or pending crossing, with whether its visit is overspeed. Gateway-clock
    /// readings are not included (they start afresh on restore), nor a speed watch's running
    /// hold or the fix it measures from (docs/trips.md "Speed limits": a hold begins afresh after
    /// a restart). Deterministic: equal states give equal bytes.
    public func serialized() -> [UInt8] {
        MonitorRecord(device: device, lastUpdate: lastUpdate, known: known, entries: entries).serialized()
    }

    /// Rebuilds a monitor from ``serialized()`` bytes with the current `snapshot`, its gateway
    /// clocks starting afresh at `now`. Stays whose (trigger, layer, fence) `snapshot` no longer
    /// has for this device end with `fenceRemoved` exits, returned here (the trigger's current
    /// settings decide whether and where they are published, if it still exists for that layer;
    /// the fence's properties are no longer known and are empty). Pending crossings resume; an
    /// overspeed visit stays overspeed where its trigger still has a limit in that fence (its
    /// watch measuring from the last accepted update), and ends without `speedOk` where not.
    public static func restore(
        from bytes: [UInt8], snapshot: EngineSnapshot, now: Double
    ) throws(MonitorStateError) -> (monitor: DeviceMonitor, notifications: [FenceNotification]) {
        let record = try MonitorRecord(bytes: bytes)
        let device = record.device
        var monitor = DeviceMonitor(device: device, snapshot: snapshot, now: now)
        monitor.lastUpdate = record.lastUpdate
        monitor.known = record.known
        let entries = record.entries.map { entry in
            var e = entry
            e.lastSameSideReceived = now
            // An overspeed visit's watch measures from the last accepted update; its limit is
            // read below, from the snapshot.
            if !e.speedTracks.isEmpty { e.speedTracks = [SpeedTrack(limit: nil, watch: SpeedWatch(after: monitor.lastUpdate, overspeed: true))] }
            return e
        }
        monitor.computeMasks()
        var notifications: [FenceNotification] = []
        for var entry in entries {
            let w = snapshot.watchNumbers[entry.watchKey]
            if let w, snapshot.watches[Int(w)].settings.applies(to: device),
                let f = snapshot.fenceNumbers[EngineSnapshot.FenceKey(layer: entry.layer, id: entry.fenceID)],
                let buffer = snapshot.buffer(fence: Int(f), watch: Int(w))
            {
                entry.watch = w
                entry.fence = f
                entry.buffer = buffer
                entry.fenceName = snapshot.fences[Int(f)].fence.name
                _ = carrySpeed(of: &entry, to: snapshot, watch: Int(w), fence: Int(f))
                monitor.entries.append(entry)
                continue
            }
            guard entry.inside else { continue }
            let watch = w.map { snapshot.watches[Int($0)] }
            guard watch?.settings.rule.publishesExit ?? true else { continue }
            let position = monitor.lastUpdate ?? monitor.placeholderUpdate
            let fence = Fence(
                id: entry.fenceID, layer: entry.layer, name: entry.fenceName,
                properties: JSONObject(), geometry: .points([]))
            notifications.append(
                monitor.notification(
                    entry: entry, watch: watch, fence: fence, type: .exit, reason: .fenceRemoved, position: position,
                    distance: entry.lastDistance, dwellSeconds: max(0, position.time - entry.since),
                    decidedAt: position.time))
        }
        return (monitor, notifications)
    }
}
