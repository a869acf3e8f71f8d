import Testing

@testable import GeotriggerCore

@Suite struct FenceIndexTests {
    static func results(_ index: FenceIndex, _ p: Coordinate, _ radius: Double) -> [Int] {
        var found: [Int] = []
        index.query(p, radius: radius) { found.append($0) }
        return found
    }

    /// Random boxes (a quarter of them across the antimeridian) and random queries: the index
    /// returns every entry brute force finds, each once, and nothing far away.
    @Test func matchesBruteForceOnRandomBoxes() {
        var random = SplitMix64(seed: 42)  // deterministic, so failures can be replayed
        var bounds: [GeoBounds] = [], reach: [Double] = []
        for i in 0..<3000 {
            let lat = random.nextUniform(-80, 80)
            let lon = i % 4 == 0 ? random.nextUniform(179.3, 180) : random.nextUniform(-180, 180)
            let height = random.nextUniform(0, 0.4), width = random.nextUniform(0, 0.5)
            bounds.append(GeoBounds(minLat: lat, minLon: lon, maxLat: lat + height, maxLon: lon + width))
            reach.append(i % 3 == 0 ? 0 : random.nextUniform(0, 3000))
        }
        let index = FenceIndex(bounds: bounds, reach: reach)
        #expect(index.count == bounds.count)
        var checked = 0, hits = 0, acrossAntimeridian = 0
        for i in 0..<4000 {
            // Half the queries near a box (many near ±180), half anywhere.
            let p: Coordinate
            if i % 2 == 0 {
                let b = bounds[Int(random.nextUnit() * Double(bounds.count))]
                var lon = random.nextUniform(b.minLon - 0.05, b.maxLon + 0.05)
                if lon >= 180 { lon -= 360 }
                p = Coordinate(lat: random.nextUniform(b.minLat - 0.05, b.maxLat + 0.05), lon: lon)
            } else {
                p = Coordinate(lat: random.nextUniform(-80, 80), lon: random.nextUniform(-180, 180))
            }
            let radius = i % 5 == 0 ? 0 : random.nextUniform(0, 5000)
            let found = Self.results(index, p, radius)
            let expected = (0..<bounds.count).filter { bounds[$0].expanded(by: reach[$0] + radius).contains(p) }
            #expect(Set(found).count == found.count, "duplicates at \(p)")
            #expect(Set(expected).isSubset(of: Set(found)), "missed \(Set(expected).subtracting(found)) at \(p) r \(radius)")
            for k in found {
                #expect(bounds[k].expanded(by: (reach[k] + radius) * 1.5 + 1).contains(p), "\(k) is far from \(p)")
            }
            checked += 1
            hits += expected.count
            if p.lon < -179.5, !expected.isEmpty, expected.contains(where: { bounds[$0].maxLon > 180 }) {
                acrossAntimeridian += 1
            }
        }
        #expect(hits > 1000)
        #expect(acrossAntimeridian > 20)
        print("FenceIndex: \(checked) random queries, \(hits) hits, \(acrossAntimeridian) across the antimeridian")
    }

    /// Devices walking among small boxes, dense clusters and the antimeridian, with radii that
    /// change from step to step: the cached query reports exactly what the plain one does, in
    /// the same order, and it does keep entries (so the walk exercises the cache).
    @Test func cachedQueriesMatchPlainQueriesOnRandomWalks() {
        var random = SplitMix64(seed: 7)
        var bounds: [GeoBounds] = [], reach: [Double] = []
        for i in 0..<4000 {
            // A city of small boxes, a cluster of overlapping ones, and boxes at ±180.
            let (lat, lon, size): (Double, Double, Double) =
                i % 10 == 0 ? (random.nextUniform(40.70, 40.71), random.nextUniform(-74.01, -74.0), 0.004)
                : i % 10 == 1 ? (random.nextUniform(-10, -9.9), random.nextUniform(179.8, 179.99), 0.003)
                : (random.nextUniform(40.5, 40.9), random.nextUniform(-74.3, -73.7), 0.002)
            bounds.append(GeoBounds(minLat: lat, minLon: lon, maxLat: lat + random.nextUniform(0, size),
                                    maxLon: lon + random.nextUniform(0, size)))
            reach.append(i % 3 == 0 ? 0 : random.nextUniform(0, 60))
        }
        let index = FenceIndex(bounds: bounds, reach: reach)
        var served = 0, total = 0
        for walk in 0..<60 {
            var p = walk % 3 == 2 ? Coordinate(lat: -9.95, lon: 179.9) : walk % 3 == 1
                ? Coordinate(lat: 40.705, lon: -74.005) : Coordinate(lat: random.nextUniform(40.5, 40.9), lon: random.nextUniform(-74.3, -73.7))
            var cache = FenceIndex.NearbyCache()
            for _ in 0..<200 {
                p = Coordinate(lat: p.lat + random.nextUniform(-0.0003, 0.0003), lon: p.lon + random.nextUniform(-0.0004, 0.0004))
                if p.lon >= 180 { p = Coordinate(lat: p.lat, lon: p.lon - 360) }
                let radius = random.nextUnit() < 0.3 ? 0 : random.nextUniform(0, 80)
                let before = cache
                var cached: [Int] = []
                index.query(p, radius: radius, cache: &cache) { cached.append($0) }
                #expect(cached == Self.results(index, p, radius), "walk \(walk) at \(p), radius \(radius)")
                guard walk % 3 == 0 else { continue }  // the city: few entries near each point
                total += 1
                if before.count >= 0, before.window == cache.window { served += 1 }
            }
        }
        #expect(served > total / 2, "\(served) of \(total) queries in the city served from the cache")
        // A cache is for one index: after a reset, another index's entries come back.
        let other = FenceIndex(bounds: [GeoBounds(minLat: 40.7, minLon: -74.01, maxLat: 40.71, maxLon: -74.0)], reach: [0])
        var cache = FenceIndex.NearbyCache()
        var found: [Int] = []
        index.query(Coordinate(lat: 40.705, lon: -74.005), radius: 0, cache: &cache) { _ in }
        cache = FenceIndex.NearbyCache()
        other.query(Coordinate(lat: 40.705, lon: -74.005), radius: 0, cache: &cache) { found.append($0) }
        #expect(found == [0])
    }

