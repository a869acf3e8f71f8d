import Testing
@testable import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// The folder of fixture files, found from this source file's path.
let fixturesFolder: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(2)  // CoreTests/FenceLayerParserTests.swift
    return parts.joined(separator: "/") + "/Fixtures"
}()

/// The bytes of a file (tests may do I/O; the core does not).
func readFileBytes(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw GeometryError("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}

private func parseLayer(_ text: String, layer: String = "test") -> (layer: FenceLayer, errors: [String]) {
    let (l, e) = FenceLayerParser.parse(Array(text.utf8), file: "fences/\(layer).geojson", layer: layer)
    return (l, e.map(\.description))
}

@Suite struct FenceLayerParserTests {
    /// Every malformed fixture, the fences that survive, and the exact messages (parser errors,
    /// then those of the default trigger, one per layer).
    static let badFiles: [(name: String, validFences: Int, messages: [String])] = [
        ("bad-buffer", 0, [
            #"fences-bad/bad-buffer.geojson: feature 0 ("Bench"): properties.buffer must be a number >= 0 (metres), found a string"#,
            #"fences-bad/bad-buffer.geojson: feature 1 ("Gate"): properties.buffer must be a number >= 0 (metres), found -5"#,
        ]),
        ("bad-defaults", 1, [
            #"fences-bad/bad-defaults.geojson: "geotrigger" must be an object of trigger defaults, found an array"#,
        ]),
        ("bad-properties", 0, [
            #"fences-bad/bad-properties.geojson: feature 0: "properties" must be an object or null, found an array"#,
            "fences-bad/bad-properties.geojson: feature 1: properties.name must be a string, found a number",
        ]),
        ("coordinates-not-numbers", 0, [
            #"fences-bad/coordinates-not-numbers.geojson: feature 0 ("Bench"): coordinates[0]: expected a number, found a string"#,
            #"fences-bad/coordinates-not-numbers.geojson: feature 1 ("Meadow"): coordinates[0][1][1]: expected a number, found null"#,
        ]),
        ("coordinates-out-of-range", 0, [
            #"fences-bad/coordinates-out-of-range.geojson: feature 0 ("Far East"): coordinates: longitude 190 is out of range (-180 to 180)"#,
            #"fences-bad/coordinates-out-of-range.geojson: feature 1 ("Swapped"): coordinates: latitude -119.707 is out of range (-90 to 90) (are longitude and latitude swapped? GeoJSON writes [longitude, latitude])"#,
            #"fences-bad/coordinates-out-of-range.geojson: feature 2 ("Too North"): coordinates[1]: latitude 91 is out of range (-90 to 90)"#,
        ]),
        ("coordinates-wrong-nesting", 0, [
            #"fences-bad/coordinates-wrong-nesting.geojson: feature 0 ("Meadow"): coordinates[0][0]: expected a position [longitude, latitude], found a number"#,
            #"fences-bad/coordinates-wrong-nesting.geojson: feature 1 ("Bench"): coordinates: expected a position [longitude, latitude], found 1 number"#,
            #"fences-bad/coordinates-wrong-nesting.geojson: feature 2 ("Benches"): coordinates[0]: expected a position [longitude, latitude], found a number"#,
            #"fences-bad/coordinates-wrong-nesting.geojson: feature 3 ("Gate"): coordinates: expected a position [longitude, latitude], found 1 number"#,
        ]),
        ("duplicate-id", 3, [
            #"fences-bad/duplicate-id.geojson: feature 2 ("Oaks"): duplicate fence id "7" (feature 0 ("Meadow") has it too)"#,
        ]),
        ("duplicate-key", 0, [
            #"fences-bad/duplicate-key.geojson:4:77: duplicate key "name" (first at line 4, column 51)"#,
        ]),
        ("features-not-array", 0, [
            #"fences-bad/features-not-array.geojson: "features" must be an array, found an object"#,
        ]),
        ("invalid-json", 0, [
            "fences-bad/invalid-json.geojson:8:7: expected ',' or '}' after object member",
        ]),
        ("line-too-short", 0, [
            #"fences-bad/line-too-short.geojson: feature 0 ("Trail"): LineString has 1 position, needs at least 2"#,
            #"fences-bad/line-too-short.geojson: feature 1 ("Trails"): MultiLineString line 1 has 0 positions, needs at least 2"#,
        ]),
        ("missing-id", 0, [
            #"fences-bad/missing-id.geojson: feature 0 ("Meadow"): missing id: give the Feature an "id" or set properties.id"#,
            #"fences-bad/missing-id.geojson: feature 1 ("Empty id"): id must not be empty"#,
            #"fences-bad/missing-id.geojson: feature 2 ("Bool id"): id must be a string or a number, found a boolean"#,
        ]),
        ("no-features", 0, [
            #"fences-bad/no-features.geojson: a FeatureCollection needs a "features" array"#,
        ]),
        ("not-a-feature", 1, [
            "fences-bad/not-a-feature.geojson: feature 0: not a GeoJSON Feature (found a string)",
            #"fences-bad/not-a-feature.geojson: feature 1: not a GeoJSON Feature ("type" is "Polygon")"#,
            #"fences-bad/not-a-feature.geojson: feature 1: missing id: give the Feature an "id" or set properties.id"#,
            #"fences-bad/not-a-feature.geojson: feature 1: missing "geometry""#,
        ]),
        ("not-collection", 0, [
            #"fences-bad/not-collection.geojson: expected a GeoJSON FeatureCollection, found "type": "Feature""#,
        ]),
        ("null-geometry", 0, [
            #"fences-bad/null-geometry.geojson: feature 0 ("Nowhere"): geometry is null: a fence needs a geometry"#,
            #"fences-bad/null-geometry.geojson: feature 1 ("No geometry key"): missing "geometry""#,
        ]),
        ("point-without-buffer", 5, [
            #"fences-bad/point-without-buffer.geojson: feature 0 ("Bench"): Point needs a buffer > 0 in trigger "point-without-buffer" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#,
            #"fences-bad/point-without-buffer.geojson: feature 1 ("Benches"): MultiPoint needs a buffer > 0 in trigger "point-without-buffer" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#,
            #"fences-bad/point-without-buffer.geojson: feature 2 ("Path"): LineString needs a buffer > 0 in trigger "point-without-buffer" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#,
        ]),
        ("refused-by-geometry", 0, [
            #"fences-bad/refused-by-geometry.geojson: feature 0 ("North Pole"): lies within 1 km of a pole, which is not supported"#,
            #"fences-bad/refused-by-geometry.geojson: feature 1 ("Dateline"): an edge crosses the antimeridian (179.9 to -179.9): split it at 180 degrees as RFC 7946 section 3.1.9 says"#,
        ]),
        ("ring-not-closed", 0, [
            #"fences-bad/ring-not-closed.geojson: feature 0 ("Meadow"): Polygon ring 0 is not closed: its last position must repeat the first"#,
        ]),
        ("ring-too-short", 0, [
            #"fences-bad/ring-too-short.geojson: feature 0 ("Meadow"): Polygon ring 0 has 3 positions, a ring needs at least 4 (the last repeating the first)"#,
            #"fences-bad/ring-too-short.geojson: feature 1 ("Pond"): Polygon ring 1 (a hole) has 3 positions, a ring needs at least 4 (the last repeating the first)"#,
        ]),
        ("self-intersecting", 0, [
            #"fences-bad/self-intersecting.geojson: feature 0 ("Bowtie"): Polygon ring 0 intersects itself near [-119.7065, 34.4565] (the edges from positions 0 and 2)"#,
            #"fences-bad/self-intersecting.geojson: feature 1 ("Hole outside"): Polygon rings 0 and 1 cross near [-119.706, 34.4565] (the edge from position 1 of ring 0 and the edge from position 0 of ring 1)"#,
            #"fences-bad/self-intersecting.geojson: feature 2 ("Flat"): Polygon ring 0 has no area (its positions lie on one line)"#,
            #"fences-bad/self-intersecting.geojson: feature 3 ("Touching"): Polygon ring 0 intersects itself near [-119.706, 34.456] (the edges from positions 0 and 2)"#,
        ]),
        ("unsupported-geometry", 0, [
            #"fences-bad/unsupported-geometry.geojson: feature 0 ("Collection"): GeometryCollection is not supported: use a MultiPolygon, MultiPoint or MultiLineString, or one feature per part"#,
            #"fences-bad/unsupported-geometry.geojson: feature 1 ("Circle"): unsupported geometry type "Circle" (expected Polygon, MultiPolygon, Point, MultiPoint, LineString or MultiLineString)"#,
            #"fences-bad/unsupported-geometry.geojson: feature 2 ("No coordinates"): Polygon has no "coordinates""#,
        ]),
    ]

    @Test(arguments: badFiles.map(\.name))
    func malformedFixtureGivesExactMessages(_ name: String) throws {
        let expected = try #require(Self.badFiles.first { $0.name == name })
        let bytes = try readFileBytes("\(fixturesFolder)/fences-bad/\(name).geojson")
        let (layer, errors) = FenceLayerParser.parse(bytes, file: "fences-bad/\(name).geojson", layer: name)
        let messages = (errors + layer.defaultTriggerErrors()).map(\.description)
        #expect(messages == expected.messages)
        #expect(layer.fences.count == expected.validFences)
        #expect(!messages.isEmpty)
    }

    @Test func everyBadFixtureIsCovered() throws {
        let folder = "\(fixturesFolder)/fences-bad"
        guard let dir = opendir(folder) else { throw GeometryError("cannot open \(folder)") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".geojson") { names.append(String(name.dropLast(8))) }
        }
        #expect(names.sorted() == Self.badFiles.map(\.name).sorted())
    }

    // MARK: Valid layers

    @Test func readsEveryGeometryKindIdsNamesAndDefaults() throws {
        let text = """
            {"type": "FeatureCollection",
             "geotrigger": {"buffer": 12, "message": "'Hi ' + $fencefeature.name"},
             "features": [
              {"type": "Feature", "id": 7, "properties": {"name": "Seven"},
               "geometry": {"type": "Polygon", "coordinates": [
                 [[-119.71, 34.45], [-119.70, 34.45], [-119.70, 34.46], [-119.71, 34.46], [-119.71, 34.45]],
                 [[-119.708, 34.452], [-119.708, 34.454], [-119.706, 34.454], [-119.706, 34.452], [-119.708, 34.452]]]}},
              {"type": "Feature", "id": 7.5, "properties": null,
               "geometry": {"type": "MultiPolygon", "coordinates": [
                 [[[-119.69, 34.45], [-119.68, 34.45], [-119.68, 34.46], [-119.69, 34.45]]],
                 [[[-119.67, 34.45], [-119.66, 34.45], [-119.66, 34.46], [-119.67, 34.45]]]]}},
              {"type": "Feature", "properties": {"id": "bench", "name": "Bench", "buffer": 3, "colour": "green"},
               "geometry": {"type": "Point", "coordinates": [-119.707, 34.456, 12.5]}},
              {"type": "Feature", "properties": {"id": 42},
               "geometry": {"type": "MultiPoint", "coordinates": [[-119.707, 34.456], [-119.706, 34.457]]}},
              {"type": "Feature", "id": "path", "properties": {"buffer": 0},
               "geometry": {"type": "LineString", "coordinates": [[-119.707, 34.456], [-119.706, 34.457]]}},
              {"type": "Feature", "id": "paths", "properties": {},
               "geometry": {"type": "MultiLineString", "coordinates": [[[-119.707, 34.456], [-119.706, 34.457]], [[-119.705, 34.456], [-119.704, 34.457], [-119.703, 34.456]]]}}
             ]}
            """
        let (layer, errors) = parseLayer(text, layer: "garden")
        #expect(errors == [])
        #expect(layer.name == "garden")
        #expect(layer.file == "fences/garden.geojson")
        #expect(layer.defaults?["buffer"] == .number(12))
        #expect(layer.defaultBuffer == 12)
        #expect(layer.fences.map(\.id) == ["7", "7.5", "bench", "42", "path", "paths"])
        #expect(layer.fences.map(\.featureIndex) == [0, 1, 2, 3, 4, 5])
        #expect(layer.fences.map(\.layer) == Array(repeating: "garden", count: 6))
        #expect(layer.fences.map(\.name) == ["Seven", nil, "Bench", nil, nil, nil])
        #expect(layer.fences.map(\.geometry.kindName) == ["Polygon", "MultiPolygon", "Point", "MultiPoint", "LineString", "MultiLineString"])
        #expect(layer.fences.map(\.buffer) == [nil, nil, 3, nil, 0, nil])
        #expect(layer.fences[2].properties["colour"] == .string("green"))
        guard case .polygons(let polygons) = layer.fences[0].geometry else { Issue.record("not a polygon"); return }
        #expect(polygons[0].holes.count == 1)
        #expect(polygons[0].exterior.first == Coordinate(lat: 34.45, lon: -119.71))
        guard case .points(let points) = layer.fences[2].geometry else { Issue.record("not a point"); return }
        #expect(points == [Coordinate(lat: 34.456, lon: -119.707)])

        // Effective buffer: properties.buffer, else the trigger's, else the layer's, else 0.
        let bench = layer.fences[2], multiPoint = layer.fences[3], path = layer.fences[4]
        #expect(layer.effectiveBuffer(of: bench, triggerBuffer: 50) == 3)
        #expect(layer.effectiveBuffer(of: path, triggerBuffer: 50) == 0)
        #expect(layer.effectiveBuffer(of: multiPoint, triggerBuffer: 50) == 50)
        #expect(layer.effectiveBuffer(of: multiPoint, triggerBuffer: nil) == 12)
        #expect(multiPoint.effectiveBuffer(triggerBuffer: nil, layerBuffer: nil) == 0)
        // An explicit properties.buffer of 0 wins, so the line needs a buffer whatever the trigger says.
        #expect(layer.zeroBufferErrors(trigger: "t", triggerBuffer: 50).map(\.description) == [
            #"fences/garden.geojson: feature 4: LineString needs a buffer > 0 in trigger "t" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#
        ])
    }

    @Test func emptyCollectionIsAValidEmptyLayer() {
        let (layer, errors) = parseLayer(#"{"type": "FeatureCollection", "features": []}"#)
        #expect(errors == [])
        #expect(layer.fences.isEmpty)
        #expect(layer.defaults == nil)
    }

    @Test func collectsErrorsOfEveryFeature() {
        let text = """
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {"name": "A"}, "geometry": null},
              {"type": "Feature", "id": "b", "properties": {"name": "B", "buffer": "x"},
               "geometry": {"type": "Point", "coordinates": [200, 0]}},
              {"type": "Feature", "id": "c", "properties": {"name": "C"},
               "geometry": {"type": "Point", "coordinates": [1, 2]}}
            ]}
            """
        let (layer, errors) = parseLayer(text)
        #expect(errors == [
            #"fences/test.geojson: feature 0 ("A"): missing id: give the Feature an "id" or set properties.id"#,
            #"fences/test.geojson: feature 0 ("A"): geometry is null: a fence needs a geometry"#,
            #"fences/test.geojson: feature 1 ("B"): properties.buffer must be a number >= 0 (metres), found a string"#,
            #"fences/test.geojson: feature 1 ("B"): coordinates: longitude 200 is out of range (-180 to 180)"#,
        ])
        #expect(layer.fences.map(\.id) == ["c"])
    }

    @Test func manyCoordinateErrorsAreCounted() {
        let positions = (0..<9).map { _ in "[500, 0]" }.joined(separator: ", ")
        let text = """
            {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "x",
              "properties": {"buffer": 1}, "geometry": {"type": "MultiPoint", "coordinates": [\(positions)]}}]}
            """
        let (_, errors) = parseLayer(text)
        #expect(errors.count == 6)
        #expect(errors.last == "fences/test.geojson: feature 0: 4 more coordinate errors not shown")
    }

    // MARK: Self-intersection

    @Test(.enabled(if: nycTaxiZonesPath != nil, "needs shared/data/nyc-taxi-zones.geojson"))
    func nycTaxiZonesAreValidAndParse() throws {
        let (layer, errors) = try #require(nycTaxiZones)
        #expect(errors.map(\.description) == [])
        #expect(layer.fences.count == 263)
        #expect(layer.fences[0].id == "1")
    }

    @Test(.enabled(if: nycTaxiZonesPath != nil, "needs shared/data/nyc-taxi-zones.geojson"))
    func findsACrossingPlantedInARealRing() throws {
        let (layer, _) = try #require(nycTaxiZones)
        // The largest ring; swapping two neighbouring vertices far apart in the ring makes it cross itself.
        var rings = layer.fences.flatMap { fence -> [[Coordinate]] in
            guard case .polygons(let ps) = fence.geometry else { return [] }
            return ps.map(\.exterior)
        }
        rings.sort { $0.count > $1.count }
        var ring = rings[0]
        #expect(ring.count > 4000)
        #expect(RingIntersectionFinder.find(in: [ring]) == nil)
        ring.swapAt(1000, 1001)
        let hit = try #require(RingIntersectionFinder.find(in: [ring]))
        #expect(hit.ringA == 0 && hit.ringB == 0)
        #expect((998...1002).contains(hit.positionA) && (998...1002).contains(hit.positionB))
    }

    /// The grid must agree with comparing all pairs, on random rings (many of them crossing).
    @Test func gridAgreesWithAllPairs() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        var crossing = 0
        for trial in 0..<300 {
            let n = 4 + trial % 12
            // A star-shaped ring (simple) with some points displaced (maybe crossing).
            var ring: [Coordinate] = (0..<n).map { i in
                let angle = Double(i) / Double(n) * 2 * Double.pi
                let r = 0.5 + random() * (trial % 3 == 0 ? 1.5 : 0.4)
                return Coordinate(lat: r * sin(angle), lon: r * cos(angle))
            }
            if trial % 4 == 1 { ring.swapAt(0, 1 + Int(random() * Double(n - 1))) }
            ring.append(ring[0])
            let edges = (0..<n).map { i in
                RingIntersectionFinder.Edge(
                    ring: 0, position: Int32(i), ordinal: Int32(i), ringEdges: Int32(n),
                    ax: ring[i].lon, ay: ring[i].lat, bx: ring[i + 1].lon, by: ring[i + 1].lat)
            }
            var brute = false
            for i in 0..<n { for j in (i + 1)..<n where RingIntersectionFinder.intersection(edges[i], edges[j]) != nil { brute = true } }
            let grid = RingIntersectionFinder.findInGrid(in: [ring]) != nil
            #expect(grid == brute, "trial \(trial)")
            if brute { crossing += 1 }
            // Small polygons are checked pair by pair: the same intersection as the grid's,
            // also with a hole that may cross the exterior or touch it.
            var rings = [ring]
            if trial % 2 == 0 {
                let cx = random() - 0.5, cy = random() - 0.5, size = 0.1 + random() * 0.6
                let hole = [(0.0, 0.0), (size, 0.0), (size, size), (0.0, size), (0.0, 0.0)].map { Coordinate(lat: cy + $0.1, lon: cx + $0.0) }
                rings.append(hole)
            }
            let positions = rings.reduce(0) { $0 + $1.count }
            #expect(RingIntersectionFinder.findPairwise(in: rings, positions: positions) == RingIntersectionFinder.findInGrid(in: rings), "trial \(trial)")
            #expect(RingIntersectionFinder.find(in: rings) == RingIntersectionFinder.findInGrid(in: rings), "trial \(trial)")
        }
        #expect(crossing > 30 && crossing < 270)
    }
}

