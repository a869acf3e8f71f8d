import Testing
@testable import GeotriggerCore

/// A snapshot built `reusing` a previous one (as runtime fence changes rebuild it) takes over
/// the unchanged layers' fence numbers and rows: it must equal the snapshot built from scratch.
@Suite struct EngineSnapshotReuseTests {
    typealias Kit = EngineTestKit

    /// A file layer as the parser makes it (each fence prepared): boxes and points on a grid,
    /// some named "skip" (left out by a `where`), some following a device.
    static func sites(count: Int) throws -> FenceLayer {
        var prepared: [PreparedFence] = []
        for n in 0..<count {
            let east = Double(n % 20) * 150, north = Double(n / 20) * 150
            let properties: JSONObject = n % 7 == 3 ? ["follow": .string("fleet/\(n)")] : JSONObject()
            let fence =
                n % 5 == 4
                ? Kit.point("p\(n)", layer: "sites", east: east, north: north, buffer: n % 10 == 9 ? nil : 6, featureIndex: n)
                : Kit.box(
                    "b\(n)", layer: "sites", name: n % 11 == 0 ? "skip" : "Site \(n)", west: east, east: east + 40,
                    south: north, north: north + 30, properties: properties, featureIndex: n)
            prepared.append(try PreparedFence(fence))
        }
        return FenceLayer(name: "sites", file: "fences/sites.geojson", prepared: prepared)
    }

    /// A runtime layer (fences not prepared) of `count` boxes.
    static func runtime(_ name: String, count: Int, offset: Double = 0) -> FenceLayer {
        FenceLayer(
            name: name,
            fences: (0..<count).map {
                Kit.box(
                    "r\($0)", layer: name, name: "Runtime \($0)", west: offset + Double($0) * 70, east: offset + Double($0) * 70 + 20,
                    south: -60, north: -40, properties: $0 == 1 ? ["follow": .string("fleet/r")] : JSONObject(), featureIndex: $0 + 1)
            })
    }

    static let triggers = """
        [{name: 'all', where: "$fencefeature.name != 'skip'", buffer: 5, exitMargin: 3},
         {name: 'sites', fences: ['sites'], exitMargin: 4, buffer: 2},
         {name: 'late', fences: ['rt', 'other'], buffer: 9}]
        """

    static func build(_ layers: [FenceLayer], triggers: String = triggers, reusing previous: EngineSnapshot?) throws -> EngineSnapshot {
        try EngineSnapshot(layers: layers, configTriggers: try Kit.json5(triggers), reusing: previous)
    }

