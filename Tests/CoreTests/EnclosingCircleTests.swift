import Testing

@testable import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// ``PreparedFence/enclosingCircle(buffer:)``: the circles phones are given for fences. Shapes
/// whose smallest circle is known, a fence across the antimeridian, and random polygons checked
/// for coverage (every vertex within the circle) and size (against the brute-force smallest
/// circle and the farthest vertex).
@Suite struct EnclosingCircleTests {
    typealias Kit = EngineTestKit

    static func prepared(_ geometry: FenceGeometry) throws -> PreparedFence {
        try PreparedFence(Fence(id: "f", layer: "test", geometry: geometry))
    }

    static func ring(_ metres: [(Double, Double)]) -> [Coordinate] {
        let ring = metres.map { Kit.at(east: $0.0, north: $0.1) }
        return ring + [ring[0]]
    }

    /// Every vertex lies within the circle (Earth's distance from its centre), and the circle is
    /// at most the margin (0.1 % + 0.5 m) plus `slack` larger than the farthest one.
    static func expectCovers(_ circle: EnclosingCircle, _ positions: [Coordinate], slack: Double = 0.01) {
        let farthest = positions.map { Earth.distance(circle.centre, $0) }.max() ?? 0
        #expect(farthest <= circle.radius, "a vertex \(farthest) m from the centre is outside \(circle.radius) m")
        #expect(circle.radius <= farthest * (1.001 + slack) + 0.5, "\(circle.radius) m against farthest \(farthest) m")
    }

    /// Points along each edge of `ring` (straight in lon/lat, as fence edges are), for checking
    /// that edges bowing away from the vertices stay inside the circle too.
    static func alongEdges(_ ring: [Coordinate]) -> [Coordinate] {
        zip(ring, ring.dropFirst()).flatMap { a, b in
            [0.25, 0.5, 0.75].map { t in Coordinate(lat: a.lat + t * (b.lat - a.lat), lon: a.lon + t * (b.lon - a.lon)) }
        }
    }

    /// Edges as long as fences get (50 km) along parallels far north: their poleward bow is
    /// inside the circle.
    @Test func longEdgesFarNorthStayInside() throws {
        for lat in [45.0, 60, 75, 85] {
            let dLat = 50_000 / (Earth.meridionalRadius(atLatitude: lat) * .pi / 180)
            let dLon = 50_000 / (Earth.parallelRadius(atLatitude: lat) * .pi / 180)
            let box = [Coordinate(lat: lat, lon: 10), Coordinate(lat: lat, lon: 10 + dLon), Coordinate(lat: lat + dLat, lon: 10 + dLon),
                       Coordinate(lat: lat + dLat, lon: 10), Coordinate(lat: lat, lon: 10)]
            let thin = [Coordinate(lat: lat, lon: 10), Coordinate(lat: lat, lon: 10 + dLon), Coordinate(lat: lat + dLat / 50, lon: 10 + dLon),
                        Coordinate(lat: lat + dLat / 50, lon: 10), Coordinate(lat: lat, lon: 10)]
            for ring in [box, thin] {
                let circle = try Self.prepared(.polygons([Polygon(exterior: ring)])).enclosingCircle(buffer: 0)
                Self.expectCovers(circle, ring)
                let farthest = Self.alongEdges(ring).map { Earth.distance(circle.centre, $0) }.max() ?? 0
                #expect(farthest <= circle.radius, "at \(lat): an edge point \(farthest) m from the centre, radius \(circle.radius) m")
            }
        }
    }

    @Test func squareGetsTheCircleThroughItsCorners() throws {
        let corners = Self.ring([(-500, -500), (500, -500), (500, 500), (-500, 500)])
        let fence = try Self.prepared(.polygons([Polygon(exterior: corners)]))
        let circle = fence.enclosingCircle(buffer: 0)
        #expect(Earth.distance(circle.centre, Kit.origin) < 0.5, "centre \(circle.centre)")
        let corner = Earth.distance(Kit.origin, corners[0])
        #expect(circle.radius >= corner && circle.radius <= corner * 1.001 + 1, "\(circle.radius) against \(corner)")
        Self.expectCovers(circle, corners)
        // The buffer is added as it is: it is an exact distance, which needs no margin.
        let buffered = fence.enclosingCircle(buffer: 120)
        #expect(buffered.centre == circle.centre && abs(buffered.radius - circle.radius - 120) < 1e-9)
    }

    @Test func obtuseTriangleGetsItsLongestSideAsDiameter() throws {
        let corners = Self.ring([(-1000, 0), (1000, 0), (100, 300)])
        let circle = try Self.prepared(.polygons([Polygon(exterior: corners)])).enclosingCircle(buffer: 0)
        #expect(Earth.distance(circle.centre, Kit.origin) < 0.5, "centre \(circle.centre)")
        let half = Earth.distance(corners[0], corners[1]) / 2
        #expect(circle.radius >= half && circle.radius <= half * 1.001 + 1, "\(circle.radius) against \(half)")
        Self.expectCovers(circle, corners)
    }

