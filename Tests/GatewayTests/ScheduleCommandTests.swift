import Foundation
import Testing
import TestSupport
@testable import Gateway
import GeotriggerCore

/// `schedule` through the commands: config errors in `check`, `replay` by fix time (the same
/// filter as `serve`, `inSchedule`), `locate`'s `inSchedule`.
@Suite(.serialized) struct ScheduleCommandTests {
    let track = repositoryRoot + "/Tests/Fixtures/replay/jitter.jsonl"

    /// A fresh folder holding `gw.json5` with `text`; returns the config path.
    func config(_ text: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("schedule-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/gw.json5"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    func remove(_ config: String) { try? FileManager.default.removeItem(atPath: (config as NSString).deletingLastPathComponent) }

    func events(_ arguments: [String]) throws -> (events: [[String: Any]], err: String) {
        let r = try runGeotrigger(["replay", track, "--json"] + arguments)
        #expect(r.status == 0, "\(r.err)")
        let events = try r.out.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        return (events, r.err)
    }

    @Test func checkListsEveryScheduleMistakeWithItsPosition() throws {
        let file = try config("""
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [
                { name: "a", fences: ["garden-sections"],
                  schedule: { timezone: "Mars/Base", windows: [{ days: ["mon", "someday"], from: "7:00", to: "25:00" }] } },
                { name: "b", fences: ["garden-sections"], schedule: { windows: [] } },
              ] }
            """)
        defer { remove(file) }
        let report = CheckCommand.check(configFile: file, fencesFolder: nil)
        #expect(report.errors == [
            #"\#(file):4:19: triggers[0] ("a"): schedule.timezone: unknown time zone "Mars/Base" (no /usr/share/zoneinfo/Mars/Base)"#,
            #"\#(file):4:68: triggers[0] ("a"): schedule.windows[0].days[1]: unknown day "someday"; expected one of mon, tue, wed, thu, fri, sat, sun"#,
            #"\#(file):4:80: triggers[0] ("a"): schedule.windows[0].from: expected a local time "HH:MM" from 00:00 to 23:59, found "7:00""#,
            #"\#(file):4:94: triggers[0] ("a"): schedule.windows[0].to: expected a local time "HH:MM" from 00:00 to 24:00, found "25:00""#,
            #"\#(file):5:59: triggers[1] ("b"): schedule.windows: expected at least one window {days, from, to} (for always, leave schedule out)"#,
        ])
        #expect(report.summary == "5 errors found")
        let r = try runGeotrigger(["check", "--config", file])
        #expect(r.status == 2 && r.err.contains("Mars/Base"))
    }

    @Test func zoneNamesCannotLeaveTheZoneFolder() throws {
        for name in ["../../etc/passwd", "/etc/localtime", "Europe/../../x", ""] {
            #expect(throws: TimeZoneError.self, "\(name)") { try SystemTimeZones.source.rules(named: name) }
        }
        #expect(throws: TimeZoneError.self) { try SystemTimeZones.source.rules(named: "Australia") }  // a folder
        #expect(try SystemTimeZones.source.rules(named: "Europe/Berlin").name == "Europe/Berlin")
    }

    @Test func replayDropsTheEnterOutsideTheWindowAndKeepsItsVisitOnTheExit() throws {
        // Without a schedule: enter desert 12:02:00Z, exit desert and enter meadow 12:03:00Z.
        let plainConfig = try config("""
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "garden-sections", fences: ["garden-sections"], enterAfter: 30, exitAfter: 30 } ] }
            """)
        defer { remove(plainConfig) }
        let plain = try events(["--config", plainConfig]).events
        #expect(plain.map { $0["type"] as! String } == ["enter", "exit", "enter"])
        // 2026-11-30 is a Monday; 12:02Z is 23:02 AEDT, 12:03Z is 23:03 AEDT.
        let scheduled = try config("""
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "garden-sections", fences: ["garden-sections"], enterAfter: 30, exitAfter: 30,
                            schedule: { timezone: "Australia/Melbourne", windows: [{ days: ["mon"], from: "23:03", to: "06:00" }] } } ] }
            """)
        defer { remove(scheduled) }
        let (kept, err) = try events(["--config", scheduled])
        #expect(kept.map { $0["type"] as! String } == ["exit", "enter"])
        #expect(kept.first?["visit"] as? String == plain[0]["id"] as? String)
        #expect(kept.first?["dwellSeconds"] as? Double == 60)
        #expect(kept.map { $0["id"] as! String } == plain[1...].map { $0["id"] as! String })
        #expect(err.contains("2 events (1 outside their schedule, not shown)"), "\(err)")
        // Past 06:00 on Tuesday nothing is left.
        let never = try config("""
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "garden-sections", fences: ["garden-sections"],
                            schedule: { timezone: "Australia/Melbourne", windows: [{ days: ["tue"], from: "06:00", to: "23:00" }] } } ] }
            """)
        defer { remove(never) }
        let none = try events(["--config", never])
        #expect(none.events.isEmpty && none.err.contains("0 events ("), "\(none.err)")
    }

    @Test func locateTellsWhetherEachTriggerIsInScheduleNow() throws {
        // A UTC window two hours from now, for one hour: outside now (the test takes seconds).
        let hour = Int(Date().timeIntervalSince1970) / 3600 % 24
        func hh(_ h: Int) -> String { String(format: "%02d:00", h % 24) }
        let file = try config("""
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "later", fences: ["garden-sections"], schedule: { windows: [{ from: "\(hh(hour + 2))", to: "\(hh(hour + 3))" }] } },
                          { name: "always", fences: ["garden-sections"] } ] }
            """)
        defer { remove(file) }
        let r = try runGeotrigger(["locate", "34.4561", "-119.7067", "--json", "--config", file])
        #expect(r.status == 0, "\(r.err)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
        #expect(!rows.isEmpty)
        for row in rows {
            #expect(row["inSchedule"] as? Bool == (row["trigger"] as? String == "always"), "\(row)")
            #expect(row["inside"] is Bool && row["distance"] is Double)
        }
        let text = try runGeotrigger(["locate", "34.4561", "-119.7067", "--config", file])
        let lines = text.out.split(separator: "\n")
        #expect(lines.first?.contains("SCHEDULE") == true)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("later") ? $0.contains(" no ") || $0.contains("  no") : true })
    }
}