    /// Everything a monitor or a query reads, compared.
    static func expectSame(_ a: EngineSnapshot, _ b: EngineSnapshot, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        #expect(a.fences.map { "\($0.fence.layer)/\($0.fence.id)" } == b.fences.map { "\($0.fence.layer)/\($0.fence.id)" }, sourceLocation: sourceLocation)
        #expect(a.settings == b.settings, sourceLocation: sourceLocation)
        #expect(a.fenceWatchStart == b.fenceWatchStart, sourceLocation: sourceLocation)
        #expect(a.fenceWatches.map(\.watch) == b.fenceWatches.map(\.watch), sourceLocation: sourceLocation)
        #expect(a.fenceWatches.map(\.buffer) == b.fenceWatches.map(\.buffer), sourceLocation: sourceLocation)
        #expect(a.watchFenceCounts == b.watchFenceCounts, sourceLocation: sourceLocation)
        #expect(a.fenceReach == b.fenceReach, sourceLocation: sourceLocation)
        #expect(a.fenceFollows == b.fenceFollows, sourceLocation: sourceLocation)
        #expect(a.hasFollowingFences == b.hasFollowingFences, sourceLocation: sourceLocation)
        for (x, y) in [(a.index, b.index), (a.unwatchedIndex, b.unwatchedIndex)] {
            #expect(x.boxes == y.boxes, sourceLocation: sourceLocation)
            #expect(x.children == y.children, sourceLocation: sourceLocation)
            #expect(x.ids == y.ids, sourceLocation: sourceLocation)
            #expect(x.rootRange == y.rootRange, sourceLocation: sourceLocation)
        }
        for (n, fence) in a.fences.enumerated() {
            #expect(
                a.fenceNumbers[EngineSnapshot.FenceKey(layer: fence.fence.layer, id: fence.fence.id)] == Int32(n),
                sourceLocation: sourceLocation)
            #expect(
                b.fenceNumbers[EngineSnapshot.FenceKey(layer: fence.fence.layer, id: fence.fence.id)] == Int32(n),
                sourceLocation: sourceLocation)
        }
    }

    /// Runtime fences added, changed and removed after a file layer of 400 fences: each
    /// rebuild equals the snapshot built from scratch, and a removed fence is not found.
    @Test func rebuildsEqualFreshBuilds() throws {
        let sites = try Self.sites(count: 400)
        // The layers the triggers name are always there (a runtime layer may be empty).
        func layers(other: Int, rt: Int, offset: Double = 0) -> [FenceLayer] {
            [sites, Self.runtime("other", count: other), Self.runtime("rt", count: rt, offset: offset)]
        }
        var live = try Self.build(layers(other: 0, rt: 0), reusing: nil)
        let steps: [[FenceLayer]] = [
            layers(other: 0, rt: 1),
            layers(other: 0, rt: 12),
            layers(other: 3, rt: 12),
            layers(other: 3, rt: 12, offset: 5),
            layers(other: 0, rt: 2),
            layers(other: 0, rt: 0),
            // The file layer moved behind another: carried with other numbers.
            [Self.runtime("other", count: 3), sites, Self.runtime("rt", count: 0)],
            layers(other: 0, rt: 30),
            layers(other: 0, rt: 0),
        ]
        for layers in steps {
            let rebuilt = try Self.build(layers, reusing: live)
            Self.expectSame(rebuilt, try Self.build(layers, reusing: nil))
            // The file layer's prepared fences are the parser's, never prepared again.
            let kept = rebuilt.fences.filter { $0.fence.layer == "sites" }
            #expect(zip(kept, sites.prepared).allSatisfy { $0 === $1 })
            live = rebuilt
        }
        #expect(live.fence(layer: "rt", id: "r0") == nil)
        #expect(live.fence(layer: "sites", id: "b0") != nil)
    }

    /// Changed triggers (a buffer, a `where`, a trigger more) change the unchanged layer's rows.
    @Test func changedTriggersRebuildTheRows() throws {
        let sites = try Self.sites(count: 120)
        let layers = [sites, Self.runtime("other", count: 0), Self.runtime("rt", count: 4)]
        let live = try Self.build(layers, reusing: nil)
        for triggers in [
            Self.triggers.replacing("buffer: 2", with: "buffer: 3"),
            Self.triggers.replacing("'skip'", with: "'Site 1'"),
            "[{name: 'first', fences: ['sites'], buffer: 1}, " + Self.triggers.dropFirst(),
            "[]",
        ] {
            Self.expectSame(try Self.build(layers, triggers: triggers, reusing: live), try Self.build(layers, triggers: triggers, reusing: nil))
        }
    }

    /// A layer name given twice is checked for duplicate ids as from scratch.
    @Test func aLayerGivenTwiceStillHasDuplicateIds() throws {
        let sites = try Self.sites(count: 30)
        let empty = [Self.runtime("other", count: 0), Self.runtime("rt", count: 0)]
        let live = try Self.build([sites] + empty, reusing: nil)
        #expect(throws: TriggerError.self) { try Self.build([sites, sites] + empty, reusing: live) }
    }

    /// The fence table kept for the leading layers (its slots, at most half full, taken over
    /// and the later layers' fences taken out) finds every kept fence and no dropped one.
    @Test func aKeptTableFindsEveryKeptFenceAndNoDroppedOne() throws {
        let fences = try (0..<1023).map { try PreparedFence(Kit.point("p\($0)", east: Double($0), north: 0)) }
        let new = try PreparedFence(Kit.point("new", east: 0, north: 10))
        for round in 0..<40 {
            var table = FenceNumberTable(capacity: 1023)
            table.startLayer("a\(round)")
            for p in fences.prefix(1020) { table.append(p, id: p.fence.id) }
            table.startLayer("b")
            for p in fences.suffix(3) { table.append(p, id: p.fence.id) }
            var kept = FenceNumberTable(capacity: 1021, keepingLayers: 1, of: table)
            #expect(kept.slots.count == table.slots.count)
            kept.startLayer("c")
            kept.append(new, id: "new")
            for (n, p) in fences.prefix(1020).enumerated() {
                #expect(kept[EngineSnapshot.FenceKey(layer: "a\(round)", id: p.fence.id)] == Int32(n))
            }
            for p in fences.suffix(3) { #expect(kept[EngineSnapshot.FenceKey(layer: "b", id: p.fence.id)] == nil) }
            #expect(kept[EngineSnapshot.FenceKey(layer: "c", id: "new")] == 1020)
        }
    }
}
