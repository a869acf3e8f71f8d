import Testing
@testable import GeotriggerCore

@Suite struct TrackReplayTests {
    @Test func timedTrackGivesOneUpdatePerPoint() throws {
        let updates = try TrackFixture.read("walk.jsonl").replayUpdates(file: "walk.jsonl", defaultDevice: "replay")
        #expect(updates == [
            LocationUpdate(device: "vehicles/v17", lat: 34.45, lon: -119.71, time: noonNovember30, accuracy: 5),
            LocationUpdate(
                device: "vehicles/v17", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, speed: 1.5, heading: 61),
            LocationUpdate(device: "replay", lat: 34.4504, lon: -119.709, time: noonNovember30 + 20.5, altitude: 13),
        ])
    }

    @Test func aTrackWithoutTimesNeedsASpeed() throws {
        let track = try TrackFixture.read("route.geojson")
        #expect(
            throws: TrackError(
                file: "route.geojson",
                message: "the track has no times, and replay needs them: use a file with times (GPX <time>, "
                    + "GeoJSON properties.coordTimes, JSON lines 'time', NMEA, OwnTracks) or give --speed "
                    + "(metres per second) to walk it")
        ) {
            try track.replayUpdates(file: "route.geojson", defaultDevice: "replay")
        }
        #expect(throws: TrackError(file: "route.geojson", message: "the speed must be > 0 metres per second, found 0.0")) {
            try track.replayUpdates(file: "route.geojson", defaultDevice: "replay", speed: 0)
        }
    }

    @Test func speedTimesTheWalkPerDevice() throws {
        let updates = try TrackFixture.read("route.geojson").replayUpdates(
            file: "route.geojson", defaultDevice: "replay", speed: 2, start: 1000)
        #expect(updates.map(\.device) == ["replay", "replay", "replay"])
        #expect(updates[0].time == 1000)
        // 0.001° of longitude at 34.45° N is about 91.9 m; 0.001° of latitude about 110.9 m.
        #expect(abs(updates[1].time - (1000 + 91.9 / 2)) < 0.5)
        #expect(abs(updates[2].time - (1000 + (91.9 + 110.9) / 2)) < 1)
        // Two devices each start at `start`.
        let text = "{\"device\":\"a\",\"lat\":0,\"lon\":0}\n{\"device\":\"b\",\"lat\":1,\"lon\":1}\n{\"device\":\"a\",\"lat\":0,\"lon\":0.001}\n"
        let two = try TrackReader.read(Array(text.utf8), file: "t.jsonl").replayUpdates(
            file: "t.jsonl", defaultDevice: "x", speed: 1, start: 0)
        #expect(two.map(\.time)[0...1] == [0, 0])
        #expect(abs(two[2].time - 111.3) < 0.5)
    }

    @Test func pointsWithoutATimeInATimedTrackAreSkippedAndCounted() throws {
        let track = try TrackFixture.read("walk.gpx")
        let plan = try track.replayPlan(file: "walk.gpx", speed: 2)
        #expect(plan.updates.map(\.time) == [noonNovember30, noonNovember30 + 10])
        #expect(plan.notes == [
            "ignored 1 waypoint (wpt) and 1 route (rte, 1 point): planned, not recorded",
            "skipped 1 point without a time in track 1 \"workers/bob\" (line 7) (2 with a time replayed)",
        ])
        #expect(track.points[2].locationUpdate(defaultDevice: "d") == nil)
        #expect(track.points[0].locationUpdate(defaultDevice: "d")?.device == "workers/bob")
    }
}
