import Foundation
import Testing
@testable import GeotriggerCore

/// docs/phones.md: which fences a phone is given as regions, when, and the `setWaypoints`
/// command that carries them, against the OwnTracks booklet's and Android app's examples.
@Suite struct PhoneRegionTests {
    typealias Kit = EngineTestKit

    /// Ten 40 m squares in a row along the east axis, one every 200 m (f0 at 0...40 m).
    static let row = (0..<10).map { i in
        Kit.box("f\(i)", name: "Fence \(i)", west: Double(i) * 200, east: Double(i) * 200 + 40, south: -20, north: 20)
    }

    static func snapshot(_ fences: [Fence] = row, triggers: String = "[{name: 'phones', phones: {regions: 3}}]") throws -> EngineSnapshot {
        try Kit.snapshot(fences, triggers: triggers)
    }

    /// `now`: the gateway's clock (nil: as the fix time goes, a live phone).
    static func observe(
        _ plan: inout PhoneRegionPlan, east: Double, north: Double = 0, time: Double, now: Double? = nil, _ snapshot: EngineSnapshot
    ) -> PhonePush? {
        plan.observe(Kit.at(east: east, north: north), time: time, now: now ?? time, device: "workers/alice", snapshot: snapshot)
    }

    /// The push `observe` must give.
    static func push(_ plan: inout PhoneRegionPlan, east: Double, time: Double, _ snapshot: EngineSnapshot) throws -> PhonePush {
        let push = observe(&plan, east: east, time: time, snapshot)
        return try #require(push)
    }

    @Test func theKeyReadsRegionsAndRefusesWhatPhonesCannotTake() throws {
        let settings = try Self.snapshot(triggers: "[{name: 'a', phones: {regions: 5}}, {name: 'b', phones: {}}, {name: 'c'}]").settings
        #expect(settings.map(\.phoneRegions) == [5, 20, nil])
        for (text, message) in [
            ("{regions: 0}", "phones.regions: expected a whole number of regions from 1 to 100, found 0"),
            ("{regions: 101}", "phones.regions: expected a whole number of regions from 1 to 100, found 101"),
            ("{regions: 2.5}", "phones.regions: expected a whole number of regions from 1 to 100, found 2.5"),
            ("{count: 3}", "phones.count: unknown key; expected regions"),
            ("true", "phones: expected an object {regions: N} (or null for off), found true"),
        ] {
            let issues = try EngineTriggerTests.issues("[{name: 'g', phones: \(text)}]", layers: [FenceLayer(name: "zones", file: "", fences: Self.row)])
            #expect(issues.contains { "\($0.key): \($0.message)" == message }, "\(text): \(issues.map { "\($0.key): \($0.message)" })")
        }
    }

