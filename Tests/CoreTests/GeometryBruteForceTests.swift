import Testing

@testable import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// The prepared structures (latitude bands and cells of ``PolygonLocator``, the cells and
/// shared-point segments of ``SegmentGrid``) against brute force over every edge, for random
/// points, points near vertices and points on vertex latitudes. An edge index off by one, a
/// band or cell missing an edge, a ring break taken for a segment or a segment left out would
/// show as a wrong inside answer or a distance metres off.
@Suite struct GeometryBruteForceTests {

    /// A closed star-shaped ring of `count` vertices around (lon, lat), radii `radius * 0.7...1.3`
    /// degrees of latitude (longitude scaled by the latitude); counterclockwise unless `reversed`.
    static func star(
        lon: Double, lat: Double, radius: Double, count: Int, random: inout SeededRandom, reversed: Bool = false
    ) -> [Coordinate] {
        let scale = 1 / cos(lat * .pi / 180)
        var ring: [Coordinate] = []
        for k in 0..<count {
            let angle = Double(k) / Double(count) * 2 * .pi * (reversed ? -1 : 1)
            let r = radius * random.within(0.7, 1.3)
            ring.append(Coordinate(lat: lat + r * sin(angle), lon: lon + r * cos(angle) * scale))
        }
        ring.append(ring[0])
        return ring
    }

    // MARK: Brute force

    /// Every polygon's ring edges as plain numbers (debug builds are slow with SIMD types):
    /// (x0, y0, x1, y1) per edge in unwrapped lon/lat, one list per polygon.
    static func polygonEdges(_ fence: PreparedFence) -> [[Double]] {
        guard case .polygons(let polygons) = fence.fence.geometry else { return [] }
        return polygons.map { polygon in
            var edges: [Double] = []
            for ring in [polygon.exterior] + polygon.holes {
                for (c, d) in zip(ring, ring.dropFirst()) {
                    edges += [
                        PreparedFence.unwrap(c.lon, westLimit: fence.westLimit), c.lat,
                        PreparedFence.unwrap(d.lon, westLimit: fence.westLimit), d.lat,
                    ]
                }
            }
            return edges
        }
    }

    /// Even-odd per polygon over every edge, with the documented half-open rule, in unwrapped lon/lat.
    static func bruteContains(_ fence: PreparedFence, _ polygons: [[Double]], _ p: Coordinate) -> Bool {
        let x = PreparedFence.unwrap(p.lon, westLimit: fence.westLimit), y = p.lat
        for e in polygons {
            var odd = false
            for k in stride(from: 0, to: e.count, by: 4) {
                let (ax, ay, bx, by) = (e[k], e[k + 1], e[k + 2], e[k + 3])
                guard ay != by else { continue }
                let (lowX, lowY, highX, highY) = ay < by ? (ax, ay, bx, by) : (bx, by, ax, ay)
                let slope = (highX - lowX) / (highY - lowY)
                if y >= lowY, y < highY, x < lowX + (y - lowY) * slope { odd.toggle() }
            }
            if odd { return true }
        }
        return false
    }

    /// Every boundary edge as (a, b) in unwrapped lon/lat: polygon ring edges except those lying
    /// on the antimeridian (the test fences' seam edges cover each other exactly), line edges,
    /// and each point as an edge of length zero.
    static func boundaryEdges(_ fence: PreparedFence) -> [(SIMD2<Double>, SIMD2<Double>)] {
        func u(_ c: Coordinate) -> SIMD2<Double> { SIMD2(PreparedFence.unwrap(c.lon, westLimit: fence.westLimit), c.lat) }
        let seam = PreparedFence.unwrap(180, westLimit: fence.westLimit)
        var edges: [(SIMD2<Double>, SIMD2<Double>)] = []
        switch fence.fence.geometry {
        case .polygons(let polygons):
            for ring in polygons.flatMap({ [$0.exterior] + $0.holes }) {
                for (c, d) in zip(ring, ring.dropFirst()) where !(u(c).x == seam && u(d).x == seam) {
                    edges.append((u(c), u(d)))
                }
            }
        case .points(let points): edges = points.map { (u($0), u($0)) }
        case .lines(let lines):
            for line in lines { for (c, d) in zip(line, line.dropFirst()) { edges.append((u(c), u(d))) } }
        }
        return edges
    }

    /// Every chord piece of every boundary edge, in Double, in the fence's local frame.
    static func bruteSegments(_ fence: PreparedFence) -> [(SIMD3<Double>, SIMD3<Double>)] {
        var segments: [(SIMD3<Double>, SIMD3<Double>)] = []
        for (a, b) in boundaryEdges(fence) {
            let pa = fence.frame.local(lat: a.y, lon: a.x), pb = fence.frame.local(lat: b.y, lon: b.x)
            var path = [pa]
            if a != b {
                PreparedFence.subdivide(a, b, pa, pb, frame: fence.frame, depth: 0, into: &path)
            } else {
                path.append(pa)
            }
            for (s, e) in zip(path, path.dropFirst()) { segments.append((s, e)) }
        }
        return segments
    }

