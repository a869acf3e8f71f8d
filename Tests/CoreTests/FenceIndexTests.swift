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
