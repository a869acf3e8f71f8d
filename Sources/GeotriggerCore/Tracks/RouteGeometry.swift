#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Short-distance measures for routes: straight lines in lon/lat (as RFC 7946 draws them),
/// measured with the local metric scale of ``Earth`` at the segment's middle latitude.
enum RouteGeometry {
    /// The longitude step from `a` to `b` the short way round (-180 to 180).
    static func longitudeDelta(from a: Double, to b: Double) -> Double {
        var d = b - a
        if d > 180 { d -= 360 } else if d < -180 { d += 360 }
        return d
    }

    /// Metres east and north from `a` to `b`.
    static func offset(from a: Coordinate, to b: Coordinate) -> (east: Double, north: Double) {
        let mid = (a.lat + b.lat) / 2
        let radians = Double.pi / 180
        return (
            longitudeDelta(from: a.lon, to: b.lon) * radians * Earth.parallelRadius(atLatitude: mid),
            (b.lat - a.lat) * radians * Earth.meridionalRadius(atLatitude: mid)
        )
    }

    /// Metres from `a` to `b`.
    static func distance(from a: Coordinate, to b: Coordinate) -> Double {
        let (east, north) = offset(from: a, to: b)
        return (east * east + north * north).squareRoot()
    }

    /// Degrees clockwise from north of the direction from `a` to `b` (0 to < 360).
    static func bearing(from a: Coordinate, to b: Coordinate) -> Double {
        let (east, north) = offset(from: a, to: b)
        let degrees = atan2(east, north) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// `c` moved `east` and `north` metres (longitude wrapped to -180...180).
    static func moved(_ c: Coordinate, east: Double, north: Double) -> Coordinate {
        let radians = Double.pi / 180
        let lat = c.lat + north / Earth.meridionalRadius(atLatitude: c.lat) / radians
        let parallel = Earth.parallelRadius(atLatitude: c.lat)
        var lon = c.lon + (parallel > 1 ? east / parallel / radians : 0)
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Coordinate(lat: min(90, max(-90, lat)), lon: lon)
    }
}
