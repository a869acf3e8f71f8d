import Testing

@testable import GeotriggerCore

@Suite struct GeometryEdgeCaseTests {
    static func polygon(_ rings: [[(Double, Double)]]) -> Polygon {
        let rings = rings.map { $0.map { Coordinate(lat: $0.1, lon: $0.0) } }
        return Polygon(exterior: rings[0], holes: Array(rings.dropFirst()))
    }

    static func fence(_ polygons: [Polygon], buffer: Double? = nil) throws -> PreparedFence {
        try PreparedFence(Fence(id: "f", layer: "test", geometry: .polygons(polygons), buffer: buffer))
    }

    static func at(_ lon: Double, _ lat: Double) -> Coordinate { Coordinate(lat: lat, lon: lon) }

    @Test func rayThroughVertices() throws {
        // A diamond: the ray from points on latitude 0 passes through the vertices at (±1, 0).
        let diamond = try Self.fence([Self.polygon([[(0, 1), (-1, 0), (0, -1), (1, 0), (0, 1)]])])
        #expect(diamond.contains(Self.at(-0.5, 0)))
        #expect(diamond.contains(Self.at(0.9, 0)))
        #expect(!diamond.contains(Self.at(-1.5, 0)))
        #expect(!diamond.contains(Self.at(1.5, 0)))
        // A spike: the ray from (−0.5, 0.5) passes through the tip vertex at (0.5, 0.5).
        let spike = try Self.fence([Self.polygon([[(0, 0), (1, 0), (1, 1), (0.5, 0.5), (0, 1), (0, 0)]])])
        #expect(spike.contains(Self.at(0.25, 0.5)))
        #expect(!spike.contains(Self.at(-0.5, 0.5)))
        #expect(!spike.contains(Self.at(0.5, 0.75)))
        #expect(spike.contains(Self.at(0.75, 0.5)))
    }

    @Test func horizontalEdges() throws {
        // A staircase: rays along latitudes 0.002 and 0.004 run along horizontal edges.
        let stairs = try Self.fence([
            Self.polygon([[
                (0, 0), (0.01, 0), (0.01, 0.002), (0.02, 0.002), (0.02, 0.004), (0.03, 0.004), (0.03, 0.01),
                (0, 0.01), (0, 0),
            ]])
        ])
        #expect(stairs.contains(Self.at(0.005, 0.002)))
        #expect(!stairs.contains(Self.at(0.015, 0.001)))
        #expect(stairs.contains(Self.at(0.015, 0.003)))
        #expect(!stairs.contains(Self.at(0.035, 0.004)))
        #expect(stairs.contains(Self.at(0.025, 0.005)))
        #expect(!stairs.contains(Self.at(-0.001, 0.002)))
        // A point 0.5 m above the horizontal edge at 0.002 is 0.5 m from the boundary.
        let above = Self.at(0.015, 0.002 + 0.5 / 110_574)
        #expect(abs(stairs.signedDistance(to: above) - -0.5) < 0.01)
    }

    @Test func holesTouchingEachOtherAndTheExterior() throws {
        let square = [(0.0, 0.0), (0.01, 0.0), (0.01, 0.01), (0.0, 0.01), (0.0, 0.0)]
        // Two holes sharing the vertex (0.005, 0.005); a third touching the exterior at (0.01, 0.002).
        let a = [(0.002, 0.004), (0.005, 0.005), (0.002, 0.006), (0.002, 0.004)]
        let b = [(0.005, 0.005), (0.008, 0.004), (0.008, 0.006), (0.005, 0.005)]
        let c = [(0.01, 0.002), (0.008, 0.001), (0.008, 0.003), (0.01, 0.002)]
        let f = try Self.fence([Self.polygon([square, a, b, c])])
        #expect(!f.contains(Self.at(0.003, 0.005)))  // in hole a
        #expect(!f.contains(Self.at(0.007, 0.005)))  // in hole b
        #expect(!f.contains(Self.at(0.0085, 0.002)))  // in hole c
        #expect(f.contains(Self.at(0.005, 0.0057)))  // between the holes, above the shared vertex
        #expect(f.contains(Self.at(0.005, 0.0043)))
        #expect(f.contains(Self.at(0.001, 0.005)))  // left of both holes, on the ray through them
        #expect(f.contains(Self.at(0.009, 0.0035)))
        // In a hole the distance is positive: to the hole's edge.
        let inHole = f.signedDistance(to: Self.at(0.003, 0.005))
        #expect(inHole > 0 && inHole < 112)
    }