    @Test func lineGetsTheCircleOnItsEnds() throws {
        let line = [Kit.at(east: -2000, north: -1000), Kit.at(east: 300, north: 100), Kit.at(east: 2000, north: 1000)]
        let circle = try Self.prepared(.lines([line])).enclosingCircle(buffer: 25)
        #expect(Earth.distance(circle.centre, Kit.origin) < 0.5, "centre \(circle.centre)")
        let half = Earth.distance(line[0], line[2]) / 2
        #expect(circle.radius >= half + 25 && circle.radius <= half * 1.001 + 1 + 25, "\(circle.radius) against \(half) + 25")
    }

    @Test func multiPointGetsTheCircleThroughTheRightTrianglesCorners() throws {
        // A right angle at the origin: the hypotenuse (5 km) is the diameter.
        let points = [Kit.at(east: 0, north: 0), Kit.at(east: 3000, north: 0), Kit.at(east: 0, north: 4000), Kit.at(east: 1000, north: 1000)]
        let circle = try Self.prepared(.points(points)).enclosingCircle(buffer: 10)
        #expect(Earth.distance(circle.centre, Kit.at(east: 1500, north: 2000)) < 2, "centre \(circle.centre)")
        let half = Earth.distance(points[1], points[2]) / 2
        #expect(circle.radius >= half + 10 && circle.radius <= half * 1.001 + 1 + 10, "\(circle.radius) against \(half) + 10")
    }

    @Test func singlePointIsItsOwnCentreWithTheBufferAsRadius() throws {
        let p = Coordinate(lat: 51.5, lon: -0.12)
        #expect(try Self.prepared(.points([p])).enclosingCircle(buffer: 75) == EnclosingCircle(centre: p, radius: 75))
        // Repeated positions are one point too: no margin on a radius of zero.
        #expect(try Self.prepared(.points([p, p])).enclosingCircle(buffer: 75) == EnclosingCircle(centre: p, radius: 75))
    }

    @Test func polygonOfTenThousandVerticesOnACircle() throws {
        let n = 10_000, r = 5_000.0
        let ring = Self.ring((0..<n).map { k in
            let a = 2 * Double.pi * Double(k) / Double(n)
            return (r * cos(a), r * sin(a))
        })
        let circle = try Self.prepared(.polygons([Polygon(exterior: ring)])).enclosingCircle(buffer: 0)
        #expect(abs(circle.radius - r) <= 0.005 * r, "\(circle.radius) against \(r)")
        #expect(Earth.distance(circle.centre, Kit.origin) < 5, "centre \(circle.centre)")
        Self.expectCovers(circle, ring)
    }

    /// A box 0.02 x 0.01 degrees on the equator, split at the antimeridian into two parts: one
    /// circle around both parts, centred on the seam.
    @Test func fenceAcrossTheAntimeridian() throws {
        let west = [Coordinate(lat: 0, lon: 179.99), Coordinate(lat: 0, lon: 180), Coordinate(lat: 0.01, lon: 180),
                    Coordinate(lat: 0.01, lon: 179.99), Coordinate(lat: 0, lon: 179.99)]
        let east = [Coordinate(lat: 0, lon: -180), Coordinate(lat: 0, lon: -179.99), Coordinate(lat: 0.01, lon: -179.99),
                    Coordinate(lat: 0.01, lon: -180), Coordinate(lat: 0, lon: -180)]
        let circle = try Self.prepared(.polygons([Polygon(exterior: west), Polygon(exterior: east)])).enclosingCircle(buffer: 0)
        #expect(Earth.distance(circle.centre, Coordinate(lat: 0.005, lon: 180)) < 0.5, "centre \(circle.centre)")
        #expect(abs(circle.centre.lon) <= 180)
        let half = Earth.distance(west[0], Coordinate(lat: 0.01, lon: -179.99)) / 2
        #expect(circle.radius >= half && circle.radius <= half * 1.001 + 1, "\(circle.radius) against \(half)")
        Self.expectCovers(circle, west + east)
    }

    /// The smallest circle by brute force in the fence's plane: of the circles on every pair
    /// and through every triple, the smallest that holds every point.
    static func bruteForceRadius(_ points: [SIMD2<Double>]) -> Double {
        func holdsAll(_ c: SIMD2<Double>, _ r: Double) -> Bool {
            points.allSatisfy { (($0 - c) * ($0 - c)).sum().squareRoot() <= r * (1 + 1e-9) + 1e-6 }
        }
        var best = Double.infinity
        for i in points.indices {
            for j in points.indices where j > i {
                let c = (points[i] + points[j]) / 2, d = points[j] - points[i]
                let r = (d * d).sum().squareRoot() / 2
                if r < best, holdsAll(c, r) { best = r }
                for k in points.indices where k > j {
                    let ab = points[j] - points[i], ac = points[k] - points[i]
                    let det = 2 * (ab.x * ac.y - ab.y * ac.x)
                    guard abs(det) > 1e-9 else { continue }
                    let lab = (ab * ab).sum(), lac = (ac * ac).sum()
                    let u = SIMD2((ac.y * lab - ab.y * lac) / det, (ab.x * lac - ac.x * lab) / det)
                    let r = (u * u).sum().squareRoot()
                    if r < best, holdsAll(points[i] + u, r) { best = r }
                }
            }
        }
        return best
    }

