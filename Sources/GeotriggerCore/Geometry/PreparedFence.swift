#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fence's geometry made ready for fast, accurate queries; immutable and shared between actors.
///
/// Edges are straight in lon/lat (RFC 7946). Distances are metres on the WGS84 ellipsoid:
/// the geodesic distance to the nearest point of the geometry, within 0.5 % or 0.1 m
/// (whichever is larger; in practice within about 1 cm) for fences up to 50 km across.
///
/// - ``contains(_:)`` is exact in lon/lat: inside a polygon and not in one of its holes, for
///   every part of a MultiPolygon (parts may overlap; beyond 64 parts they are assumed not to,
///   as a valid MultiPolygon's parts do not); always false for points and lines.
/// - ``signedDistance(to:)`` is negative inside a polygon (minus the distance to its boundary)
///   and positive outside; for points and lines it is the distance to the geometry.
/// - The distance to a *buffered* fence's boundary is defined as `signedDistance - buffer`.
///   Outside the buffered fence that is exact. Inside it, it is minus (the depth plus the
///   buffer): for a polygon, depth is the distance to the polygon's boundary; for a point or a
///   line, `-(buffer - distance)`.
///
/// A fence that crosses the antimeridian, split into parts at ±180 as RFC 7946 section 3.1.9
/// asks, is one region: the seam between the parts is not a boundary, and distances and
/// containment work across ±180. A fence within 1 km of a pole is refused.
///
/// How: containment uses a ``PolygonLocator`` in lon/lat with longitudes unwrapped around the
/// fence. Distances use the edges as straight 3D chords between Earth-centred positions, each
/// edge cut into pieces until a piece strays less than 5 mm from the true lon/lat-straight
/// edge, searched with a ``SegmentGrid``; the nearest chord is then turned into the arc over
/// the surface. The pieces' ends are stored in 32 bits around the fence's centre, which moves
/// them by at most 1.5 mm in a fence 50 km across. A small fence (at most 32 edges, or one
/// path of at most 32 chord pieces: nearly every fence, and every point) has no cells: its
/// edges and pieces are all tested, as fast at that size and without the cells' memory; a
/// larger one gets cells and latitude bands for containment and a grid of cells for distances.
/// Memory is linear in the vertices for any fence: the locator lists at most eight band
/// entries per edge, the chord pieces are at most 2^18 or eight per edge (a fence of very many
/// long edges, beyond that, has its edges cut less finely), and the grid lists at most four
/// entries per piece.
public final class PreparedFence: Sendable {
    public let fence: Fence

    /// Longitudes are unwrapped into `westLimit ..< westLimit + 360` around the fence.
    let westLimit: Double
    /// Containment; without rings (and unused) for points and lines; without cells for a small
    /// polygon. Its box is the fence's box with longitudes unwrapped, for every kind of fence:
    /// ``bounds`` is read from it rather than stored a second time.
    let locator: PolygonLocator
    let isPolygon: Bool
    let frame: LocalFrame
    /// Distances: the chord pieces; without cells for one path of a few pieces.
    let grid: SegmentGrid
    /// The radius of the sphere fitting the ellipsoid at the fence, for chords to arcs.
    let radius: Double

    /// How far (metres) a 3D chord piece may stray from its lon/lat-straight edge.
    static let chordTolerance = 0.005