    @Test func aPhoneGetsTheNearestFencesAsCirclesCoveringThem() throws {
        let snapshot = try Self.snapshot()
        var plan = PhoneRegionPlan()
        let push = try Self.push(&plan, east: 250, time: 1_000, snapshot)
        // At 250 m: f1 (200-240) is 10 m away, f2 (400-440) 150 m, f0 (0-40) 210 m; f3 and on are further.
        #expect(push.regions.map(\.rid) == ["zones/f0", "zones/f1", "zones/f2"])
        #expect(push.removed.isEmpty && push.triggers == ["phones"])
        #expect(Set(push.regions.map(\.tst)) == [1_000_000, 1_000_001, 1_000_002])
        for region in push.regions {
            let fence = try #require(snapshot.fence(layer: "zones", id: String(region.rid.dropFirst("zones/".count))))
            // Every corner of the square lies inside the circle; the circle is not much larger
            // than the half diagonal (28.3 m) plus rounding.
            let centre = Coordinate(lat: region.lat, lon: region.lon)
            let corners: [Coordinate] = [
                Coordinate(lat: fence.bounds.minLat, lon: fence.bounds.minLon), Coordinate(lat: fence.bounds.maxLat, lon: fence.bounds.maxLon),
                Coordinate(lat: fence.bounds.minLat, lon: fence.bounds.maxLon), Coordinate(lat: fence.bounds.maxLat, lon: fence.bounds.minLon),
            ]
            for corner in corners { #expect(Earth.distance(centre, corner) <= Double(region.rad)) }
            #expect(region.rad <= 31, "\(region)")
            #expect(region.desc == fence.fence.name)
        }
    }

    @Test func jitterNeverPushesAndMovingPastAQuarterOfTheGapDoes() throws {
        let snapshot = try Self.snapshot()
        var plan = PhoneRegionPlan()
        #expect(Self.observe(&plan, east: 250, time: 1_000, snapshot) != nil)
        // Nearest left out: f3 at 600 m, 350 m away: a quarter is 87.5 m (the last wobble 78 m).
        for (i, wobble) in [-30.0, 25, 40, -60, 70, 0].enumerated() {
            #expect(Self.observe(&plan, east: 250 + wobble, north: wobble / 2, time: 1_100 + Double(i) * 120, snapshot) == nil)
        }
        // Moved to 700 m: f3 (600-640) and f4 (800-840) come in, f0 and f1 leave; f2 keeps its slot.
        let before = plan.regions
        let push = try Self.push(&plan, east: 700, time: 2_000, snapshot)
        #expect(push.regions.map(\.rid) == ["zones/f2", "zones/f3", "zones/f4"])
        #expect(push.removed.map(\.rid) == ["zones/f0", "zones/f1"])
        #expect(push.regions.first { $0.rid == "zones/f2" }?.tst == before.first { $0.rid == "zones/f2" }?.tst)
        #expect(Set(push.regions.map(\.tst)) == [1_000_000, 1_000_001, 1_000_002], "the slots that left are taken again")
        #expect(plan.rid(ofSlotTime: Double(push.regions[1].tst)) == "zones/f3")
    }

    @Test func atMostOnePushPerMinuteOfFixTime() throws {
        let snapshot = try Self.snapshot()
        var plan = PhoneRegionPlan()
        #expect(Self.observe(&plan, east: 0, time: 1_000, snapshot) != nil)
        #expect(Self.observe(&plan, east: 1_000, time: 1_059, snapshot) == nil)
        let late = try Self.push(&plan, east: 1_000, time: 1_060, snapshot)
        #expect(late.regions.map(\.rid) == ["zones/f4", "zones/f5", "zones/f6"])
        // The same set again: nothing to push.
        #expect(Self.observe(&plan, east: 1_010, time: 2_000, snapshot) == nil)
    }

    /// A phone that steps its fix time a minute per message (or uploads a backlog at once) is
    /// pushed at most once a minute of the gateway's clock: each fix is a new minute of fix
    /// time and moves far enough to want a new set, yet only the first of a running minute is
    /// pushed; the next fix after the minute is, with the set where the phone is then.
    @Test func atMostOnePushPerMinuteOfTheGatewaysClockWhateverTheFixTime() throws {
        let snapshot = try Self.snapshot()
        var plan = PhoneRegionPlan()
        var pushes = 0
        // 30 fixes, 61 s of fix time apart, alternating between the row's two ends, all within
        // 29 s of the gateway's clock.
        for i in 0..<30 {
            let east = i % 2 == 0 ? 0.0 : 1_800
            if Self.observe(&plan, east: east, time: 1_000 + Double(i) * 61, now: 500 + Double(i), snapshot) != nil { pushes += 1 }
        }
        #expect(pushes == 1)
        #expect(plan.lastPushClock == 500)
        // The gateway's clock at 559.9: still the same minute. At 560: the set where it is now.
        #expect(Self.observe(&plan, east: 1_800, time: 5_000, now: 559.9, snapshot) == nil)
        let next = try #require(Self.observe(&plan, east: 1_800, time: 5_061, now: 560, snapshot))
        #expect(next.regions.map(\.rid) == ["zones/f7", "zones/f8", "zones/f9"])
    }

    @Test func aFenceAddedOrRemovedNearThePhoneIsPushedAtItsNextFix() throws {
        var plan = PhoneRegionPlan()
        #expect(Self.observe(&plan, east: 250, time: 1_000, try Self.snapshot()) != nil)
        // A fence appears right next to the phone; far fences change nothing.
        let near = Kit.box("new", name: "New", west: 260, east: 270, south: 0, north: 10)
        let added = try Self.snapshot(Self.row + [near])
        #expect(Self.observe(&plan, east: 250, time: 1_030, added) == nil, "within the minute")
        let push = try Self.push(&plan, east: 250, time: 1_061, added)
        #expect(push.regions.map(\.rid) == ["zones/f1", "zones/f2", "zones/new"] && push.removed.map(\.rid) == ["zones/f0"])
        // Removed again: f0 comes back in the freed slot.
        let removed = try Self.snapshot(Self.row)
        let back = try Self.push(&plan, east: 250, time: 1_200, removed)
        #expect(back.regions.map(\.rid) == ["zones/f0", "zones/f1", "zones/f2"] && back.removed.map(\.rid) == ["zones/new"])
        // A far fence added: looked at again, the same set, no push.
        let far = try Self.snapshot(Self.row + [Kit.box("far", west: 5_000, east: 5_040, south: 0, north: 40)])
        #expect(Self.observe(&plan, east: 250, time: 1_400, far) == nil)
    }

    @Test func aMovedFenceIsPushedWithItsNewCircle() throws {
        var plan = PhoneRegionPlan()
        let first = try Self.push(&plan, east: 250, time: 1_000, try Self.snapshot())
        var moved = Self.row
        moved[1] = Kit.box("f1", name: "Fence 1", west: 230, east: 270, south: -20, north: 20)
        let push = try Self.push(&plan, east: 250, time: 1_100, try Self.snapshot(moved))
        #expect(push.regions.map(\.rid) == first.regions.map(\.rid) && push.removed.isEmpty)
        #expect(push.regions[1].lon > first.regions[1].lon && push.regions[1].tst == first.regions[1].tst)
    }

    @Test func triggersTogetherGiveAtMostAHundredRegions() throws {
        // Layer "zones": 150 squares eastwards, one every 50 m; layer "more": 60 westwards.
        let zones = (0..<150).map { i in Kit.box("m\(i)", west: Double(i) * 50, east: Double(i) * 50 + 10, south: 0, north: 10) }
        let more = (1...60).map { i in Kit.box("w\(i)", layer: "more", west: Double(-i) * 50, east: Double(-i) * 50 + 10, south: 0, north: 10) }
        let layers = [FenceLayer(name: "zones", file: "", fences: zones), FenceLayer(name: "more", file: "", fences: more)]
        let snapshot = try EngineSnapshot(
            layers: layers, configTriggers: try Kit.json5("[{name: 'a', fences: ['more'], phones: {regions: 80}}, {name: 'b', fences: ['zones'], phones: {regions: 100}}]"))
        var plan = PhoneRegionPlan()
        let push = try Self.push(&plan, east: 0, time: 0, snapshot)
        #expect(push.capped && push.regions.count == 100 && Set(push.triggers) == ["a", "b"])
        // The nearest hundred of the 160 given: 50 each way (m0 is under the phone).
        #expect(Set(push.regions.map(\.rid)) == Set((0..<50).map { "zones/m\($0)" } + (1...50).map { "more/w\($0)" }))
    }

    @Test func onlyTheTriggersThatApplyToTheDeviceGiveRegions() throws {
        let snapshot = try Self.snapshot(triggers: "[{name: 'vans', devices: ['vans/*'], phones: {regions: 2}}, {name: 'all'}]")
        var plan = PhoneRegionPlan()
        #expect(Self.observe(&plan, east: 0, time: 1_000, snapshot) == nil, "workers/alice is no van")
        var vanPlan = PhoneRegionPlan()
        let van = vanPlan.observe(Kit.at(east: 0, north: 0), time: 1_000, now: 1_000, device: "vans/v1", snapshot: snapshot)
        let push = try #require(van)
        #expect(push.regions.map(\.rid) == ["zones/f0", "zones/f1"] && push.triggers == ["vans"])
    }

    @Test func namesAreMadeSafeAndUniqueForIOS() throws {
        let fences = [
            Kit.box("a", name: "+Dock: north|2", west: 0, east: 10, south: 0, north: 10),
            Kit.box("b", name: "Gate", west: 20, east: 30, south: 0, north: 10),
            Kit.box("c", name: "Gate", west: 40, east: 50, south: 0, north: 10),
        ]
        var plan = PhoneRegionPlan()
        let push = try Self.push(&plan, east: 0, time: 0, Self.snapshot(fences))
        #expect(push.regions.map(\.desc) == ["Dock- north-2", "Gate (zones/b)", "Gate (zones/c)"])
    }

    // MARK: The command against OwnTracks' own examples

    static func fixture(_ name: String) throws -> JSONValue {
        let url = GeometryFixtures.directory.deletingLastPathComponent().appendingPathComponent("owntracks/\(name)")
        return try JSONReader.parse(Array(try Data(contentsOf: url)), file: name, dialect: .json).value
    }

    /// Each value's JSON kind, with integers told apart from other numbers.
    static func kinds(_ object: JSONObject) -> [String: String] {
        var kinds: [String: String] = [:]
        for (key, value) in object.entries {
            switch value {
            case .number(let n): kinds[key] = n.rounded() == n && !key.hasPrefix("la") && !key.hasPrefix("lo") ? "integer" : "number"
            case .string: kinds[key] = "string"
            default: kinds[key] = value.typeName
            }
        }
        return kinds
    }

    @Test func theCommandHasTheBookletsShapeAndAndroidsTypes() throws {
        var plan = PhoneRegionPlan()
        let push = try Self.push(&plan, east: 250, time: 1_000, try Self.snapshot())
        let ours = push.commandJSON
        let booklet = try Self.fixture("booklet-setWaypoints.json")
        guard case .object(let command) = ours, case .object(let example) = booklet,
              case .object(let list)? = command["waypoints"], case .object(let exampleList)? = example["waypoints"],
              case .array(let waypoints)? = list["waypoints"], case .array(let exampleWaypoints)? = exampleList["waypoints"],
              case .object(let exampleWaypoint)? = exampleWaypoints.first
        else {
            Issue.record("not the booklet's shape: \(ours.serialized())")
            return
        }
        #expect(command["_type"] == example["_type"] && command["action"] == example["action"])
        #expect(list["_type"] == exampleList["_type"])
        #expect(waypoints.count == 3)
        for case .object(let waypoint) in waypoints {
            // The booklet's keys, each of the same kind (rad and tst whole numbers).
            #expect(Self.kinds(waypoint) == Self.kinds(exampleWaypoint), "\(waypoint)")
        }
        // Android's parser test reads `rad` as an Int and `tst` as a Long: whole numbers in the text.
        let android = try Self.fixture("android-waypoint_message.json")
        guard case .object(let androidWaypoint) = android, case .object(let first)? = waypoints.first else { return }
        for key in androidWaypoint.entries.map(\.key) { #expect(Self.kinds(first)[key] == Self.kinds(androidWaypoint)[key], "\(key)") }
        let text = ours.serialized()
        #expect(text.contains("\"rad\":29") || text.contains("\"rad\":30") || text.contains("\"rad\":31"), "\(text)")
        #expect(!text.contains("\"tst\":1000000.0"))
        // Android's own empty setWaypoints parses the same way.
        guard case .object(let androidCommand) = try Self.fixture("android-cmd_set_waypoints.json") else { return }
        #expect(androidCommand["_type"] == command["_type"] && androidCommand["action"] == command["action"])
    }

    @Test func removalsComeFirstWithCoordinatesIOSTakesAsDelete() throws {
        var plan = PhoneRegionPlan()
        let snapshot = try Self.snapshot()
        _ = Self.observe(&plan, east: 250, time: 1_000, snapshot)
        let push = try Self.push(&plan, east: 700, time: 2_000, snapshot)
        guard case .object(let command) = push.commandJSON, case .object(let list)? = command["waypoints"],
              case .array(let waypoints)? = list["waypoints"]
        else { return }
        let parsed = waypoints.compactMap { w -> (rid: String, lat: Double)? in
            guard case .object(let o) = w, case .string(let rid)? = o["rid"], case .number(let lat)? = o["lat"] else { return nil }
            return (rid, lat)
        }
        #expect(parsed.map(\.rid) == ["zones/f0", "zones/f1", "zones/f2", "zones/f3", "zones/f4"])
        #expect(parsed.prefix(2).allSatisfy { $0.lat < -90 } && parsed.dropFirst(2).allSatisfy { abs($0.lat) <= 90 })
    }

    // MARK: Transitions

    @Test func transitionsOfTheBookletAndTheAndroidAppAreRead() throws {
        func decode(_ name: String) throws -> PhoneTransition {
            let url = GeometryFixtures.directory.deletingLastPathComponent().appendingPathComponent("owntracks/\(name)")
            return try PhoneTransition.decode(Array(try Data(contentsOf: url))).get()
        }
        #expect(try decode("booklet-transition.json")
            == PhoneTransition(enter: true, time: 1_707_057_574, rid: "f7676c", wtst: 1_610_104_395, desc: "My favorite coffee shop (Delaville)"))
        #expect(try decode("android-transition_message.json")
            == PhoneTransition(enter: false, time: 1_603_209_966, rid: nil, wtst: 1_558_351_273, desc: "myregion"))
    }

