import Testing

@testable import GeotriggerCore

/// ``EngineSnapshot/nearestFences(to:trigger:count:)``: the fences a phone is given, against a
/// brute-force ranking of every fence, with `where`, other triggers and buffers.
@Suite struct NearestFencesTests {
    typealias Kit = EngineTestKit

    /// grid: 8 x 8 squares of 300 m, 1 km apart, alternately `even` and `odd`; big: a 6 km
    /// square east of the grid; poi: points with their own buffers; dateline: a box split at
    /// ±180. Triggers: `all` (grid, big, poi, dateline; buffer 50), `even` (grid, `where`
    /// parity is even; buffer 0), `poi` (poi only; buffer 200 unless the point has its own).
    static func snapshot() throws -> EngineSnapshot {
        var grid: [Fence] = []
        for row in 0..<8 {
            for column in 0..<8 {
                let west = Double(column) * 1000, south = Double(row) * 1000
                grid.append(
                    Kit.box(
                        "g\(row)-\(column)", layer: "grid", west: west, east: west + 300, south: south, north: south + 300,
                        properties: ["parity": .string((row + column) % 2 == 0 ? "even" : "odd")],
                        featureIndex: grid.count))
            }
        }
        let big = Kit.box("big", layer: "big", west: 12_000, east: 18_000, south: 0, north: 6000)
        let poi = [
            Kit.point("p1", east: -1500, north: 500, buffer: 400, featureIndex: 0),
            Kit.point("p2", east: 3500, north: 3500, featureIndex: 1),
            Kit.point("p3", east: 9000, north: -2000, buffer: 30, featureIndex: 2),
        ]
        let west = [Coordinate(lat: 0, lon: 179.99), Coordinate(lat: 0, lon: 180), Coordinate(lat: 0.01, lon: 180),
                    Coordinate(lat: 0.01, lon: 179.99), Coordinate(lat: 0, lon: 179.99)]
        let east = [Coordinate(lat: 0, lon: -180), Coordinate(lat: 0, lon: -179.99), Coordinate(lat: 0.01, lon: -179.99),
                    Coordinate(lat: 0.01, lon: -180), Coordinate(lat: 0, lon: -180)]
        let dateline = Fence(id: "d", layer: "dateline", geometry: .polygons([Polygon(exterior: west), Polygon(exterior: east)]))
        let layers = [
            FenceLayer(name: "grid", fences: grid), FenceLayer(name: "big", fences: [big]),
            FenceLayer(name: "poi", fences: poi), FenceLayer(name: "dateline", fences: [dateline]),
        ]
        return try EngineSnapshot(
            layers: layers,
            configTriggers: try Kit.json5("""
                [{name: 'all', fences: ['grid', 'big', 'poi', 'dateline'], buffer: 50},
                 {name: 'even', fences: ['grid'], where: "$fencefeature.parity == 'even'"},
                 {name: 'poi', fences: ['poi'], buffer: 200}]
                """))
    }

    /// Every fence the trigger keeps, ranked by `signedDistance - buffer`, ties by fence number.
    static func bruteForce(_ snapshot: EngineSnapshot, _ p: Coordinate, trigger: String, count: Int) -> [NearFence] {
        bruteForce(snapshot, p, count: count) { snapshot.watches[$0].settings.trigger == trigger }
    }

    /// Every fence a watch that `keeps` keeps, ranked as above.
    static func bruteForce(_ snapshot: EngineSnapshot, _ p: Coordinate, count: Int, keeps: (Int) -> Bool) -> [NearFence] {
        var all: [NearFence] = []
        for f in snapshot.fences.indices {
            var taken = false  // a fence counts once, with its first kept watch's buffer
            snapshot.forEachWatch(ofFence: f) { _, w, buffer in
                guard keeps(w), !taken else { return }
                taken = true
                all.append(NearFence(fence: f, buffer: buffer, distance: snapshot.fences[f].signedDistance(to: p) - buffer))
            }
        }
        all.sort { $0.distance < $1.distance || ($0.distance == $1.distance && $0.fence < $1.fence) }
        return Array(all.prefix(count))
    }

