import Foundation
import GeotriggerCore
import Testing
import TestSupport

/// `geotrigger replay` on GPX files as GPS devices export them (issue 54): a real Garmin
/// recording against fences on and across it, checked against visits computed with shapely,
/// and files written like real exports.
@Suite(.serialized) struct ReplayRecordingTests {
    static let folder = repositoryRoot + "/Tests/Fixtures/tracks"

    struct Visit: Equatable, CustomStringConvertible {
        var device: String
        var fence: String
        var type: String
        var inferred: Bool
        var time: Double
        var description: String { "\(device) \(fence) \(type)\(inferred ? " inferred" : "") \(time)" }
    }

    /// `Tests/Fixtures/tracks/gpxpy/korita-zbevnica.gpx` (gpxpy's test fixture, Apache 2.0): a
    /// Garmin export with an empty track, a saved track without times (`03-OCT-10 #2`) and two
    /// active logs, against 39 fences of `gpxpy/fences` (squares it walks through, 12 m gates
    /// it jumps over between fixes, markers on pauses longer than `crossingMaxGap`), crossings
    /// on. `visits.csv` is written by `make_visits_oracle.py` with shapely.
    @Test func realGarminRecordingGivesTheVisitsShapelyCounts() throws {
        let r = try runGeotrigger([
            "replay", Self.folder + "/gpxpy/korita-zbevnica.gpx", "--fences", Self.folder + "/gpxpy/fences", "--json",
        ])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.split(separator: "\n").map(String.init) == [
            "replay: ignored 2 waypoints (wpt) and track 1 \"03-OCT-10\" (line 22), which has no points",
            "replay: track 4 \"ACTIVE LOG #2\" (line 1819) is device \"ACTIVE LOG 2\" ('+', '#', control characters, empty levels and a leading '$' are dropped from a track name)",
            "replay: skipped track 2 \"03-OCT-10 #2\" (line 28): none of its 358 points has a time (--speed walks it)",
            "replay: 513 updates (513 accepted), 74 events",
        ])
        let got = try r.out.split(separator: "\n").map { line -> Visit in
            let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let fence = try #require(event["fence"] as? [String: Any])
            let position = try #require(event["position"] as? [String: Any])
            let text = try #require(position["time"] as? String)
            let time = try #require(ISO8601Time.parse(text))
            let device = try #require(event["device"] as? String)
            let id = try #require(fence["id"] as? String)
            let type = try #require(event["type"] as? String)
            return Visit(device: device, fence: id, type: type, inferred: event["inferred"] as? Bool ?? false, time: time)
        }
        let rows = try String(contentsOfFile: Self.folder + "/gpxpy/visits.csv", encoding: .utf8).split(separator: "\n").dropFirst()
        let expected = try rows.map { row -> Visit in
            let f = row.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            try #require(f.count == 5)
            let time = try #require(Double(f[4]))
            return Visit(device: f[0], fence: f[1], type: f[2], inferred: f[3] == "true", time: time)
        }
        #expect(expected.count == 74 && expected.filter(\.inferred).count == 50)
        #expect(got.count == expected.count)
        func key(_ v: Visit) -> String { "\(v.device)|\(v.fence)|\(String(format: "%014.3f", v.time))|\(v.type)" }
        for (g, e) in zip(got.sorted { key($0) < key($1) }, expected.sorted { key($0) < key($1) }) {
            #expect(g.device == e.device && g.fence == e.fence && g.type == e.type && g.inferred == e.inferred, "\(g) vs \(e)")
            // Fix times exactly; interpolated ones (rounded to the ms) within 10 ms of shapely's.
            #expect(abs(g.time - e.time) <= (e.inferred ? 0.01 : 0.0005), "\(g) vs \(e)")
        }
        // No visit on the markers of the pauses longer than crossingMaxGap.
        #expect(!got.contains { $0.fence.hasPrefix("gap-") })
    }

    /// `etrex.gpx`, written like an eTrex export: the active logs replayed, the saved track
    /// skipped by name and count, the route and waypoints ignored, `#` made into a valid id.
    @Test func garminExportReplaysItsActiveLogs() throws {
        let r = try runGeotrigger(["replay", Self.folder + "/etrex.gpx", "--fences", repositoryRoot + "/fences"])
        #expect(r.status == 0, "\(r.err)")
        let lines = r.err.split(separator: "\n").map(String.init)
        #expect(lines.contains("replay: skipped track 3 \"30-NOV-26 12:05\" (line 30): none of its 3 points has a time (--speed walks it)"))
        #expect(lines.contains("replay: skipped 1 point without a time in track 2 \"ACTIVE LOG #2\" (line 22) (2 with a time replayed)"))
        #expect(lines.contains("replay: ignored 2 waypoints (wpt) and 1 route (rte, 2 points): planned, not recorded"))
        #expect(lines.last?.hasPrefix("replay: 6 updates (6 accepted)") == true, "\(lines)")

        let walked = try runGeotrigger([
            "replay", Self.folder + "/etrex.gpx", "--fences", repositoryRoot + "/fences", "--speed", "1.4", "--device", "hikers/ana",
        ])
        #expect(walked.status == 0, "\(walked.err)")
        #expect(walked.err.split(separator: "\n").last?.hasPrefix("replay: 9 updates (9 accepted)") == true, "\(walked.err)")
    }

    /// `gpx10.gpx`, GPSBabel's GPX 1.0 with tracks without names and one named `van+2/`.
    @Test func gpx10TracksAreDevicesOfTheirOwn() throws {
        let r = try runGeotrigger(["replay", Self.folder + "/gpx10.gpx", "--fences", repositoryRoot + "/fences"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("track 2 \"van+2/\" (line 21) is device \"van2\""))
        #expect(r.err.split(separator: "\n").last?.hasPrefix("replay: 4 updates (4 accepted)") == true, "\(r.err)")
    }
}