    /// The smallest squared distance from `p` to the segments (flattened as six numbers each),
    /// by the textbook clamped projection.
    static func bruteChordSquared(_ p: SIMD3<Double>, _ segments: [Double]) -> Double {
        var best = Double.infinity
        let (px, py, pz) = (p.x, p.y, p.z)
        for k in stride(from: 0, to: segments.count, by: 6) {
            let (ax, ay, az) = (segments[k], segments[k + 1], segments[k + 2])
            let (dx, dy, dz) = (segments[k + 3] - ax, segments[k + 4] - ay, segments[k + 5] - az)
            let (wx, wy, wz) = (px - ax, py - ay, pz - az)
            let l2 = dx * dx + dy * dy + dz * dz
            let t = l2 > 0 ? Swift.min(1, Swift.max(0, (wx * dx + wy * dy + wz * dz) / l2)) : 0
            let (vx, vy, vz) = (wx - t * dx, wy - t * dy, wz - t * dz)
            best = Swift.min(best, vx * vx + vy * vy + vz * vz)
        }
        return best
    }

    // MARK: Checking

    /// Random points over the fence's box (grown by a fifth), points near every vertex and points
    /// on every vertex's latitude; longitudes back in -180...180.
    static func points(_ fence: PreparedFence, random: inout SeededRandom, count: Int, vertexStride: Int) -> [Coordinate] {
        let b = fence.bounds
        let growLat = (b.maxLat - b.minLat) * 0.2 + 1e-6, growLon = (b.maxLon - b.minLon) * 0.2 + 1e-6
        func wrap(_ lon: Double) -> Double { lon > 180 ? lon - 360 : lon < -180 ? lon + 360 : lon }
        var result: [Coordinate] = []
        for _ in 0..<count {
            result.append(
                Coordinate(
                    lat: random.within(b.minLat - growLat, b.maxLat + growLat),
                    lon: wrap(random.within(b.minLon - growLon, b.maxLon + growLon))))
        }
        let vertices = PreparedFence.paths(of: fence.fence.geometry).joined()
        let near = (b.maxLat - b.minLat) * 0.01 + 1e-5
        for (k, v) in vertices.enumerated() where k % vertexStride == 0 {
            result.append(v)
            result.append(Coordinate(lat: v.lat + random.within(-near, near), lon: wrap(v.lon + random.within(-near, near))))
            result.append(Coordinate(lat: v.lat, lon: wrap(random.within(b.minLon - growLon, b.maxLon + growLon))))
        }
        return result
    }

    /// Checks containment (exactly) and nearest chords (within `tolerance` metres, the 32-bit
    /// storage of the points) against brute force; returns how many points were inside.
    @discardableResult
    static func check(
        _ fence: PreparedFence, seed: UInt64, count: Int = 1500, vertexStride: Int = 1, tolerance: Double = 0.003
    ) -> Int {
        var random = SeededRandom(seed: seed)
        let segments = bruteSegments(fence).flatMap { [$0.0.x, $0.0.y, $0.0.z, $0.1.x, $0.1.y, $0.1.z] }
        let polygons = polygonEdges(fence)
        var inside = 0, wrongInside = 0, wrongDistance = 0, wrongBounded = 0
        for p in points(fence, random: &random, count: count, vertexStride: vertexStride) {
            let expectedInside = bruteContains(fence, polygons, p)
            if expectedInside { inside += 1 }
            if fence.contains(p) != expectedInside {
                wrongInside += 1
                if wrongInside <= 5 { Issue.record("\(fence.fence.id) \(p): contains \(!expectedInside), brute force \(expectedInside)") }
            }
            let local = fence.frame.local(PreparedPoint(p).cartesian)
            let expected = bruteChordSquared(local, segments).squareRoot()
            let found = fence.grid.nearestChordSquared(to: local, limitSquared: .infinity).map { $0.squareRoot() }
            if found == nil || abs(found! - expected) > tolerance {
                wrongDistance += 1
                if wrongDistance <= 5 {
                    Issue.record("\(fence.fence.id) \(p): nearest chord \(String(describing: found)), brute force \(expected)")
                }
            }
            // The bounded search: nil exactly when every chord is beyond the limit.
            let limit = random.within(0, 2 * expected)
            let bounded = fence.grid.nearestChordSquared(to: local, limitSquared: limit * limit).map { $0.squareRoot() }
            if expected < limit - tolerance, bounded == nil || abs(bounded! - expected) > tolerance {
                wrongBounded += 1
            } else if expected > limit + tolerance, bounded != nil {
                wrongBounded += 1
            }
            // And through the public API: the sign from containment, the size from the chord.
            let signed = fence.signedDistance(to: p)
            let arc = Earth.arcLength(chord: expected, radius: fence.radius)
            if (signed < 0) != expectedInside || abs(abs(signed) - arc) > tolerance * 1.01 { wrongDistance += 1 }
        }
        #expect(wrongInside == 0, "\(fence.fence.id): \(wrongInside) wrong inside answers")
        #expect(wrongDistance == 0, "\(fence.fence.id): \(wrongDistance) wrong distances")
        #expect(wrongBounded == 0, "\(fence.fence.id): \(wrongBounded) wrong bounded searches")
        return inside
    }

