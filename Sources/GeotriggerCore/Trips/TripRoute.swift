#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A trip's route (docs/trips.md "The route"): a line of lon/lat positions, straight between
/// them as RFC 7946 draws them, made ready for following a device along it. Immutable and
/// shared, like ``PreparedFence``.
///
/// Lengths are metres on the WGS84 ellipsoid. Each edge is cut into straight 3D chords in a
/// ``LocalFrame`` around the route's centre until a chord strays less than 5 mm from the
/// lon/lat-straight edge (as ``PreparedFence`` does), so a distance from the route is a true
/// chord turned into the arc over the surface, and `along` is the sum of the chords' arcs: both
/// within a centimetre or so of the geodesic figures, however long the edges.
///
/// The chords are grouped in blocks of ``blockSize`` with a bounding sphere each, so a search
/// passes over a block that is certainly farther than it cares about in one test
/// (``project(_:from:until:corridor:)`` in `TripRoute+Projection.swift`). Memory: about 67
/// bytes per vertex (the position, its `cumulative`, its chord end and `along`, a sixteenth of
/// a block), and about 43 more per extra chord of an edge longer than 500 m.
public final class TripRoute: Sendable {
    /// The route's positions, without repeated consecutive ones.
    public let vertices: [Coordinate]
    /// Metres along the route from its start to each of ``vertices``.
    public let cumulative: [Double]
    /// The route's length in metres.
    public var length: Double { cumulative[cumulative.count - 1] }

    let frame: LocalFrame
    /// The radius of the sphere fitting the ellipsoid at the route, for chords to arcs.
    let radius: Double
    /// The chords' ends in ``frame``, in route order: chord `k` joins `points[k]` and `points[k + 1]`.
    let points: [SIMD3<Double>]
    /// Metres along the route at each of ``points``.
    let alongs: [Double]
    /// Each block's bounding sphere in ``frame``: block `b` holds chords `b * blockSize ..<
    /// (b + 1) * blockSize` and every point they touch.
    let blockCentres: [SIMD3<Double>]
    let blockRadii: [Double]

    /// Chords per block.
    static let blockSize = 16
    /// Each edge is cut at most this many times in two (4,096 chords, for an edge of 2,000 km).
    static let maxDepth = 12

