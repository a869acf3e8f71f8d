import Foundation
import Testing
@testable import GeotriggerCore

/// The TZif reader and POSIX TZ rules against the system's tzdata (`/usr/share/zoneinfo`,
/// package tzdata), and schedule windows in those zones.
@Suite struct TimeZoneRulesTests {
    static let zoneinfo = "/usr/share/zoneinfo"

    /// The zone `name` read from the system's file.
    static func zone(_ name: String) throws -> TimeZoneRules {
        let data = try #require(FileManager.default.contents(atPath: zoneinfo + "/" + name), "tzdata has no \(name)")
        return try TimeZoneRules(name: name, tzif: [UInt8](data))
    }

    /// Epoch seconds of an ISO-8601 UTC time.
    static func at(_ text: String) throws -> Double { try #require(ISO8601Time.parse(text)) }

    @Test func melbourneEndsDaylightSavingOnTheFirstSundayOfApril() throws {
        let melbourne = try Self.zone("Australia/Melbourne")
        // 2026-04-05 03:00 AEDT (+11) = 2026-04-04T16:00:00Z: clocks go back to 02:00 AEST (+10).
        let change = try Self.at("2026-04-04T16:00:00Z")
        #expect(melbourne.offset(at: change - 1) == 11 * 3600)
        #expect(melbourne.offset(at: change - 0.001) == 11 * 3600)
        #expect(melbourne.offset(at: change) == 10 * 3600)
        #expect(melbourne.offset(at: change + 1) == 10 * 3600)
        #expect(melbourne.offset(at: try Self.at("2026-01-15T00:00:00Z")) == 11 * 3600)
    }

    @Test func melbourneStartsDaylightSavingOnTheFirstSundayOfOctober() throws {
        let melbourne = try Self.zone("Australia/Melbourne")
        // 2026-10-04 02:00 AEST (+10) = 2026-10-03T16:00:00Z: clocks go forward to 03:00 AEDT (+11).
        let change = try Self.at("2026-10-03T16:00:00Z")
        #expect(melbourne.offset(at: change - 1) == 10 * 3600)
        #expect(melbourne.offset(at: change) == 11 * 3600)
        #expect(melbourne.offset(at: try Self.at("2026-07-01T00:00:00Z")) == 10 * 3600)
    }

    @Test func windowAcrossTheAprilChangeLastsThreeHours() throws {
        let schedule = Schedule(zone: try Self.zone("Australia/Melbourne"), windows: [Schedule.Window(from: 90, to: 210)])
        // 01:30 AEDT is 14:30Z; 02:00-03:00 happens twice; 03:30 AEST is 17:30Z.
        #expect(!schedule.contains(try Self.at("2026-04-04T14:29:59Z")))
        #expect(schedule.contains(try Self.at("2026-04-04T14:30:00Z")))
        #expect(schedule.contains(try Self.at("2026-04-04T15:59:59Z")))  // 02:59:59 AEDT
        #expect(schedule.contains(try Self.at("2026-04-04T16:00:00Z")))  // 02:00:00 AEST
        #expect(schedule.contains(try Self.at("2026-04-04T17:29:59Z")))  // 03:29:59 AEST
        #expect(!schedule.contains(try Self.at("2026-04-04T17:30:00Z")))
    }

    @Test func windowAcrossTheOctoberChangeLastsOneHour() throws {
        let schedule = Schedule(zone: try Self.zone("Australia/Melbourne"), windows: [Schedule.Window(from: 90, to: 210)])
        // 01:30 AEST is 15:30Z; 02:00 AEST becomes 03:00 AEDT at 16:00Z; 03:30 AEDT is 16:30Z.
        #expect(!schedule.contains(try Self.at("2026-10-03T15:29:59Z")))
        #expect(schedule.contains(try Self.at("2026-10-03T15:30:00Z")))
        #expect(schedule.contains(try Self.at("2026-10-03T16:00:00Z")))  // 03:00 AEDT
        #expect(schedule.contains(try Self.at("2026-10-03T16:29:59Z")))
        #expect(!schedule.contains(try Self.at("2026-10-03T16:30:00Z")))  // 03:30 AEDT
    }

    @Test func instantsPastTheLastTransitionFollowTheFooterRule() throws {
        let melbourne = try Self.zone("Australia/Melbourne")
        let last = try #require(melbourne.transitions.last)
        let april = try Self.at("2090-04-01T16:00:00Z")  // 2090-04-02 03:00 AEDT, first Sunday of April
        let october = try Self.at("2090-09-30T16:00:00Z")  // 2090-10-01 02:00 AEST, first Sunday of October
        #expect(Double(last) < april)
        #expect(melbourne.footer != nil)
        #expect(melbourne.offset(at: april - 1) == 11 * 3600)
        #expect(melbourne.offset(at: april) == 10 * 3600)
        #expect(melbourne.offset(at: october - 1) == 10 * 3600)
        #expect(melbourne.offset(at: october) == 11 * 3600)
    }

    @Test func utcAndAZoneWithoutDaylightSaving() throws {
        let utc = try Self.zone("UTC")
        let kolkata = try Self.zone("Asia/Kolkata")
        for text in ["1950-06-01T00:00:00Z", "2026-04-04T16:00:00Z", "2026-10-03T16:00:00Z", "2090-07-01T00:00:00Z"] {
            let t = try Self.at(text)
            #expect(utc.offset(at: t) == 0)
            #expect(TimeZoneRules.utc.offset(at: t) == 0)
            #expect(kolkata.offset(at: t) == 19_800, "\(text)")
        }
        #expect(kolkata.footer == (try POSIXTimeZoneRule("IST-5:30")))
    }

    /// The footer rule of every zone still changing its clocks agrees with the zone's own
    /// transition table over the table's last years (a check of the POSIX rule engine against
    /// the whole tzdata). Gaza and Hebron are left out: their tables predict DST paused for
    /// Ramadan, which no POSIX rule can say (their footer is only the usual yearly pattern).
    @Test func footerRulesAgreeWithTheTablesOfEveryZone() throws {
        let root = Self.zoneinfo
        let names = try #require(FileManager.default.subpaths(atPath: root))
        var checked = 0
        let lunar: Set<String> = ["Asia/Gaza", "Asia/Hebron"]
        for name in names.sorted() where !name.hasPrefix("right/") && !name.hasPrefix("posix/") && !lunar.contains(name) {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isFolder), !isFolder.boolValue,
                let data = FileManager.default.contents(atPath: root + "/" + name), data.starts(with: Array("TZif".utf8))
            else { continue }
            let zone = try TimeZoneRules(name: name, tzif: [UInt8](data))
            guard let footer = zone.footer, footer.daylight != nil, zone.transitions.count >= 6,
                let last = zone.transitions.last, last > 2_000_000_000
            else { continue }
            for i in (zone.transitions.count - 6)..<zone.transitions.count {
                let t = Int(zone.transitions[i])
                let table = Int(zone.offsets[Int(zone.transitionTypes[i])])
                let before = Int(zone.offsets[Int(zone.transitionTypes[i - 1])])
                #expect(footer.offset(at: t) == table, "\(name) at \(t)")
                #expect(footer.offset(at: t - 1) == before, "\(name) at \(t - 1)")
            }
            checked += 1
        }
        #expect(checked > 50)
    }

