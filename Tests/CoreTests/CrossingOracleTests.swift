import Foundation
import Testing

@testable import GeotriggerCore

/// Differential test of the crossings geometry against shapely + pyproj:
/// `Tests/Fixtures/geometry/make_crossings_oracle.py` wrote `crossings.csv`: 1,000 random
/// sparse segments over the NYC taxi zones and the example layers, with the first entry and
/// last exit of every fence each passes through (both ends outside), and their times.
@Suite struct CrossingOracleTests {
    struct Expected {
        var feature: Int
        var enter: Coordinate, enterTime: Double
        var exit: Coordinate, exitTime: Double
    }

    struct Row {
        var layer: String
        var a: Coordinate, timeA: Double
        var b: Coordinate, timeB: Double
        var crossings: [Expected]
    }

    static func rows() throws -> [Row] {
        let text = try String(
            contentsOf: GeometryFixtures.directory.appendingPathComponent("crossings.csv"), encoding: .utf8)
        return try text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            func bad() -> GeometryFixtures.Failure { GeometryFixtures.Failure(description: "crossings.csv: bad line \(line)") }
            guard f.count == 8, let lonA = Double(f[1]), let latA = Double(f[2]), let tA = Double(f[3]),
                let lonB = Double(f[4]), let latB = Double(f[5]), let tB = Double(f[6])
            else { throw bad() }
            let crossings = try f[7].split(separator: ";").map { cell in
                let v = cell.split(separator: ":").compactMap { Double($0) }
                guard v.count == 7 else { throw bad() }
                return Expected(
                    feature: Int(v[0]), enter: Coordinate(lat: v[2], lon: v[1]), enterTime: v[3],
                    exit: Coordinate(lat: v[5], lon: v[4]), exitTime: v[6])
            }
            return Row(
                layer: String(f[0]), a: Coordinate(lat: latA, lon: lonA), timeA: tA, b: Coordinate(lat: latB, lon: lonB),
                timeB: tB, crossings: crossings)
        }
    }

    /// Each layer's prepared fences and a fence index over them (reach: the effective buffer).
    static func layers() throws -> [String: (fences: [PreparedFence], index: FenceIndex)] {
        var urls = [GeometryFixtures.directory.appendingPathComponent("nyc-taxi-zones.geojson")]
        let folder = GeometryFixtures.repository.appendingPathComponent("fences")
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".geojson") {
            urls.append(folder.appendingPathComponent(name))
        }
        var layers: [String: (fences: [PreparedFence], index: FenceIndex)] = [:]
        for url in urls {
            let fences = try GeometryFixtures.fences(at: url).map { try PreparedFence($0) }
            let index = FenceIndex(bounds: fences.map(\.bounds), reach: fences.map { $0.fence.buffer ?? 0 })
            layers[url.deletingPathExtension().lastPathComponent] = (fences, index)
        }
        return layers
    }

    @Test func agreesWithShapelyAndPyproj() throws {
        let layers = try Self.layers()
        let rows = try Self.rows()
        #expect(rows.count == 1_000)
        var setWrong = 0, valueWrong = 0, compared = 0
        var worstPosition = 0.0, worstTime = 0.0
        var candidates = 0, scanned = 0
        for row in rows {
            let layer = try #require(layers[row.layer], "layer \(row.layer)")
            let segment = LonLatSegment(from: row.a, to: row.b)
            var found: [Int: PreparedFence.SegmentCrossing] = [:]
            var reported: [Int] = []
            layer.index.query(segmentFrom: row.a, to: row.b, cache: FenceIndex.NearbyCache()) { i in
                reported.append(i)
                if let c = layer.fences[i].crossing(along: segment, buffer: layer.fences[i].fence.buffer ?? 0) { found[i] = c }
            }
            candidates += reported.count
            scanned += layer.fences.count
            #expect(Set(reported).count == reported.count, "an entry reported twice")
            let expected = Set(row.crossings.map(\.feature))
            if Set(found.keys) != expected {
                setWrong += 1
                if setWrong <= 10 {
                    Issue.record("\(row.layer) \(row.a) -> \(row.b): crossed \(found.keys.sorted()), expected \(expected.sorted())")
                }
                continue
            }
            let gap = row.timeB - row.timeA
            for e in row.crossings {
                let c = try #require(found[e.feature])
                compared += 1
                let enterError = Earth.distance(c.enterPoint, e.enter), exitError = Earth.distance(c.exitPoint, e.exit)
                let enterTimeError = abs(row.timeA + gap * c.enterFraction - e.enterTime)
                let exitTimeError = abs(row.timeA + gap * c.exitFraction - e.exitTime)
                worstPosition = max(worstPosition, enterError, exitError)
                worstTime = max(worstTime, enterTimeError, exitTimeError)
                if enterError > 1 || exitError > 1 || enterTimeError > 0.5 || exitTimeError > 0.5 {
                    valueWrong += 1
                    if valueWrong <= 10 {
                        Issue.record(
                            "\(row.layer) feature \(e.feature) \(row.a) -> \(row.b): enter off by \(enterError) m / \(enterTimeError) s, exit by \(exitError) m / \(exitTimeError) s"
                        )
                    }
                }
            }
        }
        print(
            "crossings oracle: \(rows.count) segments, \(compared) crossings compared; worst position \(worstPosition) m, worst time \(worstTime) s; "
                + "index reported \(candidates) candidates of \(scanned) fences")
        #expect(setWrong == 0)
        #expect(valueWrong == 0)
        #expect(compared >= 500)
        // The segment query looks at a small share of the fences, not all of them.
        #expect(candidates * 10 < scanned)
    }

    /// The segment query reports every entry whose box the segment meets, and no other,
    /// against a scan of every box (random boxes and segments, some across ±180).
    @Test func segmentQueryMatchesAScanOfEveryBox() {
        var random = SeededRandom(seed: 31)
        var bounds: [GeoBounds] = []
        for k in 0..<2_000 {
            let lat = random.within(-60, 60)
            let lon = k % 10 == 0 ? random.within(179, 180.5) : random.within(-180, 180)
            let w = random.within(0.001, 0.5), h = random.within(0.001, 0.5)
            bounds.append(GeoBounds(minLat: lat, minLon: lon, maxLat: lat + h, maxLon: lon + w))
        }
        let reach = bounds.indices.map { _ in 0.0 }
        let index = FenceIndex(bounds: bounds, reach: reach)
        var mismatches = 0, hits = 0
        for k in 0..<2_000 {
            let lat = random.within(-60, 60)
            let lon = k % 5 == 0 ? random.within(179, 180) : random.within(-180, 180)
            let a = Coordinate(lat: lat, lon: lon)
            var blon = lon + random.within(-2, 2)
            if blon >= 180 { blon -= 360 }
            let b = Coordinate(lat: lat + random.within(-2, 2), lon: blon)
            var got: [Int] = []
            index.query(segmentFrom: a, to: b, cache: FenceIndex.NearbyCache()) { got.append($0) }
            let expected = bounds.indices.filter { Self.meets(bounds[$0], a, b) }
            hits += expected.count
            if got.sorted() != expected { mismatches += 1 }
        }
        #expect(mismatches == 0)
        #expect(hits > 100)
    }

    /// An independent segment-box test (orientation tests, not clipping): an end inside the
    /// box, or the segment crossing or touching one of its sides, with the segment's longitude
    /// unwrapped the short way and the box also taken 360 degrees east and west.
    static func meets(_ box: GeoBounds, _ a: Coordinate, _ b: Coordinate) -> Bool {
        var dLon = b.lon - a.lon
        if dLon > 180 { dLon -= 360 }
        if dLon < -180 { dLon += 360 }
        let p = SIMD2(a.lon, a.lat), q = SIMD2(a.lon + dLon, b.lat)
        func cross(_ o: SIMD2<Double>, _ u: SIMD2<Double>, _ v: SIMD2<Double>) -> Double {
            (u.x - o.x) * (v.y - o.y) - (u.y - o.y) * (v.x - o.x)
        }
        func onSegment(_ o: SIMD2<Double>, _ u: SIMD2<Double>, _ v: SIMD2<Double>) -> Bool {
            v.x >= min(o.x, u.x) && v.x <= max(o.x, u.x) && v.y >= min(o.y, u.y) && v.y <= max(o.y, u.y)
        }
        func intersects(_ p1: SIMD2<Double>, _ p2: SIMD2<Double>, _ p3: SIMD2<Double>, _ p4: SIMD2<Double>) -> Bool {
            let d1 = cross(p3, p4, p1), d2 = cross(p3, p4, p2), d3 = cross(p1, p2, p3), d4 = cross(p1, p2, p4)
            if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
            return (d1 == 0 && onSegment(p3, p4, p1)) || (d2 == 0 && onSegment(p3, p4, p2))
                || (d3 == 0 && onSegment(p1, p2, p3)) || (d4 == 0 && onSegment(p1, p2, p4))
        }
        for shift in [0.0, 360, -360] {
            let w = box.minLon + shift, e = box.maxLon + shift
            func inside(_ c: SIMD2<Double>) -> Bool { c.x >= w && c.x <= e && c.y >= box.minLat && c.y <= box.maxLat }
            if inside(p) || inside(q) { return true }
            let corners = [SIMD2(w, box.minLat), SIMD2(e, box.minLat), SIMD2(e, box.maxLat), SIMD2(w, box.maxLat)]
            for k in 0..<4 where intersects(p, q, corners[k], corners[(k + 1) % 4]) { return true }
        }
        return false
    }
}
