/// Where a trip arrives (docs/trips.md "Arrival"): a region a fix is inside or not. The trip's
/// `to` fence, or by default the route's end buffered by the corridor.
public protocol TripDestination: Sendable {
    func contains(_ c: Coordinate) -> Bool
}

/// The default destination: within `radius` metres of a position (the route's last one,
/// buffered by the corridor).
public struct CircleDestination: TripDestination, Equatable {
    public var centre: Coordinate
    public var radius: Double

    public init(centre: Coordinate, radius: Double) {
        self.centre = centre
        self.radius = radius
    }

    public func contains(_ c: Coordinate) -> Bool { Earth.distance(c, centre) <= radius }
}

/// A fence as a destination, buffered as its triggers buffer it: inside when its signed
/// distance is at most `buffer` (inside a polygon, or within `buffer` metres of it, of a line
/// or of a point).
public struct FenceDestination: TripDestination {
    public let fence: PreparedFence
    public let buffer: Double

    public init(fence: PreparedFence, buffer: Double) {
        self.fence = fence
        self.buffer = Swift.max(0, buffer)
    }

    public func contains(_ c: Coordinate) -> Bool {
        fence.signedDistance(to: c, within: buffer + 1) <= buffer
    }
}
