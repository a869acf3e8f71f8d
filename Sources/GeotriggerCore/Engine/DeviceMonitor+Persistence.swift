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
        var w = StateWriter()
        let speeds = entries.indices.contains { isOverspeed(entry: $0) }
        for b in speeds ? DeviceMonitor.stateMagicWithSpeed : DeviceMonitor.stateMagic { w.write(UInt64(b)) }
        w.write(device)
        w.write(lastUpdate != nil)
        if let u = lastUpdate { write(u, to: &w) }
        w.write(known.count)
        for k in known { w.write(fixed: k) }
        w.write(entries.count)
        for e in entries {
            w.write(e.trigger)
            w.write(e.layer)
            w.write(e.fenceID)
            w.write(e.fenceName)
            w.write(e.inside)
            w.write(e.baseline)
            w.write(e.since)
            w.write(e.dwellFired)
            w.write(e.lastDistance)
            w.write(e.lastSameSideFix)
            w.write(e.pending != nil)
            if let p = e.pending {
                w.write(p.toInside)
                w.write(p.distance)
                write(p.crossing, to: &w)
            }
            if speeds { w.write(e.speedTracks.first?.watch.isOverspeed ?? false) }
        }
        return w.bytes
    }

    private func write(_ u: LocationUpdate, to w: inout StateWriter) {
        w.write(u.lat)
        w.write(u.lon)
        w.write(u.time)
        w.write(u.accuracy)
        w.write(u.speed)
        w.write(u.heading)
        w.write(u.altitude)
    }

    private static func readUpdate(_ r: inout StateReader, device: String) throws(MonitorStateError) -> LocationUpdate {
        let lat = try r.double(), lon = try r.double(), time = try r.double()
        return LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: try r.optionalDouble(), speed: try r.optionalDouble(),
            heading: try r.optionalDouble(), altitude: try r.optionalDouble())
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
        var r = StateReader(bytes)
        var magic: [UInt64] = []
        for _ in stateMagic { magic.append(try r.varint()) }
        guard magic == stateMagic.map(UInt64.init) || magic == stateMagicWithSpeed.map(UInt64.init) else {
            throw MonitorStateError("not a geotrigger monitor state (version 1 or 2)")
        }
        let speeds = magic == stateMagicWithSpeed.map(UInt64.init)
        let device = try r.string()
        var monitor = DeviceMonitor(device: device, snapshot: snapshot, now: now)
        if try r.bool() { monitor.lastUpdate = try readUpdate(&r, device: device) }
        let knownCount = try r.count()
        for _ in 0..<knownCount { monitor.known.append(try r.fixed()) }
        var entries: [Entry] = []
        let entryCount = try r.count()
        for _ in 0..<entryCount {
            let trigger = try r.string(), layer = try r.string(), fenceID = try r.string()
            let fenceName = try r.optionalString()
            var e = Entry(
                trigger: trigger, layer: layer, fenceID: fenceID, fenceName: fenceName,
                watchKey: StableHash.watchKey(trigger: trigger, layer: layer), watch: -1, fence: -1, buffer: 0,
                inside: try r.bool(), baseline: try r.bool(), since: try r.double(), dwellFired: try r.bool(),
                pending: nil, lastDistance: try r.double(), lastSameSideFix: try r.double(), lastSameSideReceived: now)
            if try r.bool() {
                let toInside = try r.bool(), distance = try r.double()
                e.pending = Pending(toInside: toInside, crossing: try readUpdate(&r, device: device), distance: distance)
            }
            if speeds, try r.bool() {
                // Its limit is read below, from the snapshot.
                e.speedTracks = [SpeedTrack(limit: nil, watch: SpeedWatch(after: monitor.lastUpdate, overspeed: true))]
            }
            entries.append(e)
        }
        guard r.atEnd else { throw MonitorStateError("\(bytes.count - r.offset) unexpected bytes at the end") }
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
