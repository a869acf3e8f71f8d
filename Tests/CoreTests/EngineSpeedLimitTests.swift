import Foundation
import Testing
@testable import GeotriggerCore

/// The `speedLimit` trigger key through ``DeviceMonitor`` (docs/trips.md "Speed limits"):
/// `overspeed` / `speedOk` for visits of its fences, by fix time.
@Suite struct EngineSpeedLimitTests {
    typealias Kit = EngineTestKit
    static let t0 = 1_796_040_000.0

    /// A 3 km road east of the origin, 100 m wide.
    static let road = Kit.box("road", name: "Harbour Road", west: 0, east: 3000, south: -50, north: 50)

    /// A fix `east` metres from the origin at `t0 + second`; `speed`: reported with it.
    static func fix(east: Double, north: Double = 0, second: Double, speed: Double? = nil, accuracy: Double? = nil) -> LocationUpdate {
        let c = Kit.at(east: east, north: north)
        return LocationUpdate(device: "vans/v1", lat: c.lat, lon: c.lon, time: t0 + second, accuracy: accuracy, speed: speed)
    }

    /// One fix a second driving east from `start` metres at `speeds[k]` m/s during second `k`
    /// (reported with each fix when `reported`), from `second`.
    static func drive(
        _ speeds: [Double], from start: Double, second: Double = 0, reported: Bool, accuracy: Double? = nil
    ) -> [LocationUpdate] {
        var x = start
        var fixes = [fix(east: x, second: second, speed: reported ? speeds.first : nil, accuracy: accuracy)]
        for (k, speed) in speeds.enumerated() {
            x += speed
            fixes.append(fix(east: x, second: second + Double(k + 1), speed: reported ? speed : nil, accuracy: accuracy))
        }
        return fixes
    }

    static func monitor(_ fences: [Fence] = [road], triggers: String) throws -> DeviceMonitor {
        DeviceMonitor(device: "vans/v1", snapshot: try Kit.snapshot(fences, triggers: triggers), now: 0)
    }

    /// A van at 20 m/s through a fence with `speedLimit: 14` for a minute, then 10 m/s for a
    /// minute: one `overspeed` 10 s of fix time after its first fast fix inside, one `speedOk`
    /// 10 s after its first slow one; the same whether the van reports its speed or the gateway
    /// measures it between fixes (4 m accuracy: 20 and 10 m a second are both more than both
    /// accuracies). They carry the visit of the enter, the fence, the speed and the limit, and
    /// the trigger's message.
    @Test(arguments: [true, false]) func twentyMetresASecondThenTenAgainstFourteen(reported: Bool) throws {
        var m = try Self.monitor(triggers: """
            [{name: 'roads', speedLimit: 14, message: "$fencenotificationtype + ' on ' + $fencefeature.name"}]
            """)
        // From 90 m before the road: the first fix inside is at 5 s (10 m in).
        let fixes = Self.drive(Array(repeating: 20, count: 60) + Array(repeating: 10, count: 60), from: -90, reported: reported, accuracy: 4)
        let events = EngineScenarioTests.run(&m, fixes)
        #expect(events.map(\.type) == [.enter, .overspeed, .speedOk])
        let (enter, overspeed, speedOk) = (events[0], events[1], events[2])
        #expect(enter.position.time == Self.t0 + 5)
        // The first fix inside reads 20 m/s (measured from the fix before it, outside): the hold
        // runs from 5 s to 15 s. The first slow reading is at 61 s, so speedOk at 71 s.
        #expect(overspeed.position.time == Self.t0 + 15 && overspeed.decidedAt == Self.t0 + 15)
        #expect(speedOk.position.time == Self.t0 + 71)
        #expect(overspeed.visit == enter.id && speedOk.visit == enter.id)
        #expect(overspeed.id == EventID.make(trigger: "roads", layer: "zones", fence: "road", device: "vans/v1", type: "overspeed", time: Self.t0 + 15))
        #expect(overspeed.trigger == "roads" && overspeed.fenceID == "road" && overspeed.fenceName == "Harbour Road")
        #expect(overspeed.speed.map { abs($0 - 20) < 0.01 } == true && overspeed.speedLimit == 14)
        #expect(speedOk.speed.map { abs($0 - 10) < 0.01 } == true && speedOk.speedLimit == 14)
        #expect(overspeed.reason == nil && overspeed.dwellSeconds == nil && overspeed.distance < 0)
        #expect(overspeed.message?.message == "overspeed on Harbour Road" && speedOk.message?.message == "speedOk on Harbour Road")
        #expect(m.overspeedStays.isEmpty)
    }

