import Testing
@testable import GeotriggerCore

/// docs/crossings.md: stays inferred between two fixes whose straight segment passes through a
/// fence, by fix time.
@Suite struct EngineCrossingTests {
    typealias Kit = EngineTestKit

    static func monitor(_ triggers: String, fences: [Fence] = [Kit.zone]) throws -> DeviceMonitor {
        DeviceMonitor(device: "workers/alice", snapshot: try Kit.snapshot(fences, triggers: triggers), now: 0)
    }

    /// Metres from the kit's origin to `c` (east, north), for checking positions.
    static func metres(_ c: Coordinate) -> (east: Double, north: Double) {
        ((c.lon - Kit.origin.lon) * Kit.metresPerDegreeLon, (c.lat - Kit.origin.lat) * Kit.metresPerDegreeLat)
    }

    /// The zone spans x -100...0: from x -300 at t 1000 to x 200 at t 1050 (10 m/s) the device
    /// is inside from t 1020 to 1030.
    static func jump(_ m: inout DeviceMonitor, gap: Double = 50) -> [FenceNotification] {
        let a = m.handle(Kit.update(east: -300, time: 1_000), receivedAt: 0)
        #expect(a.notifications.isEmpty)
        return m.handle(Kit.update(east: 200, time: 1_000 + gap), receivedAt: 1).notifications
    }

