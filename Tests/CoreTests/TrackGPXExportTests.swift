import Testing
@testable import GeotriggerCore

/// GPX as GPS devices and apps export it (issue 54): several tracks per file, a saved track
/// without times, `#` in track names, segment gaps, routes, waypoints and extensions.
@Suite struct TrackGPXExportTests {
    /// `etrex.gpx`: a Garmin eTrex export (GPX 1.1, Garmin namespaces): two waypoints, a route,
    /// `ACTIVE LOG` (two segments with a gap, extensions), `ACTIVE LOG #2` (one point without a
    /// time) and a saved track without times.
    @Test func garminExportReadsEveryTrackAndIgnoresRoutesAndWaypoints() throws {
        let track = try TrackFixture.read("etrex.gpx")
        #expect(track.parts == [
            TrackPart(kind: .track, number: 1, name: "ACTIVE LOG", line: 10, points: 0..<4),
            TrackPart(kind: .track, number: 2, name: "ACTIVE LOG #2", line: 22, points: 4..<7),
            TrackPart(kind: .track, number: 3, name: "30-NOV-26 12:05", line: 30, points: 7..<10),
        ])
        #expect(track.ignored == ["2 waypoints (wpt)", "1 route (rte, 2 points): planned, not recorded"])
        // Segments follow each other; the Garmin TrackPointExtension gives a speed, and its
        // course "n/a" (not a number) and other members (atemp, hr) are not read.
        #expect(track.points[0] == TrackPoint(device: "ACTIVE LOG", lat: 34.45, lon: -119.71, time: noonNovember30, altitude: 12.5))
        #expect(track.points[1] == TrackPoint(
            device: "ACTIVE LOG", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, speed: 4.44, altitude: 12.9))
        #expect(track.points[2].time == noonNovember30 + 300)
        #expect(track.points[5].time == nil)
        #expect(track.points[7...].allSatisfy { $0.time == nil && $0.device == "30-NOV-26 12:05" })
    }

    @Test func garminExportReplaysItsTimedTracksAndSaysWhatItSkipped() throws {
        let plan = try TrackFixture.read("etrex.gpx").replayPlan(file: "etrex.gpx")
        #expect(plan.updates.map(\.device) == ["ACTIVE LOG", "ACTIVE LOG", "ACTIVE LOG", "ACTIVE LOG", "ACTIVE LOG 2", "ACTIVE LOG 2"])
        #expect(plan.updates.map(\.time) == [0, 10, 300, 320, 3600, 3620].map { noonNovember30 + $0 })
        #expect(plan.updates.allSatisfy { DeviceID.problem(with: $0.device) == nil })
        #expect(plan.notes == [
            "ignored 2 waypoints (wpt) and 1 route (rte, 2 points): planned, not recorded",
            "track 2 \"ACTIVE LOG #2\" (line 22) is device \"ACTIVE LOG 2\" ('+', '#', control characters, empty levels and a leading '$' are dropped from a track name)",
            "skipped 1 point without a time in track 2 \"ACTIVE LOG #2\" (line 22) (2 with a time replayed)",
            "skipped track 3 \"30-NOV-26 12:05\" (line 30): none of its 3 points has a time (--speed walks it)",
        ])
    }

    @Test func speedWalksTheSavedTrackAfterTheLastFix() throws {
        let plan = try TrackFixture.read("etrex.gpx").replayPlan(file: "etrex.gpx", speed: 2)
        let walked = plan.updates.filter { $0.device == "30-NOV-26 12:05" }
        #expect(walked.count == 3)
        #expect(walked[0].time == noonNovember30 + 3621)  // a second after the file's last fix
        // 0.001° N and 0.002° W at 34.45° N: about 110.9 m and 183.8 m, 214.7 m at 2 m/s.
        #expect(abs(walked[1].time - walked[0].time - 214.7 / 2) < 1)
        #expect(plan.updates.map(\.time) == plan.updates.map(\.time).sorted())
        #expect(!plan.notes.contains { $0.hasPrefix("skipped track") })
        let fromStart = try TrackFixture.read("etrex.gpx").replayPlan(file: "etrex.gpx", speed: 2, start: 1000)
        #expect(fromStart.updates.first { $0.device == "30-NOV-26 12:05" }?.time == 1000)
    }

    @Test func oneDeviceForEveryPointWithDevice() throws {
        let plan = try TrackFixture.read("etrex.gpx").replayPlan(file: "etrex.gpx", device: "hikers/ana", speed: 2)
        #expect(Set(plan.updates.map(\.device)) == ["hikers/ana"])
        #expect(plan.updates.count == 4 + 2 + 3)
        #expect(plan.updates.map(\.time) == plan.updates.map(\.time).sorted())
        #expect(!plan.notes.contains { $0.contains("is device") })
        // It applies to formats with devices of their own too.
        let jsonl = try TrackFixture.read("walk.jsonl").replayPlan(file: "walk.jsonl", device: "x")
        #expect(jsonl.updates.map(\.device) == ["x", "x", "x"])
    }

    /// `gpx10.gpx`: GPSBabel's GPX 1.0, with `speed` and `course` in the point itself, two
    /// tracks without a name and one whose name has a wildcard and an empty level.
    @Test func gpx10UnnamedTracksAndMergingByTime() throws {
        let track = try TrackFixture.read("gpx10.gpx")
        #expect(track.points[0] == TrackPoint(
            lat: 34.45, lon: -119.71, time: noonNovember30, accuracy: 1.96 * TrackPoint.metresPerHDOP, speed: 1.5,
            heading: 61.5, altitude: 12))
        let plan = try track.replayPlan(file: "gpx10.gpx")
        #expect(plan.updates.map(\.device) == ["replay-3", "replay-1", "van2", "replay-1"])
        #expect(plan.updates.map(\.time) == [-60, 0, 5, 10].map { noonNovember30 + $0 })
        #expect(plan.notes == [
            "track 2 \"van+2/\" (line 21) is device \"van2\" ('+', '#', control characters, empty levels and a leading '$' are dropped from a track name)"
        ])
    }

    @Test func aFileOfRoutesIsARouteAndAllTimelessIsStillAnError() throws {
        let text = """
            <gpx version="1.1"><wpt lat="1" lon="1"/><rte><name>Plan</name><rtept lat="0" lon="0"/><rtept lat="0" lon="0.001"/></rte>
            <trk><name>empty</name><trkseg/></trk></gpx>
            """
        let track = try TrackReader.read(Array(text.utf8), file: "plan.gpx")
        #expect(track.points.map(\.device) == ["Plan", "Plan"])
        #expect(track.ignored == ["1 waypoint (wpt)", "track 1 \"empty\" (line 2), which has no points"])
        #expect(throws: TrackError.self) { try track.replayPlan(file: "plan.gpx") }
        let walked = try track.replayPlan(file: "plan.gpx", speed: 1, start: 0)
        #expect(walked.updates.map(\.device) == ["Plan", "Plan"])
        #expect(abs(walked.updates[1].time - 111.3) < 0.5)
        let etrex = try TrackFixture.read("etrex.gpx")
        #expect(throws: TrackError(file: "etrex.gpx", message: "the speed must be > 0 metres per second, found nan")) {
            try etrex.replayPlan(file: "etrex.gpx", speed: .nan)
        }
    }

    @Test func trackNamesMadeIntoDeviceIDs() {
        let cases: [(String, String)] = [
            ("ACTIVE LOG", "ACTIVE LOG"), ("ACTIVE LOG #8", "ACTIVE LOG 8"), ("a+b", "ab"), ("#", "fallback"),
            ("/fleet//van 1/", "fleet/van 1"), ("$SYS/x", "SYS/x"), ("tab\there", "tabhere"), ("  # 2 ", "2"),
            (String(repeating: "é", count: 150) + "#", String(repeating: "é", count: 100)),
        ]
        for (name, id) in cases {
            let made = DeviceID.made(from: name, fallback: "fallback")
            #expect(made == id, "\(name)")
            #expect(DeviceID.problem(with: made) == nil, "\(name)")
        }
    }
}
