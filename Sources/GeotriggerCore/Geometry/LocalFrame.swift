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
struct LocalFrame: Sendable {
    let origin: SIMD3<Double>
    let east: SIMD3<Double>
    let north: SIMD3<Double>
    let up: SIMD3<Double>

    init(lat: Double, lon: Double) {
        origin = Earth.cartesian(lat: lat, lon: lon)
        let phi = lat * .pi / 180, lambda = lon * .pi / 180
        let sinPhi = sin(phi), cosPhi = cos(phi), sinLambda = sin(lambda), cosLambda = cos(lambda)
        east = SIMD3(-sinLambda, cosLambda, 0)
        north = SIMD3(-sinPhi * cosLambda, -sinPhi * sinLambda, cosPhi)
        up = SIMD3(cosPhi * cosLambda, cosPhi * sinLambda, sinPhi)
    }

    /// `cartesian` (Earth-centred) in this frame: (east, north, up) metres.
    @inline(__always)
    func local(_ cartesian: SIMD3<Double>) -> SIMD3<Double> {
        let d = cartesian - origin
        return SIMD3((d * east).sum(), (d * north).sum(), (d * up).sum())
    }

    func local(lat: Double, lon: Double) -> SIMD3<Double> {
        local(Earth.cartesian(lat: lat, lon: lon))
    }
}