    /// Random star-shaped polygons of 3 to 400 vertices, 20 m to 40 km across, from the equator
    /// to 85 degrees and across the antimeridian: every vertex is covered, the circle is at
    /// most about 1 % larger than the farthest vertex from its centre, and (for the small ones)
    /// than the brute-force smallest circle.
    @Test func randomPolygonsAreCoveredByNearlyTheSmallestCircle() throws {
        var random = SplitMix64(seed: 2026)  // deterministic, so a failure can be replayed
        var bruteForced = 0
        for trial in 0..<400 {
            let lat = random.nextUniform(-85, 85)
            let lon = trial % 5 == 0 ? random.nextUniform(179.7, 180.3) : random.nextUniform(-180, 180)
            let size = exp(random.nextUniform(log(10), log(20_000)))
            let n = trial % 2 == 0 ? Int(random.nextUniform(3, 12)) : Int(random.nextUniform(3, 400))
            let metresPerLat = Earth.meridionalRadius(atLatitude: lat) * .pi / 180
            let metresPerLon = Earth.parallelRadius(atLatitude: lat) * .pi / 180
            let angles = (0..<n).map { _ in random.nextUniform(0, 2 * .pi) }.sorted()
            var ring = angles.map { a in
                let r = size * random.nextUniform(0.2, 1)
                var x = lon + r * cos(a) / metresPerLon
                if x > 180 { x -= 360 }
                return Coordinate(lat: lat + r * sin(a) / metresPerLat, lon: x)
            }
            ring.append(ring[0])
            // A ring across ±180 is two parts, as RFC 7946 asks; here only rings on one side are used.
            guard ring.allSatisfy({ $0.lon > 0 }) || ring.allSatisfy({ $0.lon < 0 }) else { continue }
            let fence = try Self.prepared(.polygons([Polygon(exterior: ring)]))
            let circle = fence.enclosingCircle(buffer: 0)
            Self.expectCovers(circle, ring)
            #expect(Self.alongEdges(ring).allSatisfy { Earth.distance(circle.centre, $0) <= circle.radius }, "an edge leaves the circle")
            if n <= 12 {
                let plane = ring.map { c -> SIMD2<Double> in
                    let p = fence.frame.local(lat: c.lat, lon: c.lon)
                    return SIMD2(p.x, p.y)
                }
                let smallest = Self.bruteForceRadius(plane)
                #expect(circle.radius <= smallest * 1.01 + 0.5, "\(circle.radius) against the smallest \(smallest)")
                #expect(circle.radius >= smallest * 0.999, "\(circle.radius) against the smallest \(smallest)")
                bruteForced += 1
            }
        }
        #expect(bruteForced > 100)
    }

    /// A MultiPolygon split at the antimeridian with random vertices on both sides: covered.
    @Test func randomPartsAcrossTheAntimeridianAreCovered() throws {
        var random = SplitMix64(seed: 180)
        for _ in 0..<100 {
            let lat = random.nextUniform(-70, 70), height = random.nextUniform(0.001, 0.2)
            let westEdge = random.nextUniform(179.5, 179.999), eastEdge = random.nextUniform(-179.999, -179.5)
            let west = [Coordinate(lat: lat, lon: westEdge), Coordinate(lat: lat, lon: 180), Coordinate(lat: lat + height, lon: 180),
                        Coordinate(lat: lat + height, lon: westEdge), Coordinate(lat: lat, lon: westEdge)]
            let east = [Coordinate(lat: lat, lon: -180), Coordinate(lat: lat, lon: eastEdge), Coordinate(lat: lat + height, lon: eastEdge),
                        Coordinate(lat: lat + height, lon: -180), Coordinate(lat: lat, lon: -180)]
            let circle = try Self.prepared(.polygons([Polygon(exterior: west), Polygon(exterior: east)])).enclosingCircle(buffer: 0)
            Self.expectCovers(circle, west + east)
            // Centred over the seam's side of the box, never on the far side of the Earth.
            #expect(abs(circle.centre.lon) > 179)
        }
    }

    /// 100,000 vertices (a wavy ring) finish and are covered; no timing is asserted.
    @Test func hundredThousandVertices() throws {
        let n = 100_000
        let ring = Self.ring((0..<n).map { k in
            let a = 2 * Double.pi * Double(k) / Double(n)
            let r = 20_000 + 500 * sin(37 * a)
            return (r * cos(a), r * sin(a))
        })
        let circle = try Self.prepared(.polygons([Polygon(exterior: ring)])).enclosingCircle(buffer: 0)
        Self.expectCovers(circle, ring)
        #expect(circle.radius <= 20_500 * 1.01)
    }
}