    /// Prepares `line` (at least two distinct positions), refusing what cannot be measured:
    /// coordinates that are not finite or out of range, or a position within 1 km of a pole.
    /// Consecutive repeated positions are dropped. An edge between longitudes more than 180
    /// degrees apart goes the short way round, across the antimeridian.
    public init(_ line: [Coordinate]) throws(GeometryError) {
        var vertices: [Coordinate] = []
        vertices.reserveCapacity(line.count)
        for c in line {
            guard c.lat.isFinite, c.lon.isFinite, abs(c.lat) <= 90, abs(c.lon) <= 180 else {
                throw GeometryError(
                    "position [\(c.lon), \(c.lat)] is out of range: expected longitude -180...180 and latitude -90...90")
            }
            if abs(c.lat) > 90 - Earth.poleMarginDegrees {
                throw GeometryError("lies within 1 km of a pole, which is not supported")
            }
            if vertices.last != c { vertices.append(c) }
        }
        guard vertices.count >= 2 else {
            throw GeometryError("a route needs at least two distinct positions, found \(vertices.count)")
        }
        self.vertices = vertices

        // Longitudes unwrapped along the line: each within 180 degrees of the one before.
        var unwrapped: [SIMD2<Double>] = []
        unwrapped.reserveCapacity(vertices.count)
        var minLat = Double.infinity, maxLat = -Double.infinity, minLon = Double.infinity, maxLon = -Double.infinity
        for c in vertices {
            var lon = c.lon
            if let previous = unwrapped.last {
                while lon - previous.x > 180 { lon -= 360 }
                while lon - previous.x < -180 { lon += 360 }
            }
            unwrapped.append(SIMD2(lon, c.lat))
            minLat = Swift.min(minLat, c.lat)
            maxLat = Swift.max(maxLat, c.lat)
            minLon = Swift.min(minLon, lon)
            maxLon = Swift.max(maxLon, lon)
        }
        let frame = LocalFrame(lat: (minLat + maxLat) / 2, lon: (minLon + maxLon) / 2)
        self.frame = frame
        let radius = Earth.meanRadius(atLatitude: (minLat + maxLat) / 2)
        self.radius = radius

        var points = [frame.local(lat: unwrapped[0].y, lon: unwrapped[0].x)]
        var alongs = [0.0]
        var cumulative = [0.0]
        points.reserveCapacity(vertices.count)
        alongs.reserveCapacity(vertices.count)
        cumulative.reserveCapacity(vertices.count)
        for (a, b) in zip(unwrapped, unwrapped.dropFirst()) {
            let first = points.count
            let pa = points[first - 1], pb = frame.local(lat: b.y, lon: b.x)
            PreparedFence.subdivide(a, b, pa, pb, frame: frame, depth: 0, maxDepth: TripRoute.maxDepth, into: &points)
            for k in first..<points.count {
                let d = points[k] - points[k - 1]
                alongs.append(alongs[k - 1] + Earth.arcLength(chord: (d * d).sum().squareRoot(), radius: radius))
            }
            cumulative.append(alongs[alongs.count - 1])
        }
        self.points = points
        self.alongs = alongs
        self.cumulative = cumulative

        let chords = points.count - 1
        let blocks = (chords + TripRoute.blockSize - 1) / TripRoute.blockSize
        var centres: [SIMD3<Double>] = []
        var radii: [Double] = []
        centres.reserveCapacity(blocks)
        radii.reserveCapacity(blocks)
        for b in 0..<blocks {
            let range = (b * TripRoute.blockSize)...Swift.min(chords, (b + 1) * TripRoute.blockSize)
            var low = points[range.lowerBound], high = low
            for k in range {
                low = pointwiseMin(low, points[k])
                high = pointwiseMax(high, points[k])
            }
            let centre = (low + high) / 2
            var r2 = 0.0
            for k in range {
                let d = points[k] - centre
                r2 = Swift.max(r2, (d * d).sum())
            }
            centres.append(centre)
            // A little more than the farthest point, against rounding.
            radii.append(r2.squareRoot() * (1 + 1e-12) + 1e-6)
        }
        blockCentres = centres
        blockRadii = radii
    }

    /// The number of straight chords the route is searched by.
    var chordCount: Int { points.count - 1 }

    /// Approximate bytes held (vertices, chords and blocks).
    public var byteCount: Int {
        vertices.count * (MemoryLayout<Coordinate>.stride + 8) + points.count * (MemoryLayout<SIMD3<Double>>.stride + 8)
            + blockCentres.count * (MemoryLayout<SIMD3<Double>>.stride + 8) + 64
    }

    /// The position `along` metres from the start (clamped to the route), interpolated linearly
    /// in lon/lat on its edge (within centimetres of the true share of the edge's length for
    /// edges of a few kilometres).
    public func coordinate(atAlong along: Double) -> Coordinate {
        let d = Swift.min(Swift.max(along, 0), length)
        var low = 0
        var high = cumulative.count - 2
        while low < high {
            let mid = (low + high + 1) / 2
            if cumulative[mid] <= d { low = mid } else { high = mid - 1 }
        }
        let a = vertices[low], b = vertices[low + 1]
        let edge = cumulative[low + 1] - cumulative[low]
        let f = edge > 0 ? (d - cumulative[low]) / edge : 0
        var lon = a.lon + f * RouteGeometry.longitudeDelta(from: a.lon, to: b.lon)
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return Coordinate(lat: a.lat + f * (b.lat - a.lat), lon: lon)
    }

    /// Metres from `c` to the route's last position.
    public func distanceToEnd(_ c: Coordinate) -> Double {
        Earth.distance(c, vertices[vertices.count - 1])
    }
}