    /// Fences as dense as a city's building footprints (15 m boxes 30 m apart: dozens within
    /// 100 m): a device walking 1.4 m per step among them is still served from its cache (the
    /// narrow margin), and a device among fences 150 m apart (about 4 within 100 m) too. A
    /// vehicle (10 m per step) drives out of the dense grid into the empty land around it and
    /// back to the wide margin, with the same entries as the plain query all the way.
    @Test func denseFencesAreServedFromTheCache() {
        for (spacing, size, reach, step) in [(30.0, 15.0, 5.0, 1.4), (150.0, 40.0, 10.0, 1.4), (30.0, 15.0, 5.0, 10.0)] {
            var bounds: [GeoBounds] = []
            let dLat = Earth.degreesLatitude(metres: 1), dLon = Earth.degreesLongitude(metres: 1, atLatitude: 40.7)
            for row in 0..<60 {
                for column in 0..<60 {
                    let lat = 40.7 + Double(row) * spacing * dLat, lon = -74 + Double(column) * spacing * dLon
                    bounds.append(GeoBounds(minLat: lat, minLon: lon, maxLat: lat + size * dLat, maxLon: lon + size * dLon))
                }
            }
            let index = FenceIndex(bounds: bounds, reach: [Double](repeating: reach, count: bounds.count))
            var random = SplitMix64(seed: 11)
            var served = 0, total = 0
            for walk in 0..<20 {
                var p = Coordinate(lat: 40.7 + random.nextUniform(10, 50) * spacing * dLat, lon: -74 + random.nextUniform(10, 50) * spacing * dLon)
                let (east, north) = (random.nextUniform(-1, 1), random.nextUniform(-1, 1))
                let norm = max(1e-9, (east * east + north * north).squareRoot())
                var cache = FenceIndex.NearbyCache()
                for _ in 0..<100 {
                    p = Coordinate(lat: p.lat + step * north / norm * dLat, lon: p.lon + step * east / norm * dLon)
                    let before = cache
                    var cached: [Int] = []
                    index.query(p, radius: 5, cache: &cache) { cached.append($0) }
                    #expect(cached == Self.results(index, p, 5), "walk \(walk) at \(p)")
                    total += 1
                    if before.count >= 0, before.window == cache.window { served += 1 }
                }
            }
            guard step < 10 else { continue }
            #expect(served > total * 3 / 4, "spacing \(spacing) m: \(served) of \(total) queries served from the cache")
        }
    }

    @Test func findsBoxesAcrossTheAntimeridian() {
        let across = GeoBounds(minLat: -16.5, minLon: 179.6, maxLat: -15.9, maxLon: 180.3)
        let west = GeoBounds(minLat: -17.3, minLon: -180, maxLat: -17.2, maxLon: -179.95)
        let east = GeoBounds(minLat: -17.3, minLon: 179.97, maxLat: -17.2, maxLon: 180)
        let index = FenceIndex(bounds: [across, west, east], reach: [0, 0, 3000])
        #expect(Self.results(index, Coordinate(lat: -16, lon: -179.8), 0) == [0])
        #expect(Self.results(index, Coordinate(lat: -16, lon: 179.8), 0) == [0])
        #expect(Self.results(index, Coordinate(lat: -16, lon: -179.6), 0).isEmpty)
        // 179.99 is about 1 km from the west box across ±180: only with a radius.
        #expect(Self.results(index, Coordinate(lat: -17.25, lon: 179.99), 0) == [2])
        #expect(Set(Self.results(index, Coordinate(lat: -17.25, lon: 179.99), 1500)) == [1, 2])
        // Within the east box's 3 km reach from the other side.
        #expect(Set(Self.results(index, Coordinate(lat: -17.25, lon: -179.98), 0)) == [1, 2])
        #expect(across.contains(Coordinate(lat: -16, lon: -179.8)))
    }

    @Test func emptyAndSingleEntryIndexes() {
        let empty = FenceIndex(bounds: [], reach: [])
        #expect(Self.results(empty, Coordinate(lat: 0, lon: 0), 1000).isEmpty)
        let one = FenceIndex(bounds: [GeoBounds(minLat: 1, minLon: 1, maxLat: 2, maxLon: 2)], reach: [0])
        #expect(Self.results(one, Coordinate(lat: 1.5, lon: 1.5), 0) == [0])
        #expect(Self.results(one, Coordinate(lat: 2.5, lon: 1.5), 0).isEmpty)
        #expect(Self.results(one, Coordinate(lat: 2.005, lon: 1.5), 1000) == [0])
        #expect(Self.results(one, Coordinate(lat: .nan, lon: 1.5), 1000).isEmpty)
    }
}