    /// Prepares `fence`, refusing geometry this code cannot measure correctly: no positions,
    /// coordinates that are not finite or out of range, an edge spanning more than 180 degrees
    /// of longitude (not split at the antimeridian), or a position within 1 km of a pole.
    public init(_ fence: Fence) throws(GeometryError) {
        self.fence = fence
        let paths = PreparedFence.paths(of: fence.geometry)
        guard paths.contains(where: { !$0.isEmpty }) else { throw GeometryError("geometry has no positions") }
        for path in paths {
            for c in path {
                guard c.lat.isFinite, c.lon.isFinite, abs(c.lat) <= 90, abs(c.lon) <= 180 else {
                    throw GeometryError(
                        "position [\(c.lon), \(c.lat)] is out of range: expected longitude -180...180 and latitude -90...90")
                }
                // The wording is matched by the fence layer parser's tests: keep it.
                if abs(c.lat) > 90 - Earth.poleMarginDegrees {
                    throw GeometryError("lies within 1 km of a pole, which is not supported")
                }
            }
            for (a, c) in zip(path, path.dropFirst()) where abs(a.lon - c.lon) > 180 {
                throw GeometryError(
                    "an edge crosses the antimeridian (\(a.lon) to \(c.lon)): split it at 180 degrees as RFC 7946 section 3.1.9 says")
            }
        }

        // Unwrap longitudes around the fence: the shorter of the spans read as -180...180 or 0...360.
        var low = Double.infinity, high = -Double.infinity, shiftedLow = Double.infinity, shiftedHigh = -Double.infinity
        for path in paths {
            for c in path {
                low = Swift.min(low, c.lon)
                high = Swift.max(high, c.lon)
                let shifted = c.lon < 0 ? c.lon + 360 : c.lon
                shiftedLow = Swift.min(shiftedLow, shifted)
                shiftedHigh = Swift.max(shiftedHigh, shifted)
            }
        }
        let reference: Double
        if shiftedHigh - shiftedLow < high - low {
            let middle = (shiftedHigh + shiftedLow) / 2
            reference = middle >= 180 ? middle - 360 : middle
        } else {
            reference = (high + low) / 2
        }
        let westLimit = reference - 180
        self.westLimit = westLimit
        func unwrap(_ lon: Double) -> Double { PreparedFence.unwrap(lon, westLimit: westLimit) }
        let unwrapped = paths.map { $0.map { SIMD2(unwrap($0.lon), $0.lat) } }

        var unwrappedBox = GeoBounds(minLat: .infinity, minLon: .infinity, maxLat: -.infinity, maxLon: -.infinity)
        for p in unwrapped.joined() { unwrappedBox.extend(Coordinate(lat: p.y, lon: p.x)) }
        let box = PreparedFence.bounds(unwrapped: unwrappedBox)

        let centreLat = (box.minLat + box.maxLat) / 2
        let frame = LocalFrame(lat: centreLat, lon: (box.minLon + box.maxLon) / 2)
        self.frame = frame
        radius = Earth.meanRadius(atLatitude: centreLat)

        var edges: [(SIMD2<Double>, SIMD2<Double>)] = []
        switch fence.geometry {
        case .polygons(let polygons):
            // `paths` are the rings, polygon by polygon (exterior, then holes), and `unwrapped`
            // the same with longitudes unwrapped.
            var owners: [Int] = []
            owners.reserveCapacity(paths.count)
            for (k, polygon) in polygons.enumerated() {
                owners.append(contentsOf: repeatElement(k, count: 1 + polygon.holes.count))
            }
            // The locator reads the fence's own ring arrays (copying only rings unwrapping moves).
            locator = PolygonLocator(rings: paths, polygon: owners, westLimit: westLimit, box: unwrappedBox)
            isPolygon = true
            edges = PreparedFence.boundaryEdges(rings: unwrapped, owners: owners, seam: unwrap(180))
        case .points, .lines:
            locator = PolygonLocator(rings: [], polygon: [], westLimit: westLimit, box: unwrappedBox)
            isPolygon = false
            edges.reserveCapacity(unwrapped.reduce(0) { $0 + $1.count })
            for path in unwrapped {
                if path.count == 1 { edges.append((path[0], path[0])) }
                for (a, b) in zip(path, path.dropFirst()) { edges.append((a, b)) }
            }
        }
        // Chord pieces, at most `chordBudget` of them: beyond it, every edge is cut at most to a
        // depth whose pieces all fit (long edges then stray more than the tolerance).
        let budget = Swift.max(PreparedFence.chordBudgetBase, PreparedFence.chordBudgetPerEdge * edges.count)
        let chordPaths =
            PreparedFence.chordPaths(edges, frame: frame, maxDepth: 30, budget: budget)
            ?? PreparedFence.chordPaths(edges, frame: frame, maxDepth: PreparedFence.depth(fitting: budget, edges: edges.count), budget: .max)!
        grid = SegmentGrid(paths: chordPaths)
    }