    /// For each ring of the fence (polygon by polygon, exterior then holes): whether the
    /// locator reads that very array (same storage, not a copy).
    static func sharedRings(_ fence: PreparedFence) -> [Bool] {
        guard case .polygons(let polygons) = fence.fence.geometry else { return [] }
        func storage(_ ring: [Coordinate]) -> UnsafePointer<Coordinate>? { ring.withUnsafeBufferPointer { $0.baseAddress } }
        let rings = fence.locator.rings
        let held = rings.several.isEmpty ? [rings.first] : rings.several
        let own = polygons.flatMap { [$0.exterior] + $0.holes }
        guard held.count == own.count else { return [] }
        return zip(held, own).map { storage($0) == storage($1) }
    }

    // MARK: Tests

    @Test func multiPolygonWithHolesAndIslands() throws {
        var random = SeededRandom(seed: 1)
        // Part 0: a star with a hole and an island (part 1) in that hole; part 2 apart, with two holes.
        let outer = Self.star(lon: 13.40, lat: 52.52, radius: 0.01, count: 60, random: &random)
        let hole = Self.star(lon: 13.40, lat: 52.52, radius: 0.003, count: 25, random: &random, reversed: true)
        let island = Self.star(lon: 13.40, lat: 52.52, radius: 0.001, count: 12, random: &random)
        let other = Self.star(lon: 13.45, lat: 52.53, radius: 0.015, count: 80, random: &random)
        let holeA = Self.star(lon: 13.443, lat: 52.53, radius: 0.003, count: 20, random: &random, reversed: true)
        let holeB = Self.star(lon: 13.457, lat: 52.53, radius: 0.003, count: 20, random: &random, reversed: true)
        let fence = try PreparedFence(
            Fence(
                id: "multi", layer: "test",
                geometry: .polygons([
                    Polygon(exterior: outer, holes: [hole]), Polygon(exterior: island),
                    Polygon(exterior: other, holes: [holeA, holeB]),
                ])))
        #expect(!fence.locator.rings.owners.isEmpty)
        // No longitude moves here: every ring is the fence's own array, none copied.
        #expect(fence.locator.rings.copiedCount == 0)
        #expect(Self.sharedRings(fence) == [true, true, true, true, true, true])
        let inside = Self.check(fence, seed: 11)
        #expect(inside > 100)
    }

    @Test func polygonWithManyVertices() throws {
        var random = SeededRandom(seed: 2)
        let outer = Self.star(lon: -73.95, lat: 40.73, radius: 0.03, count: 700, random: &random)
        let hole = Self.star(lon: -73.95, lat: 40.73, radius: 0.008, count: 90, random: &random, reversed: true)
        let fence = try PreparedFence(
            Fence(id: "many", layer: "test", geometry: .polygons([Polygon(exterior: outer, holes: [hole])])))
        #expect(fence.locator.rings.owners.isEmpty)
        #expect(Self.sharedRings(fence) == [true, true])
        #expect(fence.locator.bands.count > 100)
        guard case .narrow = fence.locator.bands.edges.storage, case .narrow = fence.grid.cellItems.storage else {
            Issue.record("expected 16-bit index lists")
            return
        }
        let inside = Self.check(fence, seed: 12, count: 3000)
        #expect(inside > 300)
    }

    @Test func moreThan65536Vertices() throws {
        // Indices no longer fit in 16 bits: bands and grid cells switch to 32-bit lists.
        var random = SeededRandom(seed: 4)
        // A wavy ring (a spiky one would cut its long edges into many pieces: slow in debug builds).
        let count = 70_000
        var outer: [Coordinate] = []
        for k in 0..<count {
            let angle = Double(k) / Double(count) * 2 * .pi
            let r = 0.05 * (1 + 0.2 * sin(9 * angle) + random.within(-1e-5, 1e-5))
            outer.append(Coordinate(lat: 60.17 + r * sin(angle), lon: 24.94 + 2 * r * cos(angle)))
        }
        outer.append(outer[0])
        let fence = try PreparedFence(Fence(id: "huge", layer: "test", geometry: .polygons([Polygon(exterior: outer)])))
        guard case .wide = fence.locator.bands.edges.storage, case .wide = fence.grid.cellItems.storage else {
            Issue.record("expected 32-bit index lists")
            return
        }
        let inside = Self.check(fence, seed: 19, count: 100, vertexStride: 2000)
        #expect(inside > 15)
    }

