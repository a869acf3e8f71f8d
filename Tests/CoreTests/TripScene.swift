import Foundation
@testable import GeotriggerCore

/// Routes and drives for the trip tests, laid out in metres east (`x`) and north (`y`) of an
/// origin in Melbourne, and turned into positions with ``RouteGeometry/moved(_:east:north:)``
/// (the local scale at the origin: within 0.01 % of the ellipsoid over these few kilometres).
struct TripScene {
    static let origin = Coordinate(lat: -37.81, lon: 144.96)
    static let t0 = 1_800_000_000.0

    /// The position `x` metres east and `y` north of the origin.
    static func at(_ x: Double, _ y: Double) -> Coordinate {
        RouteGeometry.moved(origin, east: x, north: y)
    }

    /// A polyline in metres, walked by distance.
    struct Path {
        let points: [SIMD2<Double>]
        let cumulative: [Double]
        var length: Double { cumulative[cumulative.count - 1] }

        init(_ xy: [(Double, Double)]) {
            points = xy.map { SIMD2($0.0, $0.1) }
            var c = [0.0]
            for (a, b) in zip(points, points.dropFirst()) {
                let d = b - a
                c.append(c[c.count - 1] + (d * d).sum().squareRoot())
            }
            cumulative = c
        }

        var coordinates: [Coordinate] { points.map { TripScene.at($0.x, $0.y) } }

        /// The point `s` metres along (clamped), in metres.
        func point(at s: Double) -> SIMD2<Double> {
            let s = min(max(s, 0), length)
            var k = 0
            while k < cumulative.count - 2, cumulative[k + 1] < s { k += 1 }
            let span = cumulative[k + 1] - cumulative[k]
            let f = span > 0 ? (s - cumulative[k]) / span : 0
            return points[k] + f * (points[k + 1] - points[k])
        }
    }

    /// A fix of the van at `xy` metres, at `t0 + seconds`.
    static func fix(
        _ xy: SIMD2<Double>, at seconds: Double, accuracy: Double? = 5, speed: Double? = nil
    ) -> LocationUpdate {
        let c = at(xy.x, xy.y)
        return LocationUpdate(device: "van", lat: c.lat, lon: c.lon, time: t0 + seconds, accuracy: accuracy, speed: speed)
    }
}

extension SplitMix64 {
    /// A Gaussian offset of standard deviation `sigma` metres per axis.
    mutating func gaussian(_ sigma: Double) -> SIMD2<Double> {
        SIMD2(nextGaussian() * sigma, nextGaussian() * sigma)
    }

    /// An offset uniform in the disc of `radius` metres.
    mutating func inDisc(_ radius: Double) -> SIMD2<Double> {
        let r = radius * nextUnit().squareRoot()
        let angle = 2 * Double.pi * nextUnit()
        return SIMD2(r * cos(angle), r * sin(angle))
    }
}
