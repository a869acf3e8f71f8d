import Testing
@testable import GeotriggerCore

@Suite struct TrackLineFormatTests {
    // MARK: OwnTracks recorder

    @Test func recorderFileLocationRecordsOnly() throws {
        let track = try TrackFixture.read("rec/alice/phone/2026-11.rec")
        #expect(track.points == [
            TrackPoint(
                device: "alice/phone", lat: 34.45, lon: -119.71, time: noonNovember30, accuracy: 8, speed: 5,
                heading: 90, altitude: 12),
            // vel and cog of -1 mean unknown.
            TrackPoint(device: "alice/phone", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10),
            // No tst: the line's own time.
            TrackPoint(device: "alice/phone", lat: 34.4504, lon: -119.709, time: noonNovember30 + 20),
        ])
    }

    @Test func recorderDeviceComesOnlyFromTheRecorderLayout() throws {
        let bytes = try TrackFixture.bytes("rec/alice/phone/2026-11.rec")
        let elsewhere = try TrackReader.read(bytes, file: "/home/me/tracks/2026-11.rec")
        #expect(elsewhere.points.allSatisfy { $0.device == nil })
        let store = try TrackReader.read(bytes, file: "/var/spool/owntracks/recorder/store/rec/bob/car/2026-11.rec")
        #expect(store.points.allSatisfy { $0.device == "bob/car" })
    }

    @Test func recorderErrors() throws {
        let acc = try TrackFixture.failure("bad-acc.rec")
        #expect(acc == "bad-acc.rec:2:104: 'acc' must be a number, found a string")
        let noPrefix = try TrackFixture.failure("no-prefix.rec", format: .owntracksRecorder)
        #expect(noPrefix == "no-prefix.rec:1: expected an OwnTracks recorder line: ISO-8601 time, TAB, '*' or padding, TAB, JSON payload")
        // Content decides before the extension: the same lines without the prefix are JSON lines.
        #expect(try TrackFixture.read("no-prefix.rec").points == [TrackPoint(lat: 34.45, lon: -119.71)])
        let onlyOther = "2026-11-30T12:00:05Z\t*\t{\"_type\":\"lwt\"}\n"
        #expect(throws: TrackError(file: "x.rec", message: "no location records: expected lines with a {\"_type\": \"location\", …} payload, found 1 other record")) {
            try TrackReader.read(Array(onlyOther.utf8), file: "x.rec")
        }
        // A syntax error inside the payload: the column counts the line's prefix too.
        let payload = "{\"_type\":\"location\",}"
        let prefix = "2026-11-30T12:00:05Z\t*\t"
        let alone = try #require(throws: JSONSyntaxError.self) {
            try JSONReader.parse(payload, file: "x.rec", dialect: .json)
        }
        let inFile = try #require(throws: TrackError.self) {
            try TrackReader.read(Array((prefix + payload + "\n").utf8), file: "x.rec")
        }
        #expect(inFile == TrackError(file: "x.rec", line: 1, column: alone.location.column + 23, message: alone.message))
    }

    // MARK: JSON lines

    @Test func jsonLines() throws {
        let track = try TrackFixture.read("walk.jsonl")
        #expect(track.points == [
            TrackPoint(device: "vehicles/v17", lat: 34.45, lon: -119.71, time: noonNovember30, accuracy: 5),
            TrackPoint(
                device: "vehicles/v17", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, speed: 1.5,
                heading: 61),
            TrackPoint(lat: 34.4504, lon: -119.709, time: noonNovember30 + 20.5, altitude: 13),
        ])
    }

    @Test func jsonLinesErrorsNameTheLine() throws {
        let lat = try TrackFixture.failure("bad-lat.jsonl")
        #expect(lat == "bad-lat.jsonl:2:28: 'lat' must be a number, found a string")
        let heading = try TrackFixture.failure("bad-heading.jsonl")
        #expect(heading == "bad-heading.jsonl:1:32: 'heading' must be 0 to 360, found 400")
        let syntax = try TrackFixture.failure("bad-syntax.jsonl")
        #expect(syntax?.hasPrefix("bad-syntax.jsonl:2:") == true)
        func failure(_ text: String) -> String? {
            do {
                _ = try TrackReader.read(Array(text.utf8), file: "t.jsonl", format: .jsonLines)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(failure("{\"lon\": 1}") == "t.jsonl:1:1: 'lat' is missing (expected a number)")
        #expect(failure("\n\n[1]") == "t.jsonl:3:1: expected a JSON object, found an array")
        #expect(failure("{\"lat\": 1, \"lon\": 2, \"time\": \"noon\"}") == "t.jsonl:1:22: 'time' must be ISO-8601 (2026-11-30T12:00:00Z) or epoch seconds, found \"noon\"")
        #expect(failure("{\"lat\": 1, \"lon\": 2, \"device\": 7}") == "t.jsonl:1:22: 'device' must be a string, found a number")
        #expect(failure("{\"lat\": 1, \"lon\": 2, \"accuracy\": -1}") == "t.jsonl:1:22: 'accuracy' must be >= 0, found -1")
        #expect(failure("{\"lat\": 1, \"lon\": 200}") == "t.jsonl:1:12: lon must be -180 to 180, found 200.0")
        #expect(failure("\n \n") == "t.jsonl: no points: expected one {\"lat\": …, \"lon\": …} object per line")
    }
}
