/// A WGS84 position in degrees (latitude -90...90, longitude -180...180).
public struct Coordinate: Sendable, Hashable {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }
}