    /// Lon/lat bounds of the unbuffered geometry; `minLon` is in -180..<180 and, for a fence
    /// that crosses the antimeridian, `maxLon` is past 180 (see ``GeoBounds``).
    public var bounds: GeoBounds {
        PreparedFence.bounds(
            unwrapped: GeoBounds(minLat: locator.minY, minLon: locator.minX, maxLat: locator.maxY, maxLon: locator.maxX))
    }

    /// `box` (longitudes unwrapped around the fence) moved by 360 degrees so that its `minLon`
    /// is in -180..<180.
    static func bounds(unwrapped box: GeoBounds) -> GeoBounds {
        var box = box
        if box.minLon < -180 {
            box.minLon += 360
            box.maxLon += 360
        } else if box.minLon >= 180 {
            box.minLon -= 360
            box.maxLon -= 360
        }
        return box
    }

    /// Chord pieces kept without a depth limit: at least this many for any fence...
    static let chordBudgetBase = 1 << 18
    /// ...and this many per edge (a fence of a few long edges over a continent stays under the
    /// base; only a fence of very many long edges, such as a star of tall spikes, reaches it).
    static let chordBudgetPerEdge = 8

    /// The deepest cut (each edge into `2^depth` pieces at most) whose pieces for `edges` edges
    /// fit in `budget`.
    static func depth(fitting budget: Int, edges: Int) -> Int {
        var depth = 0
        while depth < 30, edges << (depth + 1) <= budget { depth += 1 }
        return depth
    }

    /// The edges' chord pieces as paths (an edge that starts where the previous one ended
    /// continues its path), each edge cut at most `maxDepth` times in two; nil once more than
    /// `budget` pieces are made.
    static func chordPaths(
        _ edges: [(SIMD2<Double>, SIMD2<Double>)], frame: LocalFrame, maxDepth: Int, budget: Int
    ) -> [[SIMD3<Double>]]? {
        var chordPaths: [[SIMD3<Double>]] = []
        var end: SIMD2<Double>? = nil
        var pieces = 0
        for (a, b) in edges {
            let pa = frame.local(lat: a.y, lon: a.x), pb = frame.local(lat: b.y, lon: b.x)
            if end != a || chordPaths.isEmpty { chordPaths.append([pa]) }
            if a != b {
                let before = chordPaths[chordPaths.count - 1].count
                PreparedFence.subdivide(a, b, pa, pb, frame: frame, depth: 0, maxDepth: maxDepth, into: &chordPaths[chordPaths.count - 1])
                pieces += chordPaths[chordPaths.count - 1].count - before
                if pieces > budget { return nil }
            }
            end = b
        }
        return chordPaths
    }

    /// Every ring or line as a path of positions (polygon rings are closed).
    static func paths(of geometry: FenceGeometry) -> [[Coordinate]] {
        switch geometry {
        case .polygons(let ps): ps.flatMap { [$0.exterior] + $0.holes }
        case .points(let ps): ps.map { [$0] }
        case .lines(let ls): ls
        }
    }

    @inline(__always)
    static func unwrap(_ lon: Double, westLimit: Double) -> Double {
        var x = lon
        while x < westLimit { x += 360 }
        while x >= westLimit + 360 { x -= 360 }
        return x
    }