    /// Random points in and around the grid, inside the big square (deeper than the first
    /// radius), near the antimeridian and far from everything, with counts from 1 to more than
    /// there are fences: the same list as brute force, every time.
    @Test func matchesBruteForceRanking() throws {
        let snapshot = try Self.snapshot()
        var random = SplitMix64(seed: 11)  // deterministic, so a failure can be replayed
        var checked = 0, inside = 0, short = 0
        for i in 0..<600 {
            let p: Coordinate
            switch i % 6 {
            case 0, 1, 2: p = Kit.at(east: random.nextUniform(-3000, 11_000), north: random.nextUniform(-3000, 11_000))
            case 3: p = Kit.at(east: random.nextUniform(12_500, 17_500), north: random.nextUniform(500, 5500))
            case 4: p = Coordinate(lat: random.nextUniform(-0.2, 0.2), lon: random.nextUniform(179.8, 180.2) - (i % 12 == 4 ? 0 : 360))
            default: p = Coordinate(lat: random.nextUniform(-80, 80), lon: random.nextUniform(-180, 180))
            }
            let count = [1, 2, 3, 5, 10, 40, 100][i % 7]
            for trigger in ["all", "even", "poi"] {
                let nearest = snapshot.nearestFences(to: p, trigger: trigger, count: count)
                let expected = Self.bruteForce(snapshot, p, trigger: trigger, count: count)
                #expect(nearest == expected, "\(trigger) x\(count) at \(p)")
                if nearest.count < count { short += 1 }
                if nearest.first.map({ $0.distance < 0 }) ?? false { inside += 1 }
                checked += 1
            }
        }
        #expect(checked == 1800)
        #expect(inside > 100)
        #expect(short > 100)  // counts beyond what the trigger watches
    }

    /// The form the phone code calls, by watch numbers: some of a trigger's watches (its
    /// layers whose `devices` take the phone), or watches of two triggers at once.
    @Test func chosenWatchesMatchBruteForce() throws {
        let snapshot = try Self.snapshot()
        let settings = snapshot.settings
        let allGrid = Int32(settings.firstIndex { $0.trigger == "all" && $0.layer == "grid" }!)
        let allPoi = Int32(settings.firstIndex { $0.trigger == "all" && $0.layer == "poi" }!)
        let poiPoi = Int32(settings.firstIndex { $0.trigger == "poi" }!)
        var random = SplitMix64(seed: 3)
        for _ in 0..<100 {
            let p = Kit.at(east: random.nextUniform(-3000, 11_000), north: random.nextUniform(-3000, 11_000))
            for chosen in [[allGrid], [allGrid, allPoi], [poiPoi, allGrid], []] {
                let expected = Self.bruteForce(snapshot, p, count: 6) { chosen.contains(Int32($0)) }
                #expect(snapshot.nearestFences(to: p, watches: chosen, count: 6) == expected, "\(chosen) at \(p)")
            }
        }
    }

    @Test func otherTriggersAndWhereAreRespected() throws {
        let snapshot = try Self.snapshot()
        var random = SplitMix64(seed: 5)
        for _ in 0..<100 {
            let p = Kit.at(east: random.nextUniform(-2000, 10_000), north: random.nextUniform(-2000, 10_000))
            for near in snapshot.nearestFences(to: p, trigger: "even", count: 10) {
                let fence = snapshot.fences[near.fence].fence
                #expect(fence.layer == "grid" && fence.properties["parity"] == .string("even"), "\(fence.id)")
            }
            #expect(snapshot.nearestFences(to: p, trigger: "poi", count: 10).allSatisfy { snapshot.fences[$0.fence].fence.layer == "poi" })
        }
        let p = Kit.at(east: 150, north: 150)
        #expect(snapshot.nearestFences(to: p, trigger: "even", count: 100).count == 32)
        #expect(snapshot.nearestFences(to: p, trigger: "all", count: 1000).count == 64 + 1 + 3 + 1)
        #expect(snapshot.nearestFences(to: p, trigger: "nobody", count: 5).isEmpty)
        #expect(snapshot.nearestFences(to: p, trigger: "all", count: 0).isEmpty)
        #expect(snapshot.nearestFences(to: Coordinate(lat: .nan, lon: 0), trigger: "all", count: 5).isEmpty)
        // Inside g0-0 (150 m from its edges): first, with the trigger's buffer.
        let first = snapshot.nearestFences(to: p, trigger: "all", count: 1)
        #expect(first.map { snapshot.fences[$0.fence].fence.id } == ["g0-0"])
        #expect(first.first?.buffer == 50 && abs((first.first?.distance ?? 0) + 200) < 0.5)
        // Across the antimeridian: the split box is the nearest to a point just east of -180.
        let dateline = snapshot.nearestFences(to: Coordinate(lat: 0.005, lon: -179.985), trigger: "all", count: 1)
        #expect(dateline.map { snapshot.fences[$0.fence].fence.id } == ["d"])
    }

