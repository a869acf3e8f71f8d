#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A straight lon/lat segment between two positions (the shorter way round in longitude), with
/// its length measured along it on the WGS84 ellipsoid.
///
/// A point of the segment is named by `t` in 0...1, linear in lon/lat; ``fraction(at:)`` turns
/// that into the share of the segment's length from its start (they differ slightly, since a
/// degree of longitude is shorter away from the equator).
public struct LonLatSegment: Sendable, Equatable {
    public let start: Coordinate
    /// Latitude and longitude (unwrapped: -180...180) from `start` to the end, in degrees.
    let deltaLat: Double, deltaLon: Double
    /// Metres per unit of `t`, at most, anywhere along the segment (a safe bound for stepping).
    let maxSpeed: Double
    /// Length in metres along the segment.
    public private(set) var length = 0.0

    public init(from a: Coordinate, to b: Coordinate) {
        start = a
        deltaLat = b.lat - a.lat
        var dLon = b.lon - a.lon
        while dLon > 180 { dLon -= 360 }
        while dLon < -180 { dLon += 360 }
        deltaLon = dLon
        let lowLat = (a.lat > 0) != (b.lat > 0) ? 0 : Swift.min(abs(a.lat), abs(b.lat))
        let highLat = Swift.max(abs(a.lat), abs(b.lat))
        let north = deltaLat * Earth.meridionalRadius(atLatitude: highLat) * .pi / 180
        let east = deltaLon * Earth.parallelRadius(atLatitude: lowLat) * .pi / 180
        maxSpeed = (north * north + east * east).squareRoot() * (1 + 1e-9)
        length = distance(to: 1)
    }

    /// The point at `t` (longitude normalized to -180..<180).
    public func point(at t: Double) -> Coordinate {
        var lon = start.lon + t * deltaLon
        while lon >= 180 { lon -= 360 }
        while lon < -180 { lon += 360 }
        return Coordinate(lat: start.lat + t * deltaLat, lon: lon)
    }

    /// Metres per unit of `t` at `t`.
    func speed(at t: Double) -> Double {
        let lat = start.lat + t * deltaLat
        let north = deltaLat * Earth.meridionalRadius(atLatitude: lat)
        let east = deltaLon * Earth.parallelRadius(atLatitude: lat)
        return (north * north + east * east).squareRoot() * .pi / 180
    }

    /// Metres along the segment from its start to `t` (Gauss-Legendre, 5 points: the speed
    /// varies smoothly with latitude, so this is exact to far below a millimetre).
    public func distance(to t: Double) -> Double {
        guard t > 0 else { return 0 }
        // Short in latitude (under 0.05 degrees, 5.5 km): the speed is nearly linear in t, and
        // the midpoint rule is then within 1e-8 of the length.
        if abs(deltaLat) < 0.05 { return speed(at: t / 2) * t }
        let nodes = [0.0, -0.538_469_310_105_683_1, 0.538_469_310_105_683_1, -0.906_179_845_938_664_0, 0.906_179_845_938_664_0]
        let weights = [0.568_888_888_888_888_9, 0.478_628_670_499_366_5, 0.478_628_670_499_366_5, 0.236_926_885_056_189_1, 0.236_926_885_056_189_1]
        var sum = 0.0
        for (x, w) in zip(nodes, weights) { sum += w * speed(at: t * (x + 1) / 2) }
        return sum * t / 2
    }

    /// The share of the length from the start to `t` (0...1).
    public func fraction(at t: Double) -> Double {
        length > 0 ? Swift.min(1, Swift.max(0, distance(to: t) / length)) : 0
    }
}

extension PreparedFence {
    /// Where a segment whose ends are both outside first meets and last leaves a buffered fence.
    public struct SegmentCrossing: Sendable, Equatable {
        /// `t` (see ``LonLatSegment``) of the first point on the buffered boundary, and of the last.
        public var enterT: Double, exitT: Double
        /// The shares of the segment's length from its start to those points (0...1).
        public var enterFraction: Double, exitFraction: Double
        public var enterPoint: Coordinate, exitPoint: Coordinate
    }

    /// How close (metres) to the buffered boundary a traced point counts as on it.
    static let segmentTolerance = 0.001

    /// The first entry into and the last exit from this fence buffered by `buffer` metres along
    /// the straight lon/lat `segment`, or nil when the segment does not meet the buffered
    /// geometry or one of its ends is inside it (or within 1 mm of its boundary).
    ///
    /// How: sphere tracing. The signed distance to the buffered boundary changes by at most one
    /// metre per metre moved, so from a point `d` metres outside, the next `d` metres of the
    /// segment cannot reach it: the trace steps that far (in `t`, by the segment's largest
    /// metres per unit of `t`) from the start until it is within 1 mm of the boundary, and the
    /// same from the end backwards. Far fences cost one bounded distance query. Steps are at
    /// least 5 cm (or 1/10,000 of the segment), so a boundary the segment only grazes by less
    /// than that may be missed, and a trace takes at most about 10,000 steps.
    public func crossing(along segment: LonLatSegment, buffer: Double) -> SegmentCrossing? {
        let length = segment.length
        guard length > 0, length.isFinite, buffer.isFinite else { return nil }
        let limit = segment.maxSpeed + buffer + 1
        let tolerance = PreparedFence.segmentTolerance
        let startDistance = signedDistance(to: segment.start, within: limit) - buffer
        guard startDistance > tolerance, startDistance <= segment.maxSpeed else { return nil }
        let endDistance = signedDistance(to: segment.point(at: 1), within: limit) - buffer
        guard endDistance > tolerance, startDistance + endDistance <= segment.maxSpeed else { return nil }
        guard let enter = trace(segment, buffer: buffer, from: 0, first: startDistance, forward: true) else { return nil }
        guard let exit = trace(segment, buffer: buffer, from: 1, first: endDistance, forward: false), exit >= enter else {
            return nil
        }
        return SegmentCrossing(
            enterT: enter, exitT: exit, enterFraction: segment.fraction(at: enter), exitFraction: segment.fraction(at: exit),
            enterPoint: segment.point(at: enter), exitPoint: segment.point(at: exit))
    }

    /// The sphere trace from `t0` (whose distance to the buffered boundary is `first`) forwards
    /// or backwards: the first `t` within the tolerance of the boundary, or nil if none.
    private func trace(_ segment: LonLatSegment, buffer: Double, from t0: Double, first: Double, forward: Bool) -> Double? {
        let speed = segment.maxSpeed
        let minimumStep = Swift.max(0.05, segment.length * 1e-4) / speed
        var t = t0
        var d = first
        var previous = t0
        for _ in 0..<20_000 {
            if d < -PreparedFence.segmentTolerance {
                // A minimum step went in: the boundary is between the last point outside and here.
                var outside = previous, inside = t
                for _ in 0..<40 where abs(outside - inside) * speed > PreparedFence.segmentTolerance {
                    let middle = (outside + inside) / 2
                    let m = signedDistance(to: segment.point(at: middle), within: .infinity) - buffer
                    if m > 0 { outside = middle } else { inside = middle }
                }
                return outside
            }
            if d <= PreparedFence.segmentTolerance { return t }
            let remaining = forward ? 1 - t : t
            // Farther from the boundary than the rest of the segment is long: it never gets there.
            if d > remaining * speed { return nil }
            let step = Swift.max(d * 0.999 / speed, minimumStep)
            if step >= remaining { return nil }
            previous = t
            t += forward ? step : -step
            let left = (forward ? 1 - t : t) * speed
            d = signedDistance(to: segment.point(at: t), within: left + buffer + 1) - buffer
        }
        return nil
    }
}
