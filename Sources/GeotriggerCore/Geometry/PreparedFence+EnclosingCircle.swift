#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The circle that covers a buffered fence, for devices that can only be given circles
/// (OwnTracks waypoints).
extension PreparedFence {
    /// The smallest circle (within the margin below) that covers this fence grown by `buffer`
    /// metres.
    ///
    /// A single Point gives the point itself with radius `buffer`. Anything else gives the
    /// minimal enclosing circle of its positions (every position of a MultiPoint or of the
    /// lines; a polygon's exterior vertices, as its holes lie inside them) grown by `buffer`.
    ///
    /// How: the positions are placed in the fence's local east/north plane (its ``LocalFrame``
    /// seen from above; Earth-centred positions, so a fence split at the antimeridian needs no
    /// unwrapping), where Welzl's randomized incremental algorithm finds the smallest circle in
    /// expected linear time (the order is shuffled with a fixed seed, so the result is the same
    /// on every run). The plane's centre is taken back to latitude and longitude, and the
    /// radius is then the true (ellipsoidal, chord-to-arc) distance from that centre to the
    /// farthest position, so every position is covered whatever the plane's distortion.
    ///
    /// Safety margin: that radius is increased by 0.1 % plus 0.5 m before `buffer` is added.
    /// It covers what the positions alone do not: edges are straight in lon/lat, so between two
    /// covered vertices an edge bows poleward by up to about L² tan(lat) / 8R (85 m for a 50 km
    /// edge at 60 degrees, always inside the circle's own bulge for fences up to about 100 km
    /// at latitudes below 89 degrees), plus the difference between this distance and a phone's
    /// own (spherical or ellipsoidal) one. The result is meant for fences up to a few hundred
    /// kilometres across; beyond that the plane's distortion makes the circle larger than
    /// necessary (never smaller).
    public func enclosingCircle(buffer: Double) -> EnclosingCircle {
        let buffer = buffer.isFinite ? Swift.max(0, buffer) : 0
        var positions: [Coordinate] = []
        switch fence.geometry {
        case .points(let points):
            if points.count == 1 { return EnclosingCircle(centre: points[0], radius: buffer) }
            positions = points
        case .lines(let lines):
            positions.reserveCapacity(lines.reduce(0) { $0 + $1.count })
            for line in lines { positions += line }
        case .polygons(let polygons):
            positions.reserveCapacity(polygons.reduce(0) { $0 + $1.exterior.count })
            for polygon in polygons { positions += polygon.exterior }
        }
        let local = positions.map { frame.local(lat: $0.lat, lon: $0.lon) }
        let planar = PreparedFence.smallestCircle(local.map { SIMD2($0.x, $0.y) })
        guard planar.radius > 0 else { return EnclosingCircle(centre: positions[0], radius: buffer) }

        let centre = centreCoordinate(east: planar.centre.x, north: planar.centre.y)
        let c = frame.local(lat: centre.lat, lon: centre.lon)
        var farthestChord = 0.0
        for p in local {
            let d = p - c
            farthestChord = Swift.max(farthestChord, (d * d).sum())
        }
        let farthest = Earth.arcLength(chord: farthestChord.squareRoot(), radius: radius)
        return EnclosingCircle(centre: centre, radius: farthest * 1.001 + 0.5 + buffer)
    }

    /// The coordinate on the ellipsoid whose position in ``frame`` is `east`, `north` metres
    /// (seen from above), by Newton steps from the spherical guess; longitude in -180...180.
    func centreCoordinate(east: Double, north: Double) -> Coordinate {
        // The frame's origin, as the initializer placed it.
        let lat0 = (bounds.minLat + bounds.maxLat) / 2, lon0 = (bounds.minLon + bounds.maxLon) / 2
        let degrees = 180 / Double.pi
        var lat = lat0 + north / Earth.meridionalRadius(atLatitude: lat0) * degrees
        var lon = lon0 + east / Earth.parallelRadius(atLatitude: lat) * degrees
        for _ in 0..<8 {
            let p = frame.local(lat: lat, lon: lon)
            let dEast = east - p.x, dNorth = north - p.y
            if abs(dEast) < 1e-6, abs(dNorth) < 1e-6 { break }
            lat += dNorth / Earth.meridionalRadius(atLatitude: lat) * degrees
            lon += dEast / Earth.parallelRadius(atLatitude: lat) * degrees
        }
        while lon > 180 { lon -= 360 }
        while lon < -180 { lon += 360 }
        return Coordinate(lat: lat, lon: lon)
    }

    /// The smallest circle holding every point of `points` (not empty), by Welzl's randomized
    /// incremental algorithm (expected linear time). Points within 1 µm of a circle count as in
    /// it; three (nearly) collinear boundary points give the circle on the farthest pair.
    static func smallestCircle(_ points: [SIMD2<Double>]) -> (centre: SIMD2<Double>, radius: Double) {
        var p = points
        // A fixed seed: the same fence always gets the same circle.
        var random = SplitMix64(seed: UInt64(p.count))
        if p.count > 1 {
            for i in stride(from: p.count - 1, to: 0, by: -1) {
                p.swapAt(i, Int(random.next() % UInt64(i + 1)))
            }
        }
        func holds(_ c: (centre: SIMD2<Double>, radius: Double), _ q: SIMD2<Double>) -> Bool {
            let d = q - c.centre
            let r = c.radius + 1e-6
            return (d * d).sum() <= r * r
        }
        func diameter(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> (centre: SIMD2<Double>, radius: Double) {
            let d = b - a
            return ((a + b) / 2, (d * d).sum().squareRoot() / 2)
        }
        func through(_ a: SIMD2<Double>, _ b: SIMD2<Double>, _ c: SIMD2<Double>) -> (centre: SIMD2<Double>, radius: Double) {
            let ab = b - a, ac = c - a
            let lab = (ab * ab).sum(), lac = (ac * ac).sum()
            let det = 2 * (ab.x * ac.y - ab.y * ac.x)
            if abs(det) > 1e-12 * (lab + lac) {
                let u = SIMD2((ac.y * lab - ab.y * lac) / det, (ab.x * lac - ac.x * lab) / det)
                if u.x.isFinite, u.y.isFinite { return (a + u, (u * u).sum().squareRoot()) }
            }
            // Collinear: the farthest pair's circle holds the third point.
            let candidates = [diameter(a, b), diameter(a, c), diameter(b, c)]
            return candidates.max { $0.radius < $1.radius }!
        }
        var circle = (centre: p[0], radius: 0.0)
        for i in 1..<Swift.max(1, p.count) where !holds(circle, p[i]) {
            circle = (p[i], 0)
            for j in 0..<i where !holds(circle, p[j]) {
                circle = diameter(p[i], p[j])
                for k in 0..<j where !holds(circle, p[k]) {
                    circle = through(p[i], p[j], p[k])
                }
            }
        }
        return circle
    }
}