    /// 20,000 small fences in a 100 km square, of which a trigger keeps only 12 (by `where`):
    /// its nearest lists still match brute force (the search widens past thousands of other
    /// fences and stops once it has seen all 12), and the trigger keeping all of them gets the
    /// right few from the first radius. No timing is asserted.
    @Test func sparseTriggerAmongManyFences() throws {
        var random = SplitMix64(seed: 99)
        var fences: [Fence] = []
        for k in 0..<20_000 {
            let west = random.nextUniform(0, 100_000), south = random.nextUniform(0, 100_000)
            fences.append(
                Kit.box(
                    "f\(k)", layer: "many", west: west, east: west + 40, south: south, north: south + 40,
                    properties: ["rare": .bool(k % 1_667 == 5)], featureIndex: k))
        }
        let snapshot = try EngineSnapshot(
            layers: [FenceLayer(name: "many", fences: fences)],
            configTriggers: try Kit.json5("""
                [{name: 'rare', fences: ['many'], where: '$fencefeature.rare', buffer: 10},
                 {name: 'every', fences: ['many'], buffer: 5}]
                """))
        for _ in 0..<40 {
            let p = Kit.at(east: random.nextUniform(-10_000, 110_000), north: random.nextUniform(-10_000, 110_000))
            for (trigger, count) in [("rare", 5), ("rare", 20), ("every", 8)] {
                #expect(
                    snapshot.nearestFences(to: p, trigger: trigger, count: count) == Self.bruteForce(snapshot, p, trigger: trigger, count: count),
                    "\(trigger) x\(count) at \(p)")
            }
        }
        #expect(snapshot.nearestFences(to: Kit.origin, trigger: "rare", count: 50).count == 12)
    }

    /// A point fence 1,200 m away with a 300 m buffer is nearer than a square 1,000 m away;
    /// with a 100 m buffer it is farther.
    @Test func buffersChangeTheRanking() throws {
        func ranking(pointBuffer: Double) throws -> [String] {
            let layers = [
                FenceLayer(name: "zones", fences: [Kit.box("square", west: 1000, east: 1100, south: -50, north: 50)]),
                FenceLayer(name: "poi", fences: [Kit.point("tap", east: -1200, north: 0, buffer: pointBuffer)]),
            ]
            let snapshot = try EngineSnapshot(layers: layers, configTriggers: try Kit.json5("[{name: 't', fences: ['zones', 'poi']}]"))
            let nearest = snapshot.nearestFences(to: Kit.origin, trigger: "t", count: 2)
            #expect(nearest.map(\.buffer) == (pointBuffer == 300 ? [300, 0] : [0, pointBuffer]))
            return nearest.map { snapshot.fences[$0.fence].fence.id }
        }
        #expect(try ranking(pointBuffer: 300) == ["tap", "square"])
        #expect(try ranking(pointBuffer: 100) == ["square", "tap"])
    }

    /// ``EngineSnapshot/nearestWatchedFences(to:within:count:)``, the `near` query's search:
    /// every watched fence within the radius, by its distance grown by its largest buffer, the
    /// `count` nearest, and whether more lie within; the same fences and distances as
    /// ``EngineSnapshot/locate(_:accuracy:within:at:)`` (the smallest distance per fence) when
    /// the count holds them all.
    @Test func nearestWatchedFencesMatchBruteForceAndLocate() throws {
        let snapshot = try Self.snapshot()
        var random = SplitMix64(seed: 42)
        var truncated = 0, whole = 0
        for i in 0..<300 {
            let p = i % 3 == 2
                ? Kit.at(east: random.nextUniform(12_500, 17_500), north: random.nextUniform(500, 5500))
                : Kit.at(east: random.nextUniform(-3000, 11_000), north: random.nextUniform(-3000, 11_000))
            let radius = [50.0, 400, 1500, 5000, 100_000][i % 5]
            let count = [1, 3, 10, 100][i % 4]
            var all: [NearFence] = []
            for f in snapshot.fences.indices {
                guard let b = snapshot.largestBuffer(ofFence: f) else { continue }
                let d = snapshot.fences[f].signedDistance(to: p) - b
                if d <= radius { all.append(NearFence(fence: f, buffer: b, distance: d)) }
            }
            all.sort { $0.distance < $1.distance || ($0.distance == $1.distance && $0.fence < $1.fence) }
            let (nearest, more) = snapshot.nearestWatchedFences(to: p, within: radius, count: count)
            #expect(nearest == Array(all.prefix(count)) && more == (all.count > count), "x\(count) within \(radius) at \(p)")
            if more { truncated += 1 } else { whole += 1 }
            if !more {
                var best: [String: Double] = [:]
                for result in snapshot.locate(p, accuracy: nil, within: radius) where result.distance <= radius {
                    best["\(result.layer)/\(result.fence)"] = min(best["\(result.layer)/\(result.fence)"] ?? .infinity, result.distance)
                }
                let ours = Dictionary(uniqueKeysWithValues: nearest.map {
                    ("\(snapshot.fences[$0.fence].fence.layer)/\(snapshot.fences[$0.fence].fence.id)", $0.distance)
                })
                #expect(ours.keys.sorted() == best.keys.sorted(), "within \(radius) at \(p)")
                for (key, distance) in ours { #expect(abs(distance - (best[key] ?? .infinity)) < 1e-6, "\(key)") }
            }
        }
        #expect(truncated > 30 && whole > 30, "\(truncated) truncated, \(whole) whole")
        #expect(snapshot.nearestWatchedFences(to: Kit.origin, within: 100, count: 0) == ([], false))
        #expect(snapshot.nearestWatchedFences(to: Coordinate(lat: .nan, lon: 0), within: 100, count: 5) == ([], false))
    }
}
