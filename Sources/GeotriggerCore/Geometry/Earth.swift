#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// WGS84 ellipsoid constants and the local metric scale used by the geometry code.
public enum Earth {
    /// Semi-major axis in metres.
    public static let a = 6_378_137.0
    /// Flattening.
    public static let f = 1 / 298.257_223_563
    /// First eccentricity squared.
    public static let e2 = f * (2 - f)

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

    /// Degrees of latitude that certainly cover `metres` (uses the smallest radius, at the equator).
    public static func degreesLatitude(metres: Double) -> Double {
        metres / (a * (1 - e2)) * 180 / .pi
    }

    /// Degrees of longitude that certainly cover `metres` at latitude `lat` degrees.
    public static func degreesLongitude(metres: Double, atLatitude lat: Double) -> Double {
        let r = parallelRadius(atLatitude: lat)
        return r > 1 ? metres / r * 180 / .pi : 360
    }
}