    @Test func jumpOverAFenceGivesAnInferredEnterAndExit() throws {
        var m = try Self.monitor("[{name: 'gate', crossings: true}]")
        let notes = Self.jump(&m)
        try #require(notes.count == 2)
        let (enter, exit) = (notes[0], notes[1])
        #expect(enter.type == .enter && exit.type == .exit && exit.reason == .moved)
        #expect(enter.inferred && exit.inferred)
        #expect(abs(enter.position.time - 1_020) < 0.002 && abs(exit.position.time - 1_030) < 0.002)
        #expect(abs(Self.metres(enter.position.coordinate).east + 100) < 0.05)
        #expect(abs(Self.metres(exit.position.coordinate).east) < 0.05)
        #expect(enter.position.accuracy == nil && exit.position.accuracy == nil)
        #expect(enter.distance == 0 && exit.distance == 0)
        #expect(abs((exit.dwellSeconds ?? 0) - 10) < 0.002 && enter.dwellSeconds == nil)
        #expect(exit.visit == enter.id && enter.visit == enter.id)
        // Ids come from the interpolated (millisecond) times, as for any event.
        #expect(
            enter.id
                == EventID.make(
                    trigger: "gate", layer: "zones", fence: "z1", device: "workers/alice", type: "enter",
                    time: enter.position.time))
        #expect(enter.position.time == (enter.position.time * 1000).rounded() / 1000)
        // The event says so; the stay is over.
        let json = exit.eventJSON(gateway: "gw", emitted: 1_051)
        guard case .object(let o) = json, case .object(let position)? = o["position"] else {
            Issue.record("not an object")
            return
        }
        #expect(o["inferred"] == .bool(true) && o["reason"] == .string("moved") && position["accuracy"] == nil)
        let ordinary = FenceNotification(
            id: "x", visit: "x", trigger: "t", layer: "l", fenceID: "f", fenceName: nil, fenceProperties: [:],
            device: "d", type: .enter, reason: nil, position: Kit.update(east: 0, time: 1), distance: 0,
            dwellSeconds: nil, message: nil, delivery: .local)
        guard case .object(let plain) = ordinary.eventJSON(gateway: "gw", emitted: 2) else {
            Issue.record("not an object")
            return
        }
        #expect(plain["inferred"] == nil)
        #expect(m.stays.isEmpty && m.pendingCount == 0)
    }

    @Test func offByDefaultAndBeyondCrossingMaxGap() throws {
        var off = try Self.monitor("[{name: 'gate'}]")
        #expect(Self.jump(&off).isEmpty)
        var far = try Self.monitor("[{name: 'gate', crossings: true}]")
        #expect(Self.jump(&far, gap: 301).isEmpty)  // default crossingMaxGap 300
        var atLimit = try Self.monitor("[{name: 'gate', crossings: true}]")
        #expect(Self.jump(&atLimit, gap: 300).count == 2)
        var wide = try Self.monitor("[{name: 'gate', crossings: true, crossingMaxGap: 600}]")
        let notes = Self.jump(&wide, gap: 500)
        #expect(notes.count == 2)
        #expect(abs((notes.last?.dwellSeconds ?? 0) - 100) < 0.002)
    }

    @Test func ruleChoosesWhatIsPublished() throws {
        var enterOnly = try Self.monitor("[{name: 'gate', crossings: true, rule: 'enter'}]")
        #expect(Self.jump(&enterOnly).map(\.type) == [.enter])
        var exitOnly = try Self.monitor("[{name: 'gate', crossings: true, rule: 'exit'}]")
        #expect(Self.jump(&exitOnly).map(\.type) == [.exit])
    }

    @Test func enterAfterLongerThanTheStayInfersNothing() throws {
        var long = try Self.monitor("[{name: 'gate', crossings: true, enterAfter: 10.5, dwell: 1}]")
        #expect(Self.jump(&long).isEmpty)
        #expect(long.stays.isEmpty && long.pendingCount == 0)
        // 10 s stay, enterAfter 9: published; dwell is never inferred.
        var short = try Self.monitor("[{name: 'gate', crossings: true, enterAfter: 9, dwell: 1}]")
        #expect(Self.jump(&short).map(\.type) == [.enter, .exit])
    }

    @Test func concaveFenceIsOneVisitFromFirstEntryToLastExit() throws {
        // A U open to the north: arms x -100...-80 and -20...0, joined below y = -20.
        let ring = [
            Kit.at(east: -100, north: -50), Kit.at(east: 0, north: -50), Kit.at(east: 0, north: 50),
            Kit.at(east: -20, north: 50), Kit.at(east: -20, north: -20), Kit.at(east: -80, north: -20),
            Kit.at(east: -80, north: 50), Kit.at(east: -100, north: 50), Kit.at(east: -100, north: -50),
        ]
        let u = Fence(id: "u", layer: "zones", name: "U", geometry: .polygons([Polygon(exterior: ring)]))
        var m = try Self.monitor("[{name: 'gate', crossings: true}]", fences: [u])
        _ = m.handle(Kit.update(east: -300, north: 20, time: 0), receivedAt: 0)
        let notes = m.handle(Kit.update(east: 200, north: 20, time: 50), receivedAt: 1).notifications
        #expect(notes.map(\.type) == [.enter, .exit])
        #expect(abs((notes.last?.dwellSeconds ?? 0) - 10) < 0.002)
        #expect(abs(Self.metres(notes[0].position.coordinate).east + 100) < 0.05)
    }

    @Test func outsideThenInsideIsAnOrdinaryEnter() throws {
        var m = try Self.monitor("[{name: 'gate', crossings: true}]")
        _ = m.handle(Kit.update(east: -300, time: 0), receivedAt: 0)
        let notes = m.handle(Kit.update(east: -50, time: 25), receivedAt: 1).notifications
        #expect(notes.count == 1)
        #expect(notes.first?.type == .enter && notes.first?.inferred == false && notes.first?.position.time == 25)
        // ... and inside then outside an ordinary exit.
        let out = m.handle(Kit.update(east: 300, time: 60), receivedAt: 2).notifications
        #expect(out.map(\.type) == [.exit] && out.first?.inferred == false && out.first?.position.time == 60)
    }

    @Test func aPendingConfirmationIsLeftToTheOrdinaryRules() throws {
        // A inside with an enter pending (enterAfter): B outside cancels it; nothing is inferred.
        var pendingEnter = try Self.monitor("[{name: 'gate', crossings: true, enterAfter: 30}]")
        _ = pendingEnter.handle(Kit.update(east: -300, time: 0), receivedAt: 0)
        _ = pendingEnter.handle(Kit.update(east: -50, time: 10), receivedAt: 1)
        #expect(pendingEnter.pendingCount == 1)
        #expect(pendingEnter.handle(Kit.update(east: 300, time: 40), receivedAt: 2).notifications.isEmpty)
        #expect(pendingEnter.pendingCount == 0 && pendingEnter.stays.isEmpty)
        // A outside with an exit pending (exitAfter): the visit goes on, so B far beyond the
        // fence on the other side confirms that exit (at A) instead of inferring a new stay.
        var pendingExit = try Self.monitor("[{name: 'gate', crossings: true, exitAfter: 20}]")
        _ = pendingExit.handle(Kit.update(east: -50, time: 0), receivedAt: 0)
        _ = pendingExit.handle(Kit.update(east: -150, time: 10), receivedAt: 1)
        #expect(pendingExit.pendingCount == 1)
        let notes = pendingExit.handle(Kit.update(east: 200, time: 40), receivedAt: 2).notifications
        #expect(notes.map(\.type) == [.exit] && notes.first?.inferred == false && notes.first?.position.time == 10)
        // A inside the exit margin (still inside): B beyond is an ordinary exit.
        var margin = try Self.monitor("[{name: 'gate', crossings: true, exitMargin: 30}]")
        _ = margin.handle(Kit.update(east: -50, time: 0), receivedAt: 0)
        #expect(margin.handle(Kit.update(east: -120, time: 10), receivedAt: 1).notifications.isEmpty)
        #expect(margin.stays.count == 1)
        let beyond = margin.handle(Kit.update(east: 300, time: 40), receivedAt: 2).notifications
        #expect(beyond.map(\.type) == [.exit] && beyond.first?.inferred == false)
    }

    @Test func accuracyCircleOfBEnteringIsAnOrdinaryEnter() throws {
        let triggers = "[{name: 'gate', crossings: true, accuracyMode: 'useGeometryWithAccuracy'}]"
        var m = try Self.monitor(triggers)
        _ = m.handle(Kit.update(east: -300, time: 0), receivedAt: 0)
        let notes = m.handle(Kit.update(east: 10, time: 31, accuracy: 15), receivedAt: 1).notifications
        #expect(notes.map(\.type) == [.enter] && notes.first?.inferred == false)
        // Points, not circles: far circles off the segment change nothing.
        var n = try Self.monitor(triggers)
        _ = n.handle(Kit.update(east: -300, time: 0, accuracy: 50), receivedAt: 0)
        #expect(n.handle(Kit.update(east: 200, time: 50, accuracy: 50), receivedAt: 1).notifications.map(\.type) == [.enter, .exit])
    }

    @Test func severalFencesInTimeOrderAndBufferedPoints() throws {
        let fences = [
            Kit.box("near", west: -200, east: -180, south: -10, north: 10),
            Kit.point("stop", layer: "zones", east: 100, north: 10, buffer: 15),
            Kit.zone,
        ]
        var m = try Self.monitor("[{name: 'gate', crossings: true}]", fences: fences)
        _ = m.handle(Kit.update(east: -300, time: 0), receivedAt: 0)
        let notes = m.handle(Kit.update(east: 200, time: 50), receivedAt: 1).notifications
        #expect(notes.map(\.fenceID) == ["near", "near", "z1", "z1", "stop", "stop"])
        #expect(notes.map(\.position.time) == notes.map(\.position.time).sorted())
        // The point's buffered circle (15 m) meets y = 0 where |x - 100| = sqrt(15² - 10²).
        let half = (15.0 * 15 - 100).squareRoot()
        #expect(abs(Self.metres(notes[4].position.coordinate).east - (100 - half)) < 0.05)
        #expect(abs(Self.metres(notes[5].position.coordinate).east - (100 + half)) < 0.05)
        #expect(abs((notes[5].dwellSeconds ?? 0) - 2 * half / 10) < 0.002)
    }

    @Test func idsAreStableAndARestartBetweenTheFixesStillInfers() throws {
        func run() throws -> [String] {
            var m = try Self.monitor("[{name: 'gate', crossings: true}]")
            return Self.jump(&m).map(\.id)
        }
        let first = try run()
        let second = try run()
        #expect(first.count == 2 && first == second)
        // The previous fix is the persisted last accepted update.
        let snapshot = try Kit.snapshot(triggers: "[{name: 'gate', crossings: true}]")
        var m = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        _ = m.handle(Kit.update(east: -300, time: 1_000), receivedAt: 0)
        var (restored, exits) = try DeviceMonitor.restore(from: m.serialized(), snapshot: snapshot, now: 5)
        #expect(exits.isEmpty)
        #expect(restored.handle(Kit.update(east: 200, time: 1_050), receivedAt: 6).notifications.map(\.id) == first)
    }

    @Test func configErrorsNameTheKeyPath() throws {
        let layers = [FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone])]
        let issues = try EngineTriggerTests.issues("[{name: 'g', crossings: 'yes', crossingMaxGap: 0}]", layers: layers)
        let text = issues.map(\.description)
        #expect(text.contains(#"triggers[0] ("g"): crossings: expected true or false, found "yes""#))
        #expect(text.contains(#"triggers[0] ("g"): crossingMaxGap: expected a number of seconds > 0, found 0"#))
        #expect(issues.first { $0.key == "crossingMaxGap" }?.path == [.key("triggers"), .index(0), .key("crossingMaxGap")])
        let layer = FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone], defaults: ["crossings": .number(1)])
        #expect(
            try EngineTriggerTests.issues(nil, layers: [layer]).map(\.description) == [
                #"fences/zones.geojson: geotrigger.crossings: expected true or false, found 1"#
            ])
        // Layer defaults apply.
        let on = FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone], defaults: ["crossings": .bool(true)])
        var m = DeviceMonitor(device: "workers/alice", snapshot: try EngineSnapshot(layers: [on], configTriggers: nil), now: 0)
        #expect(Self.jump(&m).count == 2)
    }
}
