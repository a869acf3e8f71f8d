extension TrackPoint {
    /// The update this point stands for, as `replay` feeds it to the engine: the point's
    /// device, else `defaultDevice`; nil if the point has no time.
    public func locationUpdate(defaultDevice: String) -> LocationUpdate? {
        guard let time else { return nil }
        return LocationUpdate(
            device: device ?? defaultDevice, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: speed,
            heading: heading, altitude: altitude)
    }
}

/// What `replay` runs through the engine from a track file, and what it says about the file
/// on standard error first.
public struct TrackReplay: Sendable, Equatable {
    /// The updates, each device's in file order, the devices merged by fix time.
    public var updates: [LocationUpdate]
    /// One line each: what was ignored or skipped and why, which track became which device.
    public var notes: [String]
}

extension Track {
    /// The updates `replay` runs through the engine, and notes on what it left out
    /// (docs/commands.md "Tracks and routes").
    ///
    /// Each part (GPX `trk`) is one device: `device` if given (then for every point of every
    /// part), else the part's name made into a valid device id (``DeviceID/made(from:)``),
    /// else `defaultDevice` (`defaultDevice-N` for part N when several parts have no name).
    /// Points of formats without parts keep their own device, else `defaultDevice`.
    ///
    /// A part whose points all have times is replayed by them. A part with no time at all is
    /// skipped and noted, or with `speed` (metres per second) walked: each device's walked
    /// points get `start` + their distance along that device's walked points / `speed`
    /// (`start` defaults to one second after the file's last fix, else 2026-01-01T00:00:00Z). In a
    /// part with some times, the points without one are skipped and counted (a speed would
    /// contradict the times around them). Several devices are merged by fix time, each
    /// keeping its own order. If nothing is left to replay it is an error saying how to give
    /// times.
    public func replayPlan(
        file: String, device: String? = nil, defaultDevice: String = "replay", speed: Double? = nil, start: Double? = nil
    ) throws(TrackError) -> TrackReplay {
        if let speed, !(speed.isFinite && speed > 0) {
            throw TrackError(file: file, message: "the speed must be > 0 metres per second, found \(speed)")
        }
        if let start, !ISO8601Time.supportedRange.contains(start) {
            throw TrackError(file: file, message: "the start time must be within years 1 to 9999, found \(start) (epoch seconds)")
        }
        var notes = ignored.isEmpty ? [] : ["ignored " + ignored.joined(separator: " and ")]
        let groups: [TrackPart?] = parts.isEmpty ? [nil] : parts
        let unnamed = parts.filter { $0.name == nil }.count
        var sequences: [[LocationUpdate]] = []
        var toWalk: [(point: TrackPoint, device: String, index: Int)] = []
        var skippedParts: [(TrackPart?, Int)] = []
        var renamed: [String: String] = [:]
        for part in groups {
            let range = part?.points ?? points.indices
            var partDevice: String? = device
            if partDevice == nil, let part {
                if let name = part.name {
                    partDevice = DeviceID.made(from: name, fallback: "\(defaultDevice)-\(part.number)")
                } else {
                    partDevice = unnamed > 1 ? "\(defaultDevice)-\(part.number)" : defaultDevice
                }
            }
            let timed = points[range].filter { $0.time != nil }.count
            if timed > 0 || speed != nil, device == nil, let part, let name = part.name, let made = partDevice,
                made != name, renamed[name] == nil
            {
                renamed[name] = made
                notes.append("\(part.label) is device \"\(made)\" (\(DeviceID.madeRule))")
            }
            if timed == 0 {
                if speed != nil {
                    for i in range { toWalk.append((points[i], partDevice ?? points[i].device ?? defaultDevice, i)) }
                } else {
                    skippedParts.append((part, range.count))
                }
                continue
            }
            if timed < range.count {
                let missing = range.count - timed
                notes.append(
                    "skipped \(missing) point\(missing == 1 ? "" : "s") without a time in "
                        + (part?.label ?? "the file") + " (\(timed) with a time replayed)")
            }
            var sequence: [LocationUpdate] = []
            for i in range {
                var point = points[i]
                if let partDevice { point.device = partDevice }
                if let update = point.locationUpdate(defaultDevice: defaultDevice) { sequence.append(update) }
            }
            sequences.append(sequence)
        }
        for (part, count) in skippedParts {
            let what = part?.label ?? "the file"
            notes.append(
                "skipped \(what): none of its \(count) point\(count == 1 ? "" : "s") has a time (--speed walks it)")
        }
        if !toWalk.isEmpty, let speed {
            let latest = sequences.joined().map(\.time).max()
            let from = start ?? latest.map { $0 + 1 } ?? 1_767_225_600  // 2026-01-01T00:00:00Z
            var travelled: [String: (at: Coordinate, metres: Double)] = [:]
            var walks: [String: [LocationUpdate]] = [:]
            var order: [String] = []
            for (point, pointDevice, index) in toWalk {
                var metres = 0.0
                if let last = travelled[pointDevice] {
                    metres = last.metres + RouteGeometry.distance(from: last.at, to: point.coordinate)
                }
                travelled[pointDevice] = (point.coordinate, metres)
                var timed = point
                timed.device = pointDevice
                timed.time = from + metres / speed
                guard ISO8601Time.supportedRange.contains(timed.time!) else {
                    // A tiny speed can walk past year 9999 (or to infinity).
                    throw TrackError(
                        file: file,
                        message: "point \(index + 1) would be reached after year 9999 at \(speed) metres per second: give a larger --speed")
                }
                if walks[pointDevice] == nil { order.append(pointDevice) }
                walks[pointDevice, default: []].append(timed.locationUpdate(defaultDevice: defaultDevice)!)
            }
            sequences += order.map { walks[$0]! }
        }
        if sequences.isEmpty {
            throw TrackError(
                file: file,
                message: (parts.count > 1 ? "no track has times" : "the track has no times")
                    + ", and replay needs them: use a file with times (GPX <time>, "
                    + "GeoJSON properties.coordTimes, JSON lines 'time', NMEA, OwnTracks) or give --speed "
                    + "(metres per second) to walk it")
        }
        return TrackReplay(updates: Self.merged(sequences), notes: notes)
    }

