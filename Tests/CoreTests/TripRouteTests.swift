import Foundation
import Testing
@testable import GeotriggerCore

extension TripScene.Path {
    func route() throws -> TripRoute { try TripRoute(coordinates) }
}

/// `TripRoute`: lengths, and the forward search that follows a device along a route that loops,
/// doubles back and runs a street twice (docs/trips.md "Following the route").
@Suite struct TripRouteTests {
    /// Around a block (running its first street twice), then down a dead end and back up it,
    /// then on east: A B C D A B E B2 F.
    static let winding = TripScene.Path([
        (0, 0), (600, 0), (600, 300), (0, 300), (0, 0), (600, 0), (600, -400), (600, -50), (1200, -50),
    ])

    @Test func lengthsAreMetresAlongTheRoute() throws {
        let route = try Self.winding.route()
        #expect(route.cumulative.count == 9)
        for (k, expected) in Self.winding.cumulative.enumerated() {
            #expect(abs(route.cumulative[k] - expected) < 0.5, "vertex \(k): \(route.cumulative[k]) vs \(expected)")
        }
        // A long edge is cut into chords: its length is that of the lon/lat-straight line.
        let a = Coordinate(lat: 10, lon: 20), b = Coordinate(lat: 10.5, lon: 21)
        let long = try TripRoute([a, b])
        let straight = LonLatSegment(from: a, to: b).length
        #expect(abs(long.length - straight) < 0.05, "\(long.length) vs \(straight)")
        #expect(long.chordCount > 1)
        #expect(throws: GeometryError.self) { try TripRoute([TripScene.origin, TripScene.origin]) }
        #expect(throws: GeometryError.self) { try TripRoute([TripScene.origin, Coordinate(lat: 91, lon: 0)]) }
    }

    /// One position seen from different places along the route: the first pass from the start,
    /// the second pass once the first is behind, nothing once both are.
    @Test func theSearchTakesTheFirstPassAheadOfFrom() throws {
        let route = try Self.winding.route()
        let p = TripScene.at(300, 5)  // beside street AB, run at 300 m and again at 1,800 + 300 m
        let first = route.project(p, from: 0, until: .infinity, corridor: 50)
        #expect(first.isWithin && abs(first.along - 300) < 0.5 && abs(first.offBy - 5) < 0.01)
        let second = route.project(p, from: 1000, until: .infinity, corridor: 50)
        #expect(second.isWithin && abs(second.along - 2100) < 0.5)
        // Bounded ahead: from 1,000 m with 500 m of reach the second pass is out of range.
        let bounded = route.project(p, from: 1000, until: 1500, corridor: 50)
        #expect(!bounded.isWithin && bounded.offBy > 50)
        let past = route.project(p, from: 2300, until: .infinity, corridor: 50)
        #expect(!past.isWithin)
        // The dead end (600, -400) is run down and back up: a point beside it going down...
        let deadEnd = TripScene.at(605, -200)
        let down = route.project(deadEnd, from: 2400, until: .infinity, corridor: 50)
        #expect(abs(down.along - 2600) < 0.5)
        // ...and the same point once the turn at the end is behind.
        let up = route.project(deadEnd, from: 2810, until: .infinity, corridor: 50)
        #expect(abs(up.along - 3000) < 0.5)
    }

    /// A device standing by the route for an hour with its fixes scattered 15 m (per axis)
    /// around it: `along` stays centred on the device rather than ratcheting forward on the
    /// forward-most fixes (which would leave the device behind it, and its fixes out of the
    /// corridor more often).
    @Test func jitterAlongTheRoadDoesNotRatchetForward() throws {
        let path = TripScene.Path([(0, 0), (3000, 0)])
        let route = try path.route()
        var random = SplitMix64(seed: 11)
        var along = 1000.0
        var sum = 0.0
        var outside = 0
        for _ in 0..<3600 {
            let p = SIMD2(1000.0, 0) + random.gaussian(15)
            let projection = route.project(TripScene.at(p.x, p.y), from: along, until: along + 600, corridor: 50)
            if projection.isWithin { along = projection.along } else { outside += 1 }
            sum += along
        }
        let mean = sum / 3600
        print("TripRouteTests: an hour standing, 15 m jitter: mean along \(String(format: "%.1f", mean)) m of 1000, \(outside) fixes out")
        #expect(abs(mean - 1000) < 5)
        #expect(outside < 10)
    }

    /// The search does not visit the whole route per fix: from just behind the device on a long
    /// route it measures a few chords, and a device far off it costs about three sphere tests per
    /// 16 chords (plus the chords of the few blocks near its nearest point).
    @Test func aLongRouteIsSearchedFromTheLastAlong() throws {
        // 20,000 vertices, 10 m apart east, zigzagging 2 m north: 204 km.
        let path = TripScene.Path((0..<20_000).map { (Double($0) * 10, $0 % 2 == 0 ? 0.0 : 2.0) })
        let route = try path.route()
        #expect(route.chordCount == 19_999)
        #expect(route.byteCount / 20_000 < 70, "\(route.byteCount) bytes")
        // Halfway along the chord from x = 150,000 m to 150,010 m.
        let p = TripScene.at(150_005, 1)
        let expected = (path.cumulative[15_000] + path.cumulative[15_001]) / 2
        var visited = 0
        let found = route.project(p, from: expected - 20, until: expected + 600, corridor: 50, visited: &visited)
        #expect(found.isWithin && abs(found.along - expected) < 1)
        #expect(visited < 10, "visited \(visited)")
        visited = 0
        let far = route.project(TripScene.at(150_000, 5_000), from: 0, until: .infinity, corridor: 50, visited: &visited)
        #expect(!far.isWithin && abs(far.offBy - 5_000) < 5)
        #expect(visited < 20_000 / 4, "visited \(visited)")
        print("TripRouteTests: 20,000-vertex route, a device 5 km off it: \(visited) chords and blocks measured")
        // Joining mid-route: the whole route is searched once, cheaply, for the first stretch near it.
        visited = 0
        let first = route.project(p, from: 0, until: .infinity, corridor: 50, visited: &visited)
        #expect(first.isWithin && abs(first.along - expected) < 1)
        #expect(visited < 20_000 / 16 + 100, "visited \(visited)")
    }
}
