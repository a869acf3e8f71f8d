#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fence's geometry made ready for fast queries; immutable and shared between actors.
///
/// Distances are metres on the WGS84 ellipsoid; edges are straight in lon/lat (RFC 7946).
/// The signed distance is negative inside a polygon (distance to its boundary) and positive
/// outside; for points and lines it is the distance to the geometry. The distance to a buffered
/// boundary is `signedDistance - buffer`.
public final class PreparedFence: Sendable {
    public let fence: Fence
    /// Lon/lat bounds of the unbuffered geometry.
    public let bounds: GeoBounds

    /// Prepares `fence`, refusing geometry this code cannot measure correctly
    /// (within 1 km of a pole; an edge spanning more than 180 degrees of longitude).
    public init(_ fence: Fence) throws(GeometryError) {
        self.fence = fence
        var all: [Coordinate] = []
        switch fence.geometry {
        case .polygons(let ps): for p in ps { all += p.exterior }
        case .points(let ps): all = ps
        case .lines(let ls): for l in ls { all += l }
        }
        guard !all.isEmpty else { throw GeometryError("geometry has no positions") }
        let b = GeoBounds(of: all)
        let poleMargin = Earth.degreesLatitude(metres: 1000)
        if b.maxLat > 90 - poleMargin || b.minLat < -90 + poleMargin {
            throw GeometryError("lies within 1 km of a pole, which is not supported")
        }
        for path in PreparedFence.paths(of: fence.geometry) {
            for (a, c) in zip(path, path.dropFirst()) where abs(a.lon - c.lon) > 180 {
                throw GeometryError(
                    "an edge crosses the antimeridian (\(a.lon) to \(c.lon)): split it at 180 degrees as RFC 7946 section 3.1.9 says")
            }
        }
        bounds = b
    }

    /// Every ring or line as a path of positions (polygon rings are closed).
    static func paths(of geometry: FenceGeometry) -> [[Coordinate]] {
        switch geometry {
        case .polygons(let ps): ps.flatMap { [$0.exterior] + $0.holes }
        case .points(let ps): ps.map { [$0] }
        case .lines(let ls): ls
        }
    }

    /// True if `p` is inside a polygon of this fence (not in a hole). Always false for points and lines.
    public func contains(_ p: Coordinate) -> Bool {
        guard case .polygons(let polygons) = fence.geometry, bounds.contains(p) else { return false }
        for polygon in polygons where PreparedFence.ringContains(polygon.exterior, p) {
            if !polygon.holes.contains(where: { PreparedFence.ringContains($0, p) }) { return true }
        }
        return false
    }

    /// Signed distance in metres from `p` to this fence's unbuffered geometry: negative inside a polygon.
    public func signedDistance(to p: Coordinate) -> Double {
        let d = unsignedDistance(to: p)
        return contains(p) ? -d : d
    }

    /// Even-odd crossing test in lon/lat, exact for edges straight in lon/lat.
    static func ringContains(_ ring: [Coordinate], _ p: Coordinate) -> Bool {
        var inside = false
        var j = ring.count - 1
        for i in 0..<ring.count {
            let a = ring[i], b = ring[j]
            if (a.lat > p.lat) != (b.lat > p.lat) {
                let x = a.lon + (p.lat - a.lat) / (b.lat - a.lat) * (b.lon - a.lon)
                if p.lon < x { inside.toggle() }
            }
            j = i
        }
        return inside
    }

    /// Distance in metres from `p` to the nearest edge, vertex or point of the geometry,
    /// measured in a local plane centred on `p` (east and north metres per radian at p's latitude).
    func unsignedDistance(to p: Coordinate) -> Double {
        let ky = Earth.meridionalRadius(atLatitude: p.lat) * .pi / 180
        let kx = Earth.parallelRadius(atLatitude: p.lat) * .pi / 180
        func local(_ c: Coordinate) -> (Double, Double) {
            var dLon = c.lon - p.lon
            if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
            return (dLon * kx, (c.lat - p.lat) * ky)
        }
        var best = Double.infinity
        for path in PreparedFence.paths(of: fence.geometry) {
            var previous = local(path[0])
            best = min(best, (previous.0 * previous.0 + previous.1 * previous.1).squareRoot())
            for c in path.dropFirst() {
                let q = local(c)
                best = min(best, PreparedFence.originToSegment(previous, q))
                previous = q
            }
        }
        return best
    }

    static func originToSegment(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let dx = b.0 - a.0, dy = b.1 - a.1
        let len2 = dx * dx + dy * dy
        var t = len2 > 0 ? -(a.0 * dx + a.1 * dy) / len2 : 0
        t = min(1, max(0, t))
        let x = a.0 + t * dx, y = a.1 + t * dy
        return (x * x + y * y).squareRoot()
    }
}
