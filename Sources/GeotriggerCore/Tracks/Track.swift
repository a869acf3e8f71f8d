/// The points of one track or route file, in file order.
public struct Track: Sendable, Equatable {
    /// The points in the order the file has them (not sorted by time).
    public var points: [TrackPoint]
    /// Records skipped as unusable without stopping the read: NMEA sentences with a missing or
    /// wrong checksum. Zero for the other formats, whose bad records are errors.
    public var skipped: Int

    public init(points: [TrackPoint], skipped: Int = 0) {
        self.points = points
        self.skipped = skipped
    }

    /// The points as a polyline, for a route.
    public var coordinates: [Coordinate] { points.map(\.coordinate) }

    /// True if every point has a fix time.
    public var hasTimes: Bool { points.allSatisfy { $0.time != nil } }
}
