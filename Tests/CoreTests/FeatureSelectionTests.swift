import Testing

@testable import GeotriggerCore

/// What the `features` query selects and writes: ``FenceIndex/query(_:_:)`` by a box,
/// ``GeoBounds/meets(_:)``, ``EngineSnapshot/fenceNumbers(meeting:layers:limit:offset:)`` with the
/// buffers and triggers per fence, and ``FenceGeometry/writeGeoJSON(to:)``.
@Suite struct FeatureSelectionTests {
    static func box(_ id: String, layer: String, west: Double, south: Double, size: Double = 0.01, buffer: Double? = nil) -> Fence {
        let ring = [
            Coordinate(lat: south, lon: west), Coordinate(lat: south, lon: west + size), Coordinate(lat: south + size, lon: west + size),
            Coordinate(lat: south + size, lon: west), Coordinate(lat: south, lon: west),
        ]
        return Fence(id: id, layer: layer, name: id.uppercased(), geometry: .polygons([Polygon(exterior: ring)]), buffer: buffer)
    }

    /// sites: `a` (its own buffer 20), `b`, the point `p`; dateline: `d`, split at ±180; quiet:
    /// `q` over `a`, which no trigger watches. Triggers: `near` (sites, 500 m), `far` (sites and
    /// dateline, 1000 m).
    static func snapshot() throws -> EngineSnapshot {
        let point = Fence(id: "p", layer: "sites", geometry: .points([Coordinate(lat: 50.005, lon: 10.05)]))
        let west = [Coordinate(lat: 0, lon: 179.99), Coordinate(lat: 0, lon: 180), Coordinate(lat: 0.01, lon: 180),
                    Coordinate(lat: 0.01, lon: 179.99), Coordinate(lat: 0, lon: 179.99)]
        let east = [Coordinate(lat: 0, lon: -180), Coordinate(lat: 0, lon: -179.99), Coordinate(lat: 0.01, lon: -179.99),
                    Coordinate(lat: 0.01, lon: -180), Coordinate(lat: 0, lon: -180)]
        let dateline = Fence(id: "d", layer: "dateline", geometry: .polygons([Polygon(exterior: west), Polygon(exterior: east)]))
        let layers = [
            FenceLayer(name: "sites", file: "sites.geojson", fences: [
                box("a", layer: "sites", west: 10, south: 50, buffer: 20), box("b", layer: "sites", west: 10.1, south: 50), point,
            ]),
            FenceLayer(name: "dateline", file: "dateline.geojson", fences: [dateline]),
            FenceLayer(name: "quiet", file: "quiet.geojson", fences: [box("q", layer: "quiet", west: 10, south: 50)]),
        ]
        let triggers: JSONValue = .array([
            .object(["name": .string("near"), "fences": .array([.string("sites")]), "buffer": .number(500)]),
            .object(["name": .string("far"), "fences": .array([.string("sites"), .string("dateline")]), "buffer": .number(1000)]),
        ])
        return try EngineSnapshot(layers: layers, configTriggers: triggers)
    }

    static func ids(_ snapshot: EngineSnapshot, _ numbers: [Int]) -> [String] {
        numbers.map { "\(snapshot.fences[$0].fence.layer)/\(snapshot.fences[$0].fence.id)" }
    }

    static func select(
        _ snapshot: EngineSnapshot, _ bbox: [Double]?, layers: Set<String>? = nil, limit: Int = 2000, offset: Int = 0
    ) -> (ids: [String], more: Bool) {
        let box = bbox.map { FeaturesQuery.BoundingBox(west: $0[0], south: $0[1], east: $0[2], north: $0[3]).bounds }
        let (numbers, more) = snapshot.fenceNumbers(meeting: box, layers: layers, limit: limit, offset: offset)
        return (ids(snapshot, numbers), more)
    }

