import Foundation
import Testing
@testable import GeotriggerCore

/// The track fixtures in `Tests/Fixtures/tracks`, read with the name relative to that folder
/// (so error messages read `walk.gpx:3: …`).
enum TrackFixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tracks")

    static func bytes(_ name: String) throws -> [UInt8] {
        let data = try #require(FileManager.default.contents(atPath: folder.appendingPathComponent(name).path))
        return [UInt8](data)
    }

    static func read(_ name: String, format: TrackFormat? = nil) throws -> Track {
        try TrackReader.read(try bytes(name), file: name, format: format)
    }

    /// The error message reading `name` gives, or nil if it reads.
    static func failure(_ name: String, format: TrackFormat? = nil) throws -> String? {
        let bytes = try bytes(name)
        do {
            _ = try TrackReader.read(bytes, file: name, format: format)
            return nil
        } catch {
            return error.description
        }
    }
}

/// 2026-11-30T12:00:00Z.
let noonNovember30 = 1_796_040_000.0

@Suite struct TrackFormatTests {
    @Test func detectsEveryFixtureFromItsContent() throws {
        let expected: [(String, TrackFormat)] = [
            ("walk.geojson", .geojson), ("route.geojson", .geojson), ("multi.geojson", .geojson),
            ("walk.gpx", .gpx), ("rec/alice/phone/2026-11.rec", .owntracksRecorder), ("walk.nmea", .nmea),
            ("bundg_zeus_9.log", .nmea), ("walk.jsonl", .jsonLines), ("forerunner.tcx", .tcx), ("earth.kml", .kml),
            ("etrex.gpx", .gpx), ("gpx10.gpx", .gpx),
        ]
        for (name, format) in expected {
            // Under a name that says nothing, so only the content decides.
            #expect(TrackFormat.detect(file: "track", bytes: try TrackFixture.bytes(name)) == format, "\(name)")
        }
    }

    @Test func contentDecidesBetweenGeoJSONAndJSONLines() {
        let minified = #"{"type":"LineString","coordinates":[[1,2],[3,4]]}"#
        #expect(TrackFormat.detect(file: "x.json", bytes: Array(minified.utf8)) == .geojson)
        let lines = "{\"lat\": 1, \"lon\": 2}\n{\"lat\": 1, \"lon\": 3}\n"
        #expect(TrackFormat.detect(file: "x.json", bytes: Array(lines.utf8)) == .jsonLines)
        let typedLine = #"{"type": "fix", "lat": 1, "lon": 2}"#
        #expect(TrackFormat.detect(file: "x", bytes: Array(typedLine.utf8)) == .jsonLines)
    }

    @Test func fallsBackToTheExtension() {
        #expect(TrackFormat.detect(file: "a/b/trip.GPX", bytes: []) == .gpx)
        #expect(TrackFormat.detect(file: "trip.ndjson", bytes: Array("  \n".utf8)) == .jsonLines)
        #expect(TrackFormat.detect(file: "2026-11.rec", bytes: []) == .owntracksRecorder)
        #expect(TrackFormat.detect(file: "capture.log", bytes: []) == .nmea)
        #expect(TrackFormat.detect(file: "notes.txt", bytes: Array("hello".utf8)) == nil)
    }

    @Test func namesRoundTrip() {
        for format in TrackFormat.allCases {
            #expect(TrackFormat(name: format.name) == format)
        }
        #expect(TrackFormat(name: "NDJSON") == .jsonLines)
        #expect(TrackFormat(name: "kmz") == nil)
    }

    @Test func unknownContentIsAnErrorThatListsTheFormats() {
        #expect(throws: TrackError.self) { try TrackReader.read(Array("hello".utf8), file: "notes.txt") }
        do {
            _ = try TrackReader.read(Array("hello".utf8), file: "notes.txt")
        } catch {
            #expect(
                error.description
                    == "notes.txt: cannot tell the track format; expected GeoJSON, GPX, TCX, KML, an OwnTracks recorder file, "
                    + "an NMEA log or JSON lines (name the format: geojson, gpx, tcx, kml, owntracks, nmea or jsonl)")
        }
    }
}