    /// The edges of `rings` that bound the region: all of them, except where a part's edge on
    /// the antimeridian (`seam`, unwrapped) lies along another part's edge there.
    static func boundaryEdges(rings: [[SIMD2<Double>]], owners: [Int], seam: Double) -> [(SIMD2<Double>, SIMD2<Double>)] {
        func onSeam(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Bool { a.x == seam && b.x == seam && a.y != b.y }
        var spans: [(owner: Int, low: Double, high: Double)] = []
        for (ring, owner) in zip(rings, owners) {
            for (a, b) in zip(ring, ring.dropFirst()) where onSeam(a, b) {
                spans.append((owner, Swift.min(a.y, b.y), Swift.max(a.y, b.y)))
            }
        }
        var edges: [(SIMD2<Double>, SIMD2<Double>)] = []
        edges.reserveCapacity(rings.reduce(0) { $0 + $1.count })
        for (ring, owner) in zip(rings, owners) {
            for (a, b) in zip(ring, ring.dropFirst()) {
                guard onSeam(a, b), spans.contains(where: { $0.owner != owner }) else {
                    edges.append((a, b))
                    continue
                }
                // Keep the parts of this seam edge no other part's seam edge covers.
                let covers = spans.filter { $0.owner != owner }.map { ($0.low, $0.high) }.sorted { $0.0 < $1.0 }
                var low = Swift.min(a.y, b.y)
                let high = Swift.max(a.y, b.y)
                for (coverLow, coverHigh) in covers where coverHigh > low {
                    if coverLow >= high { break }
                    if coverLow > low { edges.append((SIMD2(seam, low), SIMD2(seam, coverLow))) }
                    low = Swift.max(low, coverHigh)
                    if low >= high { break }
                }
                if low < high { edges.append((SIMD2(seam, low), SIMD2(seam, high))) }
            }
        }
        return edges
    }

    /// Cuts the lon/lat-straight edge a-b (local positions pa, pb) into 3D chords that stray at
    /// most ``chordTolerance`` from it, appending the chords' ends (after `pa`, in order) to `path`.
    static func subdivide(
        _ a: SIMD2<Double>, _ b: SIMD2<Double>, _ pa: SIMD3<Double>, _ pb: SIMD3<Double>,
        frame: LocalFrame, depth: Int, maxDepth: Int = 30, into path: inout [SIMD3<Double>]
    ) {
        let m = (a + b) / 2
        let pm = frame.local(lat: m.y, lon: m.x)
        let off = pm - (pa + pb) / 2
        if depth < maxDepth, (off * off).sum() > chordTolerance * chordTolerance {
            subdivide(a, m, pa, pm, frame: frame, depth: depth + 1, maxDepth: maxDepth, into: &path)
            subdivide(m, b, pm, pb, frame: frame, depth: depth + 1, maxDepth: maxDepth, into: &path)
        } else {
            path.append(pb)
        }
    }

    /// Approximate bytes of the acceleration structures (not counting ``fence`` itself, whose
    /// ring arrays the locator shares unless unwrapping moved their longitudes).
    public var byteCount: Int { locator.byteCount + grid.byteCount + 256 }

    // MARK: Queries

    /// True if `p` is inside a polygon of this fence (not in a hole). Always false for points and lines.
    @inline(__always)
    public func contains(_ p: Coordinate) -> Bool {
        guard isPolygon else { return false }
        return locator.contains(x: PreparedFence.unwrap(p.lon, westLimit: westLimit), y: p.lat)
    }

    /// Signed distance in metres from `p` to this fence's unbuffered geometry: negative inside a
    /// polygon. NaN if `p` is not finite.
    public func signedDistance(to p: Coordinate) -> Double {
        signedDistance(to: PreparedPoint(p), within: .infinity)
    }

    /// ``signedDistance(to:)`` for the hot path: exact when `|d| <= limit`; otherwise some value
    /// with the right sign, `|value| > limit` and `|value| <=` the true distance (it costs little
    /// when the point is clearly farther than `limit` from the boundary).
    public func signedDistance(to p: Coordinate, within limit: Double) -> Double {
        signedDistance(to: PreparedPoint(p), within: limit)
    }

    /// ``signedDistance(to:within:)`` for a point already prepared once for many fences.
    public func signedDistance(to p: PreparedPoint, within limit: Double) -> Double {
        let c = p.coordinate
        guard c.lat.isFinite, c.lon.isFinite else { return .nan }
        let inside = contains(c)
        let limit = limit >= 0 ? limit : 0
        let local = frame.local(p.cartesian)
        guard let chordSquared = grid.nearestChordSquared(to: local, limitSquared: limit * limit) else {
            return inside ? -limit.nextUp : limit.nextUp
        }
        let d = Earth.arcLength(chord: chordSquared.squareRoot(), radius: radius)
        return inside ? -d : d
    }
}