    @Test func fiftyKilometresAcross() throws {
        // Edges of ~800 m are cut into several chord pieces; points sit up to 25 km from the grid's centre.
        var random = SeededRandom(seed: 3)
        let outer = Self.star(lon: 2.35, lat: 48.85, radius: 0.225 / 1.3, count: 180, random: &random)
        let fence = try PreparedFence(Fence(id: "large", layer: "test", geometry: .polygons([Polygon(exterior: outer)])))
        // One ring: the locator reads the fence's exterior directly, with no ring tables.
        #expect(Self.sharedRings(fence) == [true])
        #expect(fence.locator.rings.several.isEmpty && fence.locator.rings.starts.isEmpty)
        #expect(fence.grid.points.count > 2 * 181)
        Self.check(fence, seed: 13)
    }

    @Test func antimeridianMultiPolygon() throws {
        func c(_ lon: Double, _ lat: Double) -> Coordinate { Coordinate(lat: lat, lon: lon) }
        // Two parts sharing the seam from -0.05 to 0.05 on ±180; a hole in the eastern part.
        let east = [
            c(180, 0.05), c(179.95, 0.06), c(179.93, 0.03), c(179.90, 0.02), c(179.92, -0.03), c(179.96, -0.06),
            c(180, -0.05), c(180, 0.05),
        ]
        let hole = [c(179.95, 0.01), c(179.94, -0.01), c(179.97, -0.02), c(179.95, 0.01)]
        let west = [
            c(-180, -0.05), c(-179.95, -0.07), c(-179.93, -0.02), c(-179.90, 0.0), c(-179.94, 0.06), c(-180, 0.05),
            c(-180, -0.05),
        ]
        let fence = try PreparedFence(
            Fence(
                id: "antimeridian", layer: "test",
                geometry: .polygons([Polygon(exterior: east, holes: [hole]), Polygon(exterior: west)])))
        #expect(fence.bounds.crossesAntimeridian)
        // Unwrapping moves the eastern part's longitudes by 360: that part and its hole are
        // copied, the western part is read from the fence.
        #expect(Self.sharedRings(fence) == [false, false, true])
        #expect(fence.locator.rings.copiedCount == east.count + hole.count)
        let inside = Self.check(fence, seed: 14, count: 3000)
        #expect(inside > 300)
        // Either side of the seam is deep inside: the seam is no boundary.
        #expect(fence.signedDistance(to: c(179.99999, 0)) < -1000)
        #expect(fence.signedDistance(to: c(-179.99999, 0)) < -1000)
    }

    @Test func linesAndPoints() throws {
        var random = SeededRandom(seed: 5)
        func walk(from start: Coordinate, steps: Int) -> [Coordinate] {
            var line = [start]
            for _ in 0..<steps {
                let last = line[line.count - 1]
                line.append(Coordinate(lat: last.lat + random.within(-0.002, 0.002), lon: last.lon + random.within(-0.002, 0.002)))
            }
            return line
        }
        let lines = try PreparedFence(
            Fence(
                id: "lines", layer: "test",
                geometry: .lines([
                    walk(from: Coordinate(lat: 59.33, lon: 18.06), steps: 40),
                    walk(from: Coordinate(lat: 59.34, lon: 18.08), steps: 25),
                ]),
                buffer: 10))
        Self.check(lines, seed: 15)
        let across = try PreparedFence(
            Fence(
                id: "lines-antimeridian", layer: "test",
                geometry: .lines([
                    [Coordinate(lat: -16.9, lon: 179.98), Coordinate(lat: -16.95, lon: 179.99), Coordinate(lat: -17.0, lon: 180)],
                    [Coordinate(lat: -17.0, lon: -180), Coordinate(lat: -17.02, lon: -179.97), Coordinate(lat: -17.05, lon: -179.99)],
                ]),
                buffer: 10))
        // Split at the antimeridian, the second part goes on from the first's end: one path, so
        // one point more than chord pieces.
        #expect(across.grid.points.count == Self.bruteSegments(across).count + 1)
        Self.check(across, seed: 16)
        var spots: [Coordinate] = []
        for _ in 0..<30 { spots.append(Coordinate(lat: random.within(35.60, 35.75), lon: random.within(139.60, 139.80))) }
        let points = try PreparedFence(Fence(id: "points", layer: "test", geometry: .points(spots), buffer: 25))
        Self.check(points, seed: 17)
    }
}
