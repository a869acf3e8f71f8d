#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// WGS84 ellipsoid constants, radii of curvature and Earth-centred positions used by the geometry code.
public enum Earth {
    /// Semi-major axis in metres.
    public static let a = 6_378_137.0
    /// Flattening.
    public static let f = 1 / 298.257_223_563
    /// First eccentricity squared.
    public static let e2 = f * (2 - f)
    /// The latitude (degrees) no fence may come closer to a pole than: 1 km of meridian arc.
    public static let poleMarginDegrees = degreesLatitude(metres: 1000)

    /// Metres per radian north-south (meridional radius of curvature) at `lat` degrees.
    public static func meridionalRadius(atLatitude lat: Double) -> Double {
        let s = sin(lat * .pi / 180)
        let w = 1 - e2 * s * s
        return a * (1 - e2) / (w * w.squareRoot())
    }

    /// Metres per radian east-west along the parallel (prime vertical radius times cos lat).
    public static func parallelRadius(atLatitude lat: Double) -> Double {
        let phi = lat * .pi / 180
        let s = sin(phi)
        return a * cos(phi) / (1 - e2 * s * s).squareRoot()
    }

    /// The Gaussian mean radius of curvature at `lat` degrees: the radius of the sphere that best
    /// fits the ellipsoid there.
    public static func meanRadius(atLatitude lat: Double) -> Double {
        let s = sin(lat * .pi / 180)
        let w = 1 - e2 * s * s
        return a * (1 - e2).squareRoot() / w
    }

    /// Degrees of latitude that certainly cover `metres` (uses the smallest radius, at the equator).
    public static func degreesLatitude(metres: Double) -> Double {
        metres / (a * (1 - e2)) * 180 / .pi
    }

    /// Degrees of longitude that certainly cover `metres` at latitude `lat` degrees.
    public static func degreesLongitude(metres: Double, atLatitude lat: Double) -> Double {
        let r = parallelRadius(atLatitude: lat)
        return r > 1 ? metres / r * 180 / .pi : 360
    }

    /// The Earth-centred, Earth-fixed position in metres of `c` on the ellipsoid (height 0).
    static func cartesian(lat: Double, lon: Double) -> SIMD3<Double> {
        let phi = lat * .pi / 180, lambda = lon * .pi / 180
        let sinPhi = sin(phi), cosPhi = cos(phi)
        let n = a / (1 - e2 * sinPhi * sinPhi).squareRoot()
        return SIMD3(n * cosPhi * cos(lambda), n * cosPhi * sin(lambda), n * (1 - e2) * sinPhi)
    }

    /// The length of the surface path whose straight chord is `chord` metres, on the sphere of
    /// `radius` metres that fits the ellipsoid where the path lies. Below 100 km the result is
    /// within 1e-9 of the geodesic distance relative to that sphere; the sphere's fit adds well
    /// under 1e-5 relative error at 1,000 km.
    static func arcLength(chord: Double, radius: Double) -> Double {
        if chord < 100_000 {
            let q = chord / radius
            return chord * (1 + q * q * (1.0 / 24 + q * q * (3.0 / 640)))
        }
        return 2 * radius * asin(Swift.min(1, chord / (2 * radius)))
    }

    /// Distance in metres between two coordinates on the WGS84 ellipsoid, accurate to 0.01 %
    /// up to 1,000 km (the chord through the Earth, turned into the arc over the surface).
    public static func distance(_ p: Coordinate, _ q: Coordinate) -> Double {
        let d = cartesian(lat: p.lat, lon: p.lon) - cartesian(lat: q.lat, lon: q.lon)
        let chord = (d * d).sum().squareRoot()
        return arcLength(chord: chord, radius: meanRadius(atLatitude: (p.lat + q.lat) / 2))
    }
}