    @Test func multiPolygonIsTheUnionOfItsParts() throws {
        let first = Self.polygon([[(0, 0), (0.02, 0), (0.02, 0.01), (0, 0.01), (0, 0)]])
        let overlapping = Self.polygon([[(0.01, 0.005), (0.03, 0.005), (0.03, 0.02), (0.01, 0.02), (0.01, 0.005)]])
        let apart = Self.polygon([[(1, 1), (1.01, 1), (1.01, 1.01), (1, 1), (1, 1)]])
        let f = try Self.fence([first, overlapping, apart])
        #expect(f.contains(Self.at(0.015, 0.007)))  // in both parts
        #expect(f.contains(Self.at(0.005, 0.005)))
        #expect(f.contains(Self.at(0.025, 0.015)))
        #expect(f.contains(Self.at(1.008, 1.002)))
        #expect(!f.contains(Self.at(0.025, 0.002)))
    }

    @Test func antimeridianSplitIsOneRegion() throws {
        // 0.4 degrees wide, split at ±180; the seam is not a boundary.
        let west = Self.polygon([[(179.8, -16.2), (180, -16.2), (180, -16), (179.8, -16), (179.8, -16.2)]])
        let east = Self.polygon([[(-180, -16.2), (-179.8, -16.2), (-179.8, -16), (-180, -16), (-180, -16.2)]])
        let f = try Self.fence([west, east])
        #expect(f.bounds.minLon == 179.8)
        #expect(abs(f.bounds.maxLon - 180.2) < 1e-9)
        #expect(f.bounds.crossesAntimeridian)
        let nearSeamWest = Self.at(179.9999, -16.1), nearSeamEast = Self.at(-179.9999, -16.1)
        #expect(f.contains(nearSeamWest) && f.contains(nearSeamEast))
        #expect(!f.contains(Self.at(-179.7, -16.1)) && !f.contains(Self.at(179.7, -16.1)))
        // Depth is to the real boundary (0.1 degrees of latitude, about 11 km), not to the seam.
        let expected = Earth.distance(Self.at(-179.9999, -16.1), Self.at(-179.9999, -16.2))
        #expect(abs(f.signedDistance(to: nearSeamEast) + expected) < 1)
        // Outside, across ±180: 0.05 degrees east of the eastern edge.
        let outside = f.signedDistance(to: Self.at(-179.75, -16.1))
        #expect(abs(outside - Earth.distance(Self.at(-179.75, -16.1), Self.at(-179.8, -16.1))) < 0.1)
        // A part that merely touches 180 keeps its edge there.
        let alone = try Self.fence([west])
        #expect(abs(alone.signedDistance(to: Self.at(-179.99, -16.1)) - Earth.distance(Self.at(-179.99, -16.1), Self.at(180, -16.1))) < 0.1)
    }

    @Test func refusesWhatItCannotMeasure() {
        func message(_ geometry: FenceGeometry) -> String? {
            do {
                _ = try PreparedFence(Fence(id: "f", layer: "test", geometry: geometry, buffer: 10))
                return nil
            } catch {
                return error.message
            }
        }
        #expect(message(.points([Self.at(0, 89.995)])) == "lies within 1 km of a pole, which is not supported")
        #expect(message(.points([Self.at(0, -89.999)])) == "lies within 1 km of a pole, which is not supported")
        #expect(message(.points([Self.at(0, 89.9)])) == nil)
        #expect(message(.lines([[Self.at(179.9, 0), Self.at(-179.9, 0)]]))?.contains("split it at 180 degrees") == true)
        #expect(message(.points([Self.at(.nan, 0)]))?.contains("out of range") == true)
        #expect(message(.points([Self.at(200, 0)]))?.contains("expected longitude -180...180") == true)
        #expect(message(.lines([])) == "geometry has no positions")
    }