    @Test func brokenTransitionsNameWhatIsWrong() {
        func reason(_ text: String) -> DropReason? {
            if case .failure(let drop) = PhoneTransition.decode(Array(text.utf8)) { return drop.reason }
            return nil
        }
        #expect(reason("{") == .notJSON)
        #expect(reason("[]") == .wrongType)
        #expect(reason(#"{"event":"enter","tst":1}"#) == .missingField)
        #expect(reason(#"{"_type":"location","lat":1,"lon":2,"tst":3}"#) == .ignoredType)
        #expect(reason(#"{"_type":"transition","tst":1}"#) == .missingField)
        #expect(reason(#"{"_type":"transition","event":"arrive","tst":1}"#) == .wrongType)
        #expect(reason(#"{"_type":"transition","event":"enter","tst":"now"}"#) == .wrongType)
        #expect(reason(#"{"_type":"transition","event":"enter"}"#) == .missingField)
        #expect(reason(#"{"_type":"transition","event":"leave","tst":5}"#) == nil)
    }

    @Test func theGatewaysOwnTransitionsAreTold() {
        let rid = "zones/f1"
        #expect(PhoneTransition(enter: true, time: 1, rid: rid, wtst: PhoneTransition.gatewayWaypointTime(rid: rid)).isGatewaysOwn)
        #expect(!PhoneTransition(enter: true, time: 1, rid: rid, wtst: Double(PhoneRegion.slotTime(1))).isGatewaysOwn)
        #expect(!PhoneTransition(enter: true, time: 1, rid: nil, wtst: PhoneTransition.gatewayWaypointTime(rid: rid)).isGatewaysOwn)
    }
}