/// The NYC taxi zones of the project's shared data (`shared/data` beside the repository, or
/// beside the folder of worktrees), nil if this checkout has none.
let nycTaxiZonesPath: String? = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)  // Tests/CoreTests/FenceLayerParserTests.swift
    let repository = parts.joined(separator: "/")
    for candidate in ["\(repository)/../shared/data", "\(repository)/../../shared/data"] {
        let path = candidate + "/nyc-taxi-zones.geojson"
        if access(path, R_OK) == 0 { return path }
    }
    return nil
}()

/// The NYC taxi zones parsed once (slow in debug builds), shared by the tests that need them.
let nycTaxiZones: (layer: FenceLayer, errors: [FenceError])? = {
    guard let path = nycTaxiZonesPath, let bytes = try? readFileBytes(path) else { return nil }
    return FenceLayerParser.parse(bytes, file: "nyc-taxi-zones.geojson", layer: "nyc")
}()

/// `fences.maxVertices`: a feature with more positions is an error naming the file, the feature
/// and the limit, found before its rings are checked or prepared.
@Suite struct FenceMaxVerticesTests {
    static let square = #"{"type": "FeatureCollection", "features": [{"type": "Feature", "id": "a", "properties": {"name": "Yard"}, "geometry": {"type": "MultiPolygon", "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]], [[[2, 0], [3, 0], [3, 1], [2, 1], [2, 0]]]]}}]}"#