    @Test func posixRuleForms() throws {
        // DST all year: starts January 1 at 00:00, ends December 31 at 25:00 (EST5EDT shape).
        let allYear = try POSIXTimeZoneRule("EST5EDT,0/0,J365/25")
        for text in ["2026-01-01T05:00:00Z", "2026-06-01T00:00:00Z", "2026-12-31T23:00:00Z", "2027-01-01T04:30:00Z"] {
            #expect(allYear.offset(at: Int(try Self.at(text))) == -4 * 3600, "\(text)")
        }
        // Jn never counts February 29; n does. J60 is March 1, 59 is March 1 only in a leap year.
        let julian = try POSIXTimeZoneRule("AAA0BBB,J60/0,J300/0")
        #expect(julian.offset(at: Int(try Self.at("2028-02-29T23:59:59Z"))) == 0)
        #expect(julian.offset(at: Int(try Self.at("2028-03-01T00:00:00Z"))) == 3600)
        let zeroBased = try POSIXTimeZoneRule("AAA0BBB,59/0,300/0")
        #expect(zeroBased.offset(at: Int(try Self.at("2028-02-29T00:00:00Z"))) == 3600)
        #expect(zeroBased.offset(at: Int(try Self.at("2027-02-28T23:59:59Z"))) == 0)
        // A negative rule time: /-1 is 23:00 the day before (America/Godthab shape).
        let negative = try POSIXTimeZoneRule("<-02>2<-01>,M3.5.0/-1,M10.5.0/0")
        // Last Sunday of March 2026 is the 29th: 23:00 on the 28th at -02 is 2026-03-29T01:00Z.
        #expect(negative.offset(at: Int(try Self.at("2026-03-29T00:59:59Z"))) == -2 * 3600)
        #expect(negative.offset(at: Int(try Self.at("2026-03-29T01:00:00Z"))) == -1 * 3600)
        #expect(try POSIXTimeZoneRule("<+0530>-5:30").standardOffset == 19_800)
        for bad in ["", "AB0", "AAA", "AAA0BBB,M13.1.0,M4.1.0", "AAA0BBB,M3.6.0,M4.1.0", "AAA0BBB,J0,J10", "AAA25", "<AB>0",
                    "AAA0BBB,M3.2.0", "AAA0BBB,M3.2.0/200,M11.1.0", "AAA0 "] {
            #expect(throws: TimeZoneError.self, "\(bad)") { try POSIXTimeZoneRule(bad) }
        }
    }

    @Test func brokenFilesAreErrorsNotTraps() throws {
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: Self.zoneinfo + "/Australia/Melbourne")))
        #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: []) }
        #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: Array("not a zone file at all, but long enough to look".utf8)) }
        for length in stride(from: 0, to: bytes.count - 1, by: 7) {
            #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: Array(bytes[..<length])) }
        }
        var huge = bytes
        huge[32] = 0xFF  // timecnt of the first header: billions of transitions
        #expect(throws: TimeZoneError.self) { try TimeZoneRules(name: "x", tzif: huge) }
        // Any time, however large, gives an offset.
        let melbourne = try TimeZoneRules(name: "Australia/Melbourne", tzif: bytes)
        for t in [Double.infinity, -Double.infinity, .nan, 1e300, -1e300] { _ = melbourne.offset(at: t) }
    }
}
