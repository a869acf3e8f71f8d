/// A coordinate with its Earth-centred position worked out once, for measuring it against
/// many fences (``PreparedFence/signedDistance(to:within:)-(PreparedPoint,_)``).
public struct PreparedPoint: Sendable {
    /// The coordinate, as given.
    public let coordinate: Coordinate
    /// Earth-centred, Earth-fixed position in metres.
    let cartesian: SIMD3<Double>

    public init(_ coordinate: Coordinate) {
        self.coordinate = coordinate
        cartesian = Earth.cartesian(lat: coordinate.lat, lon: coordinate.lon)
    }
}
