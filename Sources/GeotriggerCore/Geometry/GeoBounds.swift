/// A lon/lat bounding box in degrees.
///
/// `minLon <= maxLon` always holds. A box that crosses the antimeridian keeps `minLon` in
/// -180..<180 and lets `maxLon` go past 180 (179.5...180.5 holds 179.7 and -179.7); boxes grown by
/// ``expanded(by:)`` may also reach below -180. ``contains(_:)`` understands both.
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

    /// The box around `coordinates` (which must not be empty), taking longitudes as given.
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

    /// True if the box holds every point of the world: 360 degrees of longitude, from the
    /// south pole to the north pole. Every box meets it.
    public var coversTheWorld: Bool { maxLon - minLon >= 360 && minLat <= -90 && maxLat >= 90 }

    /// True if the box reaches past 180 or below -180 degrees of longitude.
    public var crossesAntimeridian: Bool { maxLon > 180 || minLon < -180 }

    /// The larger of `|minLat|` and `|maxLat|`: where degrees of longitude are shortest.
    var extremeLatitude: Double { Swift.max(abs(minLat), abs(maxLat)) }

    /// This box grown by `metres` on every side (a conservative lon/lat margin).
    public func expanded(by metres: Double) -> GeoBounds {
        guard metres > 0 else { return self }
        let dLat = Earth.degreesLatitude(metres: metres)
        let extremeLat = Swift.min(89.99, extremeLatitude + dLat)
        let dLon = Earth.degreesLongitude(metres: metres, atLatitude: extremeLat)
        return GeoBounds(
            minLat: minLat - dLat, minLon: minLon - dLon, maxLat: maxLat + dLat, maxLon: maxLon + dLon)
    }

    /// True if the two boxes share a point, also across the antimeridian: longitudes are
    /// compared as they are and 360 degrees to either side.
    public func meets(_ other: GeoBounds) -> Bool {
        guard minLat <= other.maxLat, other.minLat <= maxLat else { return false }
        for shift in [0.0, 360, -360] where minLon + shift <= other.maxLon && other.minLon <= maxLon + shift { return true }
        return false
    }

    /// True if the box holds `c`, also when the box crosses the antimeridian.
    public func contains(_ c: Coordinate) -> Bool {
        guard c.lat >= minLat, c.lat <= maxLat else { return false }
        if c.lon >= minLon, c.lon <= maxLon { return true }
        if maxLon > 180, c.lon + 360 >= minLon, c.lon + 360 <= maxLon { return true }
        if minLon < -180, c.lon - 360 >= minLon, c.lon - 360 <= maxLon { return true }
        return false
    }
}