    @Test func buffersAndTriggersPerFence() throws {
        let snapshot = try Self.snapshot()
        let info = snapshot.fences.indices.map { "\(snapshot.fences[$0].fence.id) \(snapshot.largestBuffer(ofFence: $0).map { "\($0)" } ?? "nil") \(snapshot.triggerNames(watchingFence: $0))" }
        #expect(info == [
            #"a 20.0 ["near", "far"]"#, #"b 1000.0 ["near", "far"]"#, #"p 1000.0 ["near", "far"]"#, #"d 1000.0 ["far"]"#, "q nil []",
        ])
    }

    @Test func withoutABoxEveryFenceOfTheLayersAskedInOrder() throws {
        let snapshot = try Self.snapshot()
        #expect(Self.select(snapshot, nil) == (["sites/a", "sites/b", "sites/p", "dateline/d", "quiet/q"], false))
        #expect(Self.select(snapshot, nil, limit: 5) == (["sites/a", "sites/b", "sites/p", "dateline/d", "quiet/q"], false))
        #expect(Self.select(snapshot, nil, limit: 2) == (["sites/a", "sites/b"], true))
        #expect(Self.select(snapshot, nil, layers: ["quiet", "dateline"]) == (["dateline/d", "quiet/q"], false))
        #expect(Self.select(snapshot, nil, layers: []) == ([], false))
    }

    /// Pages: `offset` skips that many of the fences selected, in the same order; `more` says
    /// whether any remain past the page.
    @Test func anOffsetPagesThroughTheSameOrder() throws {
        let snapshot = try Self.snapshot()
        #expect(Self.select(snapshot, nil, limit: 2, offset: 2) == (["sites/p", "dateline/d"], true))
        #expect(Self.select(snapshot, nil, limit: 2, offset: 4) == (["quiet/q"], false))
        #expect(Self.select(snapshot, nil, limit: 2, offset: 5) == ([], false))
        #expect(Self.select(snapshot, nil, layers: ["sites", "quiet"], limit: 1, offset: 3) == (["quiet/q"], false))
        let around = [10.0, 50.0, 10.2, 50.1]
        #expect(Self.select(snapshot, around) == (["sites/a", "sites/b", "sites/p", "quiet/q"], false))
        #expect(Self.select(snapshot, around, limit: 2, offset: 1) == (["sites/b", "sites/p"], true))
        #expect(Self.select(snapshot, around, limit: 2, offset: 3) == (["quiet/q"], false))
        #expect(Self.select(snapshot, around, offset: 9) == ([], false))
    }

    /// Without a box, or with the world as its box, a page is cut from the layers' runs of
    /// fence numbers: it looks at the fences it returns and one more, whatever its offset and
    /// however many fences there are (it used to look at every fence before the page, or with
    /// the world as box, at every fence, sorted, for each page). The pages are those of a scan.
    @Test func aPageWithoutABoxOrWithTheWorldLooksOnlyAtItsOwnFences() throws {
        let layers = (0..<3).map { l in
            FenceLayer(name: "l\(l)", file: "l\(l).geojson", fences: (0..<4_000).map { i in
                Self.box("f\(i)", layer: "l\(l)", west: Double(i % 100) * 0.02, south: Double(l) + Double(i / 100) * 0.005, size: 0.001)
            })
        }
        let triggers: JSONValue = .array([.object(["name": .string("some"), "fences": .array([.string("l1")])])])
        let snapshot = try EngineSnapshot(layers: layers, configTriggers: triggers)
        let world = FeaturesQuery.BoundingBox(west: -180, south: -90, east: 180, north: 90).bounds
        #expect(world.coversTheWorld && !FeaturesQuery.BoundingBox(west: -179.9, south: -90, east: 180, north: 90).bounds.coversTheWorld)
        for box in [nil, world] {
            for layers in [nil, Set(["l2", "l0"]), Set(["l1"]), Set<String>()] {
                let selected = snapshot.fences.indices.filter { layers?.contains(snapshot.fences[$0].fence.layer) ?? true }
                for offset in [0, 3_995, 4_000, 7_990, 11_990, 12_000, 50_000] {
                    for limit in [0, 10, 2_000] {
                        let page = snapshot.fencePage(meeting: box, layers: layers, limit: limit, offset: offset)
                        let expected = Array(selected.dropFirst(offset).prefix(limit))
                        #expect(page.numbers == expected && page.more == (selected.count > offset + limit),
                                "box \(box != nil), layers \(layers ?? []), offset \(offset), limit \(limit)")
                        #expect(page.examined <= limit + 1, "box \(box != nil), layers \(layers ?? []), offset \(offset): \(page.examined) fences looked at")
                    }
                }
            }
        }
        // A box short of the world goes through the indexes, and finds the same fences.
        let almost = FeaturesQuery.BoundingBox(west: -179, south: -89, east: 179, north: 89).bounds
        let page = snapshot.fencePage(meeting: almost, layers: nil, limit: 10, offset: 11_990)
        #expect(page.numbers == Array(11_990..<12_000) && !page.more)
        #expect(page.examined == 12_000)
    }

    @Test func aBoxSelectsByTheBufferedBoundsThroughBothIndexes() throws {
        let snapshot = try Self.snapshot()
        // Around `a`: `a` and the unwatched `q` on top of it.
        #expect(Self.select(snapshot, [10.002, 50.002, 10.003, 50.003]) == (["sites/a", "quiet/q"], false))
        #expect(Self.select(snapshot, [10.002, 50.002, 10.003, 50.003], layers: ["sites"]) == (["sites/a"], false))
        #expect(Self.select(snapshot, [10.002, 50.002, 10.003, 50.003], limit: 1) == (["sites/a"], true))
        // 700 m east of the point: within its 1000 m buffer; 1,400 m east: not.
        #expect(Self.select(snapshot, [10.0597, 50.0, 10.0598, 50.01]).ids == ["sites/p"])
        #expect(Self.select(snapshot, [10.0697, 50.0, 10.0698, 50.01]).ids == [])
        // `a` has a buffer of its own (20 m): 100 m west of it is outside.
        #expect(Self.select(snapshot, [9.9986, 50.0, 9.9987, 50.01]).ids == [])
        #expect(Self.select(snapshot, [9.99985, 50.0, 9.99986, 50.01]).ids == ["sites/a"])
        // Everything, and nothing.
        #expect(Self.select(snapshot, [-180, -90, 180, 90]).ids == ["sites/a", "sites/b", "sites/p", "dateline/d", "quiet/q"])
        #expect(Self.select(snapshot, [0, 0, 1, 1]) == ([], false))
    }

    @Test func aBoxAcrossTheAntimeridianFindsAFenceSplitThere() throws {
        let snapshot = try Self.snapshot()
        #expect(Self.select(snapshot, [179.9, -1, -179.9, 1]).ids == ["dateline/d"])
        #expect(Self.select(snapshot, [-179.995, 0.002, -179.994, 0.003]).ids == ["dateline/d"])
        #expect(Self.select(snapshot, [179.995, 0.002, 179.996, 0.003]).ids == ["dateline/d"])
        #expect(Self.select(snapshot, [178, -1, 179, 1]).ids == [])
        #expect(Self.select(snapshot, [-179, -1, -178, 1]).ids == [])
        // A box across the antimeridian from far west to far east holds all but the middle.
        #expect(Self.select(snapshot, [20, -90, 5, 90]).ids == ["dateline/d"])
        #expect(Self.select(snapshot, [5, -90, 20, 90]).ids == ["sites/a", "sites/b", "sites/p", "quiet/q"])
    }

    @Test func boundsMeetAcrossTheAntimeridian() {
        let across = GeoBounds(minLat: 0, minLon: 179, maxLat: 1, maxLon: 181)
        #expect(across.meets(GeoBounds(minLat: 0.5, minLon: -179.5, maxLat: 2, maxLon: -179)))
        #expect(GeoBounds(minLat: 0.5, minLon: -179.5, maxLat: 2, maxLon: -179).meets(across))
        #expect(!across.meets(GeoBounds(minLat: 0.5, minLon: -178, maxLat: 2, maxLon: 0)))
        #expect(!across.meets(GeoBounds(minLat: 1.5, minLon: 179.5, maxLat: 2, maxLon: 179.6)))
        // Touching counts.
        #expect(GeoBounds(minLat: 0, minLon: 0, maxLat: 1, maxLon: 1).meets(GeoBounds(minLat: 1, minLon: 1, maxLat: 2, maxLon: 2)))
    }

    /// Random boxes with reach and random windows (many near ±180, some across it): the index
    /// reports every entry whose grown box meets the window, each once.
    @Test func windowQueriesMatchBruteForce() {
        var random = SplitMix64(seed: 7)
        var bounds: [GeoBounds] = [], reach: [Double] = []
        for i in 0..<2000 {
            let lat = random.nextUniform(-80, 80)
            let lon = i % 4 == 0 ? random.nextUniform(179.3, 180) : random.nextUniform(-180, 180)
            bounds.append(GeoBounds(minLat: lat, minLon: lon, maxLat: lat + random.nextUniform(0, 0.4), maxLon: lon + random.nextUniform(0, 0.5)))
            reach.append(i % 3 == 0 ? 0 : random.nextUniform(0, 3000))
        }
        let index = FenceIndex(bounds: bounds, reach: reach)
        var hits = 0
        for i in 0..<1500 {
            let south = random.nextUniform(-85, 80), north = south + random.nextUniform(0, i % 10 == 0 ? 20 : 1)
            let west = i % 3 == 0 ? random.nextUniform(178, 180) : random.nextUniform(-180, 180)
            var east = west + random.nextUniform(0, i % 10 == 0 ? 90 : 2)
            if east > 180 { east -= 360 }
            let window = FeaturesQuery.BoundingBox(west: west, south: south, east: east, north: min(north, 90)).bounds
            var found: [Int] = []
            index.query(window) { found.append($0) }
            let expected = (0..<bounds.count).filter { bounds[$0].expanded(by: reach[$0]).meets(window) }
            #expect(Set(found).count == found.count, "duplicates in \(window)")
            #expect(Set(expected).isSubset(of: Set(found)), "missed \(Set(expected).subtracting(found)) in \(window)")
            hits += expected.count
        }
        #expect(hits > 1000)
        var none: [Int] = []
        FenceIndex(bounds: [], reach: []).query(GeoBounds(minLat: -90, minLon: -180, maxLat: 90, maxLon: 180)) { none.append($0) }
        #expect(none.isEmpty)
    }

    @Test func geometryIsWrittenAsGeoJSONThatReadsBackTheSame() throws {
        let ring = [Coordinate(lat: 0, lon: 0), Coordinate(lat: 0, lon: 1), Coordinate(lat: 1, lon: 1), Coordinate(lat: 0, lon: 0)]
        let hole = [Coordinate(lat: 0.1, lon: 0.5), Coordinate(lat: 0.2, lon: 0.8), Coordinate(lat: 0.2, lon: 0.5), Coordinate(lat: 0.1, lon: 0.5)]
        let line = [Coordinate(lat: 34.4561275, lon: -119.7109338), Coordinate(lat: 34.5, lon: -119.7)]
        let geometries: [(FenceGeometry, String)] = [
            (.points([Coordinate(lat: 34.4548652, lon: -119.7102201)]), #"{"type":"Point","coordinates":[-119.7102201,34.4548652]}"#),
            (.points([Coordinate(lat: 1, lon: 2), Coordinate(lat: 3, lon: 4)]), #"{"type":"MultiPoint","coordinates":[[2,1],[4,3]]}"#),
            (.lines([line]), #"{"type":"LineString","coordinates":[[-119.7109338,34.4561275],[-119.7,34.5]]}"#),
            (.lines([line, line]), #"{"type":"MultiLineString","coordinates":[[[-119.7109338,34.4561275],[-119.7,34.5]],[[-119.7109338,34.4561275],[-119.7,34.5]]]}"#),
            (.polygons([Polygon(exterior: ring, holes: [hole])]),
             #"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]],[[0.5,0.1],[0.8,0.2],[0.5,0.2],[0.5,0.1]]]}"#),
            (.polygons([Polygon(exterior: ring), Polygon(exterior: ring.map { Coordinate(lat: $0.lat + 5, lon: $0.lon) })]),
             #"{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[0,5],[1,5],[1,6],[0,5]]]]}"#),
        ]
        for (geometry, text) in geometries {
            var out: [UInt8] = []
            geometry.writeGeoJSON(to: &out)
            #expect(String(decoding: out, as: UTF8.self) == text)
            let feature = #"{"type":"FeatureCollection","features":[{"type":"Feature","id":"g","properties":{"buffer":5},"geometry":\#(text)}]}"#
            let (layer, errors) = FenceLayerParser.parse(Array(feature.utf8), file: "g.geojson", layer: "g")
            #expect(errors.isEmpty, "\(errors)")
            #expect(layer.fences.first?.geometry == geometry, "\(text)")
        }
    }
}
