/// A lon/lat bounding box in degrees. Fences never cross the antimeridian inside one part
/// (RFC 7946 asks for them to be split), so `minLon <= maxLon` always holds.
public struct GeoBounds: Sendable, Equatable {
    public var minLat: Double
    public var minLon: Double
    public var maxLat: Double
    public var maxLon: Double

    public init(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) {
        self.minLat = minLat
        self.minLon = minLon
        self.maxLat = maxLat
        self.maxLon = maxLon
    }

    /// The box around `coordinates` (which must not be empty).
    public init<C: Collection<Coordinate>>(of coordinates: C) {
        var b = GeoBounds(minLat: .infinity, minLon: .infinity, maxLat: -.infinity, maxLon: -.infinity)
        for c in coordinates { b.extend(c) }
        self = b
    }

    public mutating func extend(_ c: Coordinate) {
        minLat = Swift.min(minLat, c.lat)
        maxLat = Swift.max(maxLat, c.lat)
        minLon = Swift.min(minLon, c.lon)
        maxLon = Swift.max(maxLon, c.lon)
    }

    public mutating func extend(_ other: GeoBounds) {
        minLat = Swift.min(minLat, other.minLat)
        maxLat = Swift.max(maxLat, other.maxLat)
        minLon = Swift.min(minLon, other.minLon)
        maxLon = Swift.max(maxLon, other.maxLon)
    }

    /// This box grown by `metres` on every side (a conservative lon/lat margin).
    public func expanded(by metres: Double) -> GeoBounds {
        guard metres > 0 else { return self }
        let dLat = Earth.degreesLatitude(metres: metres)
        let extremeLat = Swift.min(89.99, Swift.max(abs(minLat), abs(maxLat)) + dLat)
        let dLon = Earth.degreesLongitude(metres: metres, atLatitude: extremeLat)
        return GeoBounds(
            minLat: minLat - dLat, minLon: minLon - dLon, maxLat: maxLat + dLat, maxLon: maxLon + dLon)
    }

    public func contains(_ c: Coordinate) -> Bool {
        c.lat >= minLat && c.lat <= maxLat && c.lon >= minLon && c.lon <= maxLon
    }
}
