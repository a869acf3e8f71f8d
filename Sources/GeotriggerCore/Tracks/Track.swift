/// The points of one track or route file, in file order.
public struct Track: Sendable, Equatable {
    /// The points in the order the file has them (not sorted by time).
    public var points: [TrackPoint]
    /// Records passed over without stopping the read, counted by why (NMEA sentences without
    /// a fix, with a bad checksum or with fields that cannot be read). Empty for the other
    /// formats, whose bad records are errors.
    public var skipped: [TrackSkipReason: Int]
    /// The recordings the file holds (GPX `trk`, or `rte` in a file without tracks), in file
    /// order; empty for formats without them, whose points are one recording.
    public var parts: [TrackPart]
    /// What the file holds that is not read as points, one phrase each, for a line on
    /// standard error: `2 waypoints (wpt)`, `1 route (rte, 4 points): not a recording`.
    public var ignored: [String]

    public init(points: [TrackPoint], skipped: [TrackSkipReason: Int] = [:], parts: [TrackPart] = [], ignored: [String] = []) {
        self.points = points
        self.skipped = skipped
        self.parts = parts
        self.ignored = ignored
    }

    /// One line per reason of ``skipped``, in the order of ``TrackSkipReason``:
    /// `1 NMEA sentence: time out of range`. Empty if nothing was skipped.
    public var skipSummary: [String] {
        skipped.sorted { $0.key < $1.key }.map { $0.key.summary(count: $0.value) }
    }

    /// The points as a polyline, for a route.
    public var coordinates: [Coordinate] { points.map(\.coordinate) }

    /// True if every point has a fix time.
    public var hasTimes: Bool { points.allSatisfy { $0.time != nil } }
}
