/// A circle on the Earth: a centre and a radius in metres (geodesic distance from the centre).
///
/// Phones that monitor only circular regions (OwnTracks waypoints: latitude, longitude and a
/// whole number of metres) get each fence as the circle that covers it
/// (``PreparedFence/enclosingCircle(buffer:)``); a caller rounding the radius to whole metres
/// should round up, so the circle still covers the fence.
public struct EnclosingCircle: Sendable, Equatable {
    /// The centre, longitude in -180...180.
    public var centre: Coordinate
    /// The radius in metres.
    public var radius: Double

    public init(centre: Coordinate, radius: Double) {
        self.centre = centre
        self.radius = radius
    }
}
