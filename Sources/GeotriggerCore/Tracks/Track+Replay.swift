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

extension Track {
    /// The updates `replay` runs through the engine, in file order.
    ///
    /// If every point has a time, those are the fix times (`speed` is not used). If no point
    /// has one, `speed` (metres per second) walks each device's points from `start`: a point's
    /// time is `start` + its distance along that device's points / `speed`. Without `speed`,
    /// or when only some points have times, it is an error naming `file` and the first point
    /// without a time (1-based), saying how to give times.
    public func replayUpdates(
        file: String, defaultDevice: String, speed: Double? = nil, start: Double = 0
    ) throws(TrackError) -> [LocationUpdate] {
        if let missing = points.firstIndex(where: { $0.time == nil }) {
            let timed = points.contains { $0.time != nil }
            if timed {
                throw TrackError(
                    file: file,
                    message: "point \(missing + 1) has no time while others have; replay needs a time on every point")
            }
            guard let speed else {
                throw TrackError(
                    file: file,
                    message: "the track has no times, and replay needs them: use a file with times (GPX <time>, "
                        + "GeoJSON properties.coordTimes, JSON lines 'time', NMEA, OwnTracks) or give --speed "
                        + "(metres per second) to walk it")
            }
            guard speed.isFinite, speed > 0 else {
                throw TrackError(file: file, message: "the speed must be > 0 metres per second, found \(speed)")
            }
            guard ISO8601Time.supportedRange.contains(start) else {
                throw TrackError(file: file, message: "the start time must be within years 1 to 9999, found \(start) (epoch seconds)")
            }
            var travelled: [String: (at: Coordinate, metres: Double)] = [:]
            let walked: [LocationUpdate] = points.map { point in
                let device = point.device ?? defaultDevice
                var metres = 0.0
                if let last = travelled[device] {
                    metres = last.metres + RouteGeometry.distance(from: last.at, to: point.coordinate)
                }
                travelled[device] = (point.coordinate, metres)
                var timed = point
                timed.time = start + metres / speed
                return timed.locationUpdate(defaultDevice: defaultDevice)!
            }
            // A tiny speed can walk past year 9999 (or to infinity).
            if let late = walked.firstIndex(where: { !ISO8601Time.supportedRange.contains($0.time) }) {
                throw TrackError(
                    file: file,
                    message: "point \(late + 1) would be reached after year 9999 at \(speed) metres per second: give a larger --speed")
            }
            return walked
        }
        return points.map { $0.locationUpdate(defaultDevice: defaultDevice)! }
    }
}