    @Test func boundedDistance() throws {
        let point = try PreparedFence(Fence(id: "p", layer: "test", geometry: .points([Self.at(10, 50)]), buffer: 20))
        let p = Self.at(10, 50.001)  // about 111 m north
        let exact = point.signedDistance(to: p)
        #expect(abs(exact - 111.2) < 0.2)
        #expect(point.signedDistance(to: p, within: 200) == exact)
        let clipped = point.signedDistance(to: p, within: 50)
        #expect(clipped > 50 && clipped <= exact)
        #expect(!point.contains(p))
        // Inside a polygon deeper than the limit: negative, beyond the limit.
        let square = try Self.fence([Self.polygon([[(0, 0), (0.01, 0), (0.01, 0.01), (0, 0.01), (0, 0)]])])
        let centre = Self.at(0.005, 0.005)
        let depth = square.signedDistance(to: centre)
        #expect(abs(depth + 553) < 2)
        let v = square.signedDistance(to: centre, within: 100)
        #expect(v < -100 && v >= depth)
        #expect(square.signedDistance(to: centre, within: 1000) == depth)
        #expect(square.signedDistance(to: Self.at(.nan, 0)).isNaN)
    }

    @Test func edgesAreStraightInLonLatNotGeodesics() throws {
        // 0.72 degrees along the parallel at 60 N: the great circle between the ends bulges
        // about 60 m north of it. A point 0.001 degrees north of the middle is one meridian arc away.
        let line = try PreparedFence(
            Fence(id: "l", layer: "test", geometry: .lines([[Self.at(10, 60), Self.at(10.72, 60)]]), buffer: 5))
        let expected = Earth.meridionalRadius(atLatitude: 60.0005) * 0.001 * .pi / 180
        #expect(abs(line.signedDistance(to: Self.at(10.36, 60.001)) - expected) < 0.02)
        #expect(abs(line.signedDistance(to: Self.at(10.36, 59.999)) - expected) < 0.02)
    }

    @Test func earthDistanceMatchesKnownGeodesics() {
        // One degree along the equator is a * pi / 180; one degree of meridian from the equator
        // is 110,574.389 m on WGS84.
        #expect(abs(Earth.distance(Self.at(0, 0), Self.at(1, 0)) - 111_319.4908) < 0.01)
        #expect(abs(Earth.distance(Self.at(0, 0), Self.at(0, 1)) - 110_574.389) < 0.5)
        #expect(Earth.distance(Self.at(179.9, 0), Self.at(-179.9, 0)) < 22_300)
    }
}

@Suite struct GeometryAccuracyCircleTests {
    @Test func circleRelationsAgreeWithTheDistance() throws {
        // A square about 1.1 km on a side and a buffered point; circles at many places and sizes.
        let square = try PreparedFence(
            Fence(
                id: "s", layer: "test",
                geometry: .polygons([
                    Polygon(exterior: [
                        Coordinate(lat: 0, lon: 0), Coordinate(lat: 0, lon: 0.01), Coordinate(lat: 0.01, lon: 0.01),
                        Coordinate(lat: 0.01, lon: 0), Coordinate(lat: 0, lon: 0),
                    ])
                ])))
        let point = try PreparedFence(
            Fence(id: "p", layer: "test", geometry: .points([Coordinate(lat: 0.005, lon: 0.005)]), buffer: 30))
        var intersecting = 0, inside = 0
        for fence in [square, point] {
            for i in 0..<40 {
                for j in 0..<40 {
                    let c = Coordinate(lat: -0.002 + Double(i) * 0.00036, lon: -0.002 + Double(j) * 0.00036)
                    let p = PreparedPoint(c)
                    let s = fence.signedDistance(to: c)
                    for radius in [0.0, 5, 50, 400] {
                        for buffer in [0.0, 30] {
                            let d = s - buffer
                            if abs(d - radius) > 0.01 {
                                #expect(fence.circleIntersects(p, radius: radius, buffer: buffer) == (d <= radius))
                            }
                            if abs(d + radius) > 0.01 {
                                #expect(fence.circleIsInside(p, radius: radius, buffer: buffer) == (d <= -radius))
                            }
                            if fence.circleIntersects(p, radius: radius, buffer: buffer) { intersecting += 1 }
                            if fence.circleIsInside(p, radius: radius, buffer: buffer) { inside += 1 }
                            let bounded = fence.bufferedDistance(to: p, buffer: buffer, within: 100)
                            if abs(d) <= 100 { #expect(abs(bounded - d) < 1e-9) } else { #expect(abs(bounded) > 100 - 1e-9 && (bounded < 0) == (d < 0)) }
                        }
                    }
                }
            }
        }
        #expect(intersecting > 1000 && inside > 1000)
    }
}