    @Test func aFenceOverTheLimitIsRejected() {
        let (layer, errors) = FenceLayerParser.parse(Array(Self.square.utf8), file: "fences/yard.geojson", layer: "yard", maxVertices: 9)
        #expect(layer.fences.isEmpty)
        #expect(errors.map(\.description) == [
            #"fences/yard.geojson: feature 0 ("Yard"): MultiPolygon has 10 positions, more than fences.maxVertices (9) allows"#,
        ])
        let (accepted, none) = FenceLayerParser.parse(Array(Self.square.utf8), file: "fences/yard.geojson", layer: "yard", maxVertices: 10)
        #expect(none.isEmpty)
        #expect(accepted.fences.count == 1)
    }

    @Test func theDefaultIs100000() throws {
        #expect(FenceLayerParser.defaultMaxVertices == 100_000)
        var ring: [String] = []
        for k in 0..<100_001 { ring.append("[\(Double(k) * 1e-6), \(k % 2 == 0 ? 0 : 1e-6)]") }
        let text = #"{"type": "FeatureCollection", "features": [{"type": "Feature", "id": "z", "geometry": {"type": "LineString", "coordinates": ["# + ring.joined(separator: ",") + "]}}]}"
        let (_, errors) = FenceLayerParser.parse(Array(text.utf8), file: "fences/z.geojson", layer: "z")
        #expect(errors.map(\.message) == ["LineString has 100001 positions, more than fences.maxVertices (100000) allows"])
    }
}