    /// The updates `replay` runs through the engine (``replayPlan(file:device:defaultDevice:speed:start:)``
    /// without its notes).
    public func replayUpdates(
        file: String, defaultDevice: String, speed: Double? = nil, start: Double? = nil
    ) throws(TrackError) -> [LocationUpdate] {
        try replayPlan(file: file, defaultDevice: defaultDevice, speed: speed, start: start).updates
    }

    /// The updates of every device in one list: each device's in its own order, the devices
    /// interleaved by fix time (a device's next update goes first when its time is earliest;
    /// ties in the order of `sequences`). Sequences of one device are joined first.
    static func merged(_ sequences: [[LocationUpdate]]) -> [LocationUpdate] {
        var byDevice: [[LocationUpdate]] = []
        var index: [String: Int] = [:]
        for sequence in sequences {
            for update in sequence {
                if let k = index[update.device] {
                    byDevice[k].append(update)
                } else {
                    index[update.device] = byDevice.count
                    byDevice.append([update])
                }
            }
        }
        if byDevice.count == 1 { return byDevice[0] }
        var next = Array(repeating: 0, count: byDevice.count)
        var out: [LocationUpdate] = []
        out.reserveCapacity(byDevice.reduce(0) { $0 + $1.count })
        while true {
            var best: Int?
            for k in byDevice.indices where next[k] < byDevice[k].count {
                if best == nil || byDevice[k][next[k]].time < byDevice[best!][next[best!]].time { best = k }
            }
            guard let k = best else { return out }
            out.append(byDevice[k][next[k]])
            next[k] += 1
        }
    }
}
