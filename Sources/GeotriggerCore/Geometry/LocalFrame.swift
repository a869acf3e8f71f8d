#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A local Cartesian frame in metres around a fence: origin on the ellipsoid at the fence's
/// centre, axes east, north and up (the ellipsoid normal).
///
/// Positions are exact Earth-centred positions, only rotated and shifted, so 3D distances in
/// this frame are true chord lengths; dropping `up` (looking straight down) can only shorten
/// a distance, which makes east/north distances safe lower bounds for pruning.
///
/// The axes are kept as the sines and cosines of the centre's latitude and longitude (they
/// follow from those four numbers with a few products), 56 bytes rather than three axis
/// vectors and the origin at 128.
struct LocalFrame: Sendable {
    let originX: Double, originY: Double, originZ: Double
    let sinPhi: Double, cosPhi: Double, sinLambda: Double, cosLambda: Double

    init(lat: Double, lon: Double) {
        let origin = Earth.cartesian(lat: lat, lon: lon)
        originX = origin.x
        originY = origin.y
        originZ = origin.z
        let phi = lat * .pi / 180, lambda = lon * .pi / 180
        sinPhi = sin(phi)
        cosPhi = cos(phi)
        sinLambda = sin(lambda)
        cosLambda = cos(lambda)
    }

    /// `cartesian` (Earth-centred) in this frame: (east, north, up) metres. East is
    /// (-sin λ, cos λ, 0), north (-sin φ cos λ, -sin φ sin λ, cos φ), up (cos φ cos λ,
    /// cos φ sin λ, sin φ).
    @inline(__always)
    func local(_ cartesian: SIMD3<Double>) -> SIMD3<Double> {
        let dx = cartesian.x - originX, dy = cartesian.y - originY, dz = cartesian.z - originZ
        let outward = cosLambda * dx + sinLambda * dy
        return SIMD3(cosLambda * dy - sinLambda * dx, cosPhi * dz - sinPhi * outward, cosPhi * outward + sinPhi * dz)
    }

    func local(lat: Double, lon: Double) -> SIMD3<Double> {
        local(Earth.cartesian(lat: lat, lon: lon))
    }
}