/// A reload's parse given the live snapshot (`reusing`): a fence the snapshot has unchanged is
/// the snapshot's own prepared fence, any other is prepared from the file.
@Suite struct FenceReuseTests {
    static func layer(_ features: [(id: String, name: String, x: Int)]) -> [UInt8] {
        let items = features.map { f in
            #"{"type": "Feature", "id": "\#(f.id)", "properties": {"name": "\#(f.name)"}, "geometry": {"type": "Polygon", "coordinates": [[[\#(f.x), 0], [\#(f.x + 1), 0], [\#(f.x + 1), 1], [\#(f.x), 1], [\#(f.x), 0]]]}}"#
        }
        return Array((#"{"type": "FeatureCollection", "features": ["# + items.joined(separator: ", ") + "]}").utf8)
    }

    static let start = layer([("a", "A", 0), ("b", "B", 2), ("c", "C", 4)])

    static func live() throws -> EngineSnapshot {
        let (layer, errors) = FenceLayerParser.parse(start, file: "fences/yard.geojson", layer: "yard")
        #expect(errors.isEmpty)
        return try EngineSnapshot(layers: [layer], configTriggers: nil)
    }

    @Test func unchangedFencesAreTheLiveOnes() throws {
        let live = try Self.live()
        let (again, _) = FenceLayerParser.parse(Self.start, file: "fences/yard.geojson", layer: "yard", reusing: live)
        #expect(again.prepared.count == 3)
        #expect(zip(again.prepared, live.fences).allSatisfy { $0 === $1 })
        // Without the snapshot (a start, `check`), each is prepared anew.
        let (fresh, _) = FenceLayerParser.parse(Self.start, file: "fences/yard.geojson", layer: "yard")
        #expect(zip(fresh.prepared, live.fences).allSatisfy { $0 !== $1 })
        // Another layer's fences are never taken, even of the same id.
        let (other, _) = FenceLayerParser.parse(Self.start, file: "fences/lot.geojson", layer: "lot", reusing: live)
        #expect(other.prepared.allSatisfy { p in !live.fences.contains { $0 === p } })
    }

    @Test func changedFencesArePreparedFromTheFile() throws {
        let live = try Self.live()
        // b moves, c is renamed, a is untouched, d is new.
        let (layer, errors) = FenceLayerParser.parse(
            Self.layer([("a", "A", 0), ("b", "B", 7), ("c", "Sea", 4), ("d", "D", 9)]), file: "fences/yard.geojson", layer: "yard",
            reusing: live)
        #expect(errors.isEmpty)
        let old = { (id: String) in live.fence(layer: "yard", id: id) }
        #expect(layer.prepared.map(\.fence.id) == ["a", "b", "c", "d"])
        #expect(layer.prepared[0] === old("a"))
        #expect(layer.prepared[1] !== old("b") && layer.prepared[1].bounds.minLon == 7)
        #expect(layer.prepared[2] !== old("c") && layer.prepared[2].fence.name == "Sea")
        #expect(layer.prepared[3].fence.name == "D")
        // A fence that only moved in the file (its feature index) is a different fence too.
        let (moved, _) = FenceLayerParser.parse(
            Self.layer([("b", "B", 2), ("a", "A", 0), ("c", "C", 4)]), file: "fences/yard.geojson", layer: "yard", reusing: live)
        #expect(moved.prepared[0] !== old("b") && moved.prepared[2] === old("c"))
    }
}
