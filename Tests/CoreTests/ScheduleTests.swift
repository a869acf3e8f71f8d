import Foundation
import Testing
@testable import GeotriggerCore

/// Schedule windows (docs/schedules.md) and the `schedule` trigger key.
@Suite struct ScheduleTests {
    typealias Kit = EngineTestKit

    static func at(_ text: String) throws -> Double { try #require(ISO8601Time.parse(text)) }

    /// Zones from the system's tzdata, as the gateway gives them.
    static let zones = TimeZoneSource { name throws(TimeZoneError) in
        guard let data = FileManager.default.contents(atPath: "/usr/share/zoneinfo/" + name) else {
            throw TimeZoneError("unknown time zone \"\(name)\"")
        }
        return try TimeZoneRules(name: name, tzif: [UInt8](data))
    }

    /// The schedule of `text` (a JSON5 schedule value), or the problems found.
    static func schedule(_ text: String) throws -> (Schedule?, [String]) {
        var problems: [String] = []
        let value = try Kit.json5(text)
        let schedule = Schedule.parse(value, zones: zones) { path, message in
            problems.append("\(([JSONPathComponent.key("schedule")] + path).pathString): \(message)")
        }
        return (schedule, problems)
    }

    @Test func windowPastMidnightBelongsToTheDayItStarts() throws {
        let (parsed, problems) = try Self.schedule("{windows: [{days: ['fri'], from: '22:00', to: '06:00'}]}")
        #expect(problems == [])
        let schedule = try #require(parsed)
        // 2026-04-10 is a Friday; the zone is UTC by default.
        #expect(!schedule.contains(try Self.at("2026-04-10T21:59:00Z")))
        #expect(schedule.contains(try Self.at("2026-04-10T22:00:00Z")))
        #expect(schedule.contains(try Self.at("2026-04-11T05:59:00Z")))  // Saturday 05:59
        #expect(!schedule.contains(try Self.at("2026-04-11T06:00:00Z")))  // Saturday 06:00
        #expect(!schedule.contains(try Self.at("2026-04-12T01:00:00Z")))  // Sunday 01:00: sat is not listed
        #expect(!schedule.contains(try Self.at("2026-04-09T23:00:00Z")))  // Thursday 23:00
        let (withSaturday, _) = try Self.schedule("{windows: [{days: ['fri', 'sat'], from: '22:00', to: '06:00'}]}")
        #expect(try #require(withSaturday).contains(try Self.at("2026-04-12T01:00:00Z")))
    }

    @Test func windowInAZoneUsesItsLocalTime() throws {
        let (parsed, problems) = try Self.schedule(
            "{timezone: 'Australia/Melbourne', windows: [{days: ['mon','tue','wed','thu','fri'], from: '06:00', to: '18:30'}]}")
        #expect(problems == [])
        let schedule = try #require(parsed)
        // Monday 2026-07-06 06:00 AEST is Sunday 20:00Z; 18:30 AEST is 08:30Z.
        #expect(!schedule.contains(try Self.at("2026-07-05T19:59:59Z")))
        #expect(schedule.contains(try Self.at("2026-07-05T20:00:00Z")))
        #expect(schedule.contains(try Self.at("2026-07-06T08:29:59Z")))
        #expect(!schedule.contains(try Self.at("2026-07-06T08:30:00Z")))
        // Saturday 2026-07-11 10:00 AEST: not a listed day.
        #expect(!schedule.contains(try Self.at("2026-07-11T00:00:00Z")))
    }

    @Test func defaultsAndEndOfDay() throws {
        let (allDay, _) = try Self.schedule("{windows: [{days: ['sun']}]}")
        let s = try #require(allDay)
        #expect(try s.contains(Self.at("2026-04-12T00:00:00Z")) && s.contains(Self.at("2026-04-12T23:59:59Z")))
        #expect(try !s.contains(Self.at("2026-04-13T00:00:00Z")) && !s.contains(Self.at("2026-04-11T23:59:59Z")))
        let (evening, _) = try Self.schedule("{windows: [{from: '18:00', to: '24:00'}]}")
        let e = try #require(evening)
        #expect(try e.contains(Self.at("2026-04-13T23:59:59Z")) && !e.contains(Self.at("2026-04-14T00:00:00Z")))
        // from = to: 24 hours from `from`.
        let (full, _) = try Self.schedule("{windows: [{days: ['mon'], from: '12:00', to: '12:00'}]}")
        let f = try #require(full)
        #expect(try f.contains(Self.at("2026-04-14T11:59:59Z")) && !f.contains(Self.at("2026-04-14T12:00:00Z")))
        #expect(!f.contains(try Self.at("2026-04-13T11:59:59Z")))
    }

    @Test func mistakesNameTheirKeyPath() throws {
        let (_, problems) = try Self.schedule(
            "{timezone: 'Mars/Base', windows: [{days: ['mon', 'funday'], from: '25:00', to: '7:00', until: 1}]}")
        #expect(problems == [
            #"schedule.timezone: unknown time zone "Mars/Base""#,
            #"schedule.windows[0].days[1]: unknown day "funday"; expected one of mon, tue, wed, thu, fri, sat, sun"#,
            #"schedule.windows[0].from: expected a local time "HH:MM" from 00:00 to 23:59, found "25:00""#,
            #"schedule.windows[0].to: expected a local time "HH:MM" from 00:00 to 24:00, found "7:00""#,
            "schedule.windows[0].until: unknown key; expected one of days, from, to",
        ])
        let empty = try Self.schedule("{windows: []}").1
        #expect(empty == [
            "schedule.windows: expected at least one window {days, from, to} (for always, leave schedule out)"
        ])
        let missing = try Self.schedule("{timezone: 'UTC'}").1
        #expect(missing == ["schedule: missing key windows (an array of {days, from, to})"])
        #expect(try Self.schedule("{windows: [{from: '24:00'}]}").1.count == 1)
        #expect(try Self.schedule("{windows: [{days: []}]}").1.count == 1)
        #expect(try Self.schedule("'always'").1.count == 1)
    }

    @Test func triggerAndLayerDefaultsCarryTheSchedule() throws {
        let triggers = try Kit.json5("[{name: 'late', schedule: {windows: [{from: '22:00', to: '06:00'}]}}, {name: 'plain'}]")
        let layerDefaults: JSONObject = ["schedule": try Kit.json5("{timezone: 'Asia/Kolkata', windows: [{days: ['sat']}]}")]
        let layer = FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone], defaults: layerDefaults)
        let snapshot = try EngineSnapshot(layers: [layer], configTriggers: triggers, zones: Self.zones)
        let settings = snapshot.settings
        #expect(settings.map(\.trigger) == ["late", "plain"])
        #expect(settings[0].schedule?.zone.name == "UTC")
        #expect(settings[1].schedule?.zone.name == "Asia/Kolkata")
        // Without a source of zones, a named zone is a trigger error at its key path.
        #expect(throws: TriggerError.self) { try EngineSnapshot(layers: [layer], configTriggers: triggers) }
        let bad = try Kit.json5("[{name: 'x', schedule: {timezone: 'Nowhere/Land', windows: [{}]}}]")
        do throws(TriggerError) {
            _ = try EngineSnapshot(layers: [layer], configTriggers: bad, zones: Self.zones)
            Issue.record("expected an error")
        } catch {
            #expect(error.issues.map { $0.path.pathString }.contains("triggers[0].schedule.timezone"))
        }
    }

    @Test func enterOutsideTheWindowIsDroppedButItsExitInsideCarriesTheVisit() throws {
        let snapshot = try Kit.snapshot(triggers: "[{name: 'day', dwell: 600, staleAfter: 900, schedule: {windows: [{from: '08:00', to: '17:00'}]}}]")
        var monitor = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        let enterTime = try Self.at("2026-04-13T07:55:00Z")
        // The enter at 07:55 is decided (state kept) but outside the window.
        let enter = monitor.handle(Kit.update(east: -20, time: enterTime), receivedAt: 0).notifications
        #expect(enter.map(\.type) == [.enter])
        let (keptEnter, outsideEnter) = enter.inSchedule(clock: enterTime)
        #expect(keptEnter.isEmpty && outsideEnter == 1)
        #expect(monitor.stays.count == 1)
        // The dwell is decided at enter + 600 s = 08:05: inside, although its update came later.
        let dwell = monitor.handle(Kit.update(east: -20, time: enterTime + 700), receivedAt: 700).notifications
        #expect(dwell.map(\.type) == [.dwell])
        #expect(dwell.inSchedule(clock: 0).kept.count == 1)
        // The exit at 09:00 is inside: published, with the dropped enter's visit and the whole stay.
        let exitTime = try Self.at("2026-04-13T09:00:00Z")
        let exit = monitor.handle(Kit.update(east: 30, time: exitTime), receivedAt: 800).notifications
        let (kept, outside) = exit.inSchedule(clock: 0)
        #expect(outside == 0)
        let published = try #require(kept.first)
        #expect(published.type == .exit && published.visit == enter[0].id && published.visit == dwell[0].visit)
        #expect(published.dwellSeconds == exitTime - enterTime)
        #expect(published.decidedAt == exitTime)
    }

    @Test func staleExitIsJudgedByTheGatewayClock() throws {
        let snapshot = try Kit.snapshot(triggers: "[{name: 'day', staleAfter: 60, schedule: {windows: [{from: '08:00', to: '17:00'}]}}]")
        var monitor = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        // Entered at 10:00 (inside), then silence: the stale exit's fix-time position is 10:00.
        let enter = monitor.handle(Kit.update(east: -20, time: try Self.at("2026-04-13T10:00:00Z")), receivedAt: 0).notifications
        #expect(enter.inSchedule(clock: 0).kept.count == 1)
        let stale = monitor.advance(to: 61)
        #expect(stale.first?.reason == .stale)
        #expect(stale.inSchedule(clock: try Self.at("2026-04-13T18:00:00Z")).outside == 1)
        #expect(stale.inSchedule(clock: try Self.at("2026-04-13T16:00:00Z")).kept.count == 1)
        // Without a schedule nothing is ever dropped.
        var plain = DeviceMonitor(device: "workers/bob", snapshot: try Kit.snapshot(triggers: "[{name: 'p'}]"), now: 0)
        let notes = plain.handle(Kit.update("workers/bob", east: -20, time: try Self.at("2026-04-13T03:00:00Z")), receivedAt: 0).notifications
        #expect(notes.count == 1 && notes.inSchedule(clock: 0).kept == notes)
    }
}