    /// `{"property": "maxspeed"}`: "50 mph" is 22.35 m/s, 80 (a number: km/h) 22.22 m/s, and
    /// a fence whose value is not a speed ("none") or that has none gives no limit. At 25 m/s
    /// through all four, only the first two give `overspeed`; each ends with its visit.
    @Test func aFencePropertyInKilometresPerHourOrWithAUnit() throws {
        let fences = [
            Kit.box("mph", west: 0, east: 1000, south: -50, north: 50, properties: ["maxspeed": .string("50 mph")]),
            Kit.box("kmh", west: 2000, east: 3000, south: -50, north: 50, properties: ["maxspeed": .number(80)]),
            Kit.box("none", west: 4000, east: 5000, south: -50, north: 50, properties: ["maxspeed": .string("none")]),
            Kit.box("bare", west: 6000, east: 7000, south: -50, north: 50),
        ]
        var m = try Self.monitor(fences, triggers: "[{name: 'roads', speedLimit: {property: 'maxspeed'}}]")
        let events = EngineScenarioTests.run(&m, Self.drive(Array(repeating: 25, count: 300), from: -110, reported: false))
        #expect(events.map { "\($0.type.rawValue) \($0.fenceID)" } == [
            "enter mph", "overspeed mph", "exit mph", "enter kmh", "overspeed kmh", "exit kmh",
            "enter none", "exit none", "enter bare", "exit bare",
        ])
        let limits = events.filter { $0.type == .overspeed }.compactMap(\.speedLimit)
        #expect(limits.count == 2 && abs(limits[0] - 22.352) < 1e-9 && abs(limits[1] - 80 / 3.6) < 1e-9)
    }

    /// A parked van inside the fence, its fixes scattered up to 8 m around it with 10 m accuracy,
    /// one a second for an hour, against a 2 m/s limit: jitter is never a speed, so nothing
    /// but the enter.
    @Test func aParkedVansJitterIsNotSpeed() throws {
        var m = try Self.monitor(triggers: "[{name: 'yard', speedLimit: 2}]")
        var random = SeededRandom(seed: 52)
        var fixes: [LocationUpdate] = []
        var widest = 0.0
        var last = (0.0, 0.0)
        for second in 0..<3600 {
            // Uniform in a disc of 8 m around (500, 0).
            let r = 8 * random.unit().squareRoot(), a = random.within(0, 2 * .pi)
            let p = (r * cos(a), r * sin(a))
            if second > 0 { widest = max(widest, ((p.0 - last.0) * (p.0 - last.0) + (p.1 - last.1) * (p.1 - last.1)).squareRoot()) }
            last = p
            fixes.append(Self.fix(east: 500 + p.0, north: p.1, second: Double(second), accuracy: 10))
        }
        let events = EngineScenarioTests.run(&m, fixes)
        #expect(events.map(\.type) == [.enter])
        // Consecutive fixes were at times more than 14 m apart: 14 m/s, were jitter speed.
        #expect(widest > 14)
        #expect(m.entries.first?.speedTracks.first?.watch.lastSpeed == nil)
    }

    /// Leaving the fence while overspeed: the exit ends the visit and its watch, with no
    /// `speedOk`; the next visit begins with a new watch, so it is `overspeed` again only after
    /// 10 s fast inside it, under its own visit id.
    @Test func leavingWhileOverspeedEndsTheWatchWithTheVisit() throws {
        let short = Kit.box("bridge", west: 0, east: 500, south: -50, north: 50)
        var m = try Self.monitor([short], triggers: "[{name: 'bridges', speedLimit: 14}]")
        // East at 20 m/s across the bridge (0 to 500 m), on to 700 m, then back west across it.
        let out = Self.drive(Array(repeating: 20, count: 40), from: -90, reported: true)
        var back: [LocationUpdate] = []
        for k in 1...40 { back.append(Self.fix(east: 710 - 20 * Double(k), second: 40 + Double(k), speed: 20)) }
        let events = EngineScenarioTests.run(&m, out + back)
        #expect(events.map(\.type) == [.enter, .overspeed, .exit, .enter, .overspeed, .exit])
        #expect(events[1].visit == events[0].id && events[4].visit == events[3].id && events[0].id != events[3].id)
        // Back in at 51 s (710 - 200 = 510: out; 490 at 51 s): the new watch's hold runs from there.
        #expect(events[3].position.time == Self.t0 + 51 && events[4].position.time == Self.t0 + 61)
        #expect(m.isIdle && m.overspeedStays.isEmpty)
    }

    /// `rule` applies as to a visit: `enter` publishes `overspeed` (the start) but not
    /// `speedOk`, `exit` the reverse; the watch decides both either way, each a decision a
    /// restart must not lose.
    @Test func ruleEnterPublishesOverspeedAndRuleExitSpeedOk() throws {
        let speeds = Array(repeating: 20.0, count: 30) + Array(repeating: 10, count: 30)
        for (rule, expected) in [("enter", [NotificationType.enter, .overspeed]), ("exit", [.speedOk])] {
            var m = try Self.monitor(triggers: "[{name: 'roads', rule: '\(rule)', speedLimit: 14}]")
            var decisions: [UInt32] = []
            var events: [FenceNotification] = []
            for fix in Self.drive(speeds, from: -90, reported: true) {
                events += m.handle(fix, receivedAt: fix.time).notifications
                decisions.append(m.decisions)
            }
            #expect(events.map(\.type) == expected, "rule \(rule)")
            // The enter, the trigger knowing the device, the overspeed and the speedOk.
            #expect(decisions.last == 4, "rule \(rule)")
        }
    }

    /// The overspeed is persisted with its event (a restart neither repeats it nor loses the
    /// `speedOk`): the state says version 2 only while a visit is overspeed; without one it is
    /// version 1 byte for byte. A reload that takes the limit away ends an overspeed silently.
    @Test func anOverspeedSurvivesARestartAndEndsWithItsLimit() throws {
        let triggers = "[{name: 'roads', speedLimit: 14}]"
        var m = try Self.monitor(triggers: triggers)
        let fixes = Self.drive(Array(repeating: 20, count: 40) + Array(repeating: 10, count: 40), from: -90, reported: false)
        let before = EngineScenarioTests.run(&m, Array(fixes[0..<10]))
        #expect(before.map(\.type) == [.enter])
        #expect(Array(m.serialized().prefix(4)) == Array("GTM1".utf8))
        var events = EngineScenarioTests.run(&m, Array(fixes[10..<30]))
        #expect(events.map(\.type) == [.overspeed])
        let bytes = m.serialized()
        #expect(Array(bytes.prefix(4)) == Array("GTM2".utf8))
        // A restart: the same snapshot's triggers, built again.
        var (restored, removed) = try DeviceMonitor.restore(from: bytes, snapshot: try Kit.snapshot([Self.road], triggers: triggers), now: 0)
        #expect(removed.isEmpty && restored.overspeedStays.map(\.fence) == ["road"])
        #expect(restored.serialized() == bytes)
        events = EngineScenarioTests.run(&restored, Array(fixes[30...]))
        #expect(events.map(\.type) == [.speedOk])
        #expect(events.first?.position.time == Self.t0 + 51)  // first slow fix at 41 s
        #expect(Array(restored.serialized().prefix(4)) == Array("GTM1".utf8))

        // A reload without the limit while overspeed: no event, the state changed.
        var fast = try Self.monitor(triggers: triggers)
        _ = EngineScenarioTests.run(&fast, Array(fixes[0..<30]))
        #expect(fast.overspeedStays.count == 1)
        var changed = false
        let notes = fast.adopt(try Kit.snapshot([Self.road], triggers: "[{name: 'roads'}]"), now: 0, stateChanged: &changed)
        #expect(notes.isEmpty && changed && fast.overspeedStays.isEmpty)
        #expect(fast.entries.allSatisfy { $0.speedTracks.isEmpty })
    }

    /// A trigger without `speedLimit` keeps no speed watch: its visits' entries hold an empty
    /// array (nothing allocated), and the monitor never looks at speeds.
    @Test func aTriggerWithoutSpeedLimitWatchesNothing() throws {
        var m = try Self.monitor(triggers: "[{name: 'roads'}]")
        let events = EngineScenarioTests.run(&m, Self.drive(Array(repeating: 40, count: 60), from: -90, reported: true))
        #expect(events.map(\.type) == [.enter])
        #expect(!m.speedLimitsApply)
        #expect(m.entries.count == 1 && m.entries[0].speedTracks.isEmpty && m.entries[0].speedTracks.capacity == 0)
    }
}
