import Testing

@testable import GeotriggerCore

/// Time values that do not fit (1e300, inf, nan, an NMEA time with an exponent) are errors or
/// drops wherever they are read, never a trap: nothing a client sends or a file holds may
/// crash the gateway.
@Suite struct TimeValueTests {
    /// `$BODY*CS` with its XOR checksum.
    static func sentence(_ body: String) -> String {
        let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        let hex = Array("0123456789ABCDEF")
        return "$\(body)*\(hex[Int(sum >> 4)])\(hex[Int(sum & 15)])"
    }

    func failure(_ text: String, file: String, format: TrackFormat? = nil) -> String? {
        do {
            _ = try TrackReader.read(Array(text.utf8), file: file, format: format)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func formatNeverTraps() {
        #expect(ISO8601Time.format(1e300) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601Time.format(-1e300) == "0001-01-01T00:00:00Z")
        #expect(ISO8601Time.format(.infinity) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601Time.format(.nan) == "1970-01-01T00:00:00Z")
        #expect(ISO8601Time.parse(ISO8601Time.format(ISO8601Time.supportedRange.upperBound)) == ISO8601Time.supportedRange.upperBound)
        #expect(ISO8601Time.parse(ISO8601Time.format(ISO8601Time.supportedRange.lowerBound)) == ISO8601Time.supportedRange.lowerBound)
    }

    @Test func nmeaTimeWithAnExponentIsNotATime() throws {
        #expect(TrackReader.timeOfDayMilliseconds("123456.1e30") == nil)
        #expect(TrackReader.timeOfDayMilliseconds("123456.") == nil)
        #expect(TrackReader.timeOfDayMilliseconds("123456.nan") == nil)
        #expect(TrackReader.timeOfDayMilliseconds("123456.25") == 45_296_250)
        let good = Self.sentence("GPRMC,123456.00,A,4717.11,N,00833.91,E,0.0,0.0,301126,,")
        let bad = Self.sentence("GPRMC,123456.1e30,A,4717.11,N,00833.91,E,0.0,0.0,301126,,")
        let track = try TrackReader.read(Array("\(bad)\n\(good)\n".utf8), file: "log.nmea", format: .nmea)
        #expect(track.points.count == 1)
        #expect(track.points.first?.time == 1_796_042_096)
        #expect(track.skipped == [.timeOutOfRange: 1])
    }

    @Test func jsonLinesTimeOf1e300IsAnError() {
        let message = failure(#"{"lat": 1, "lon": 2, "time": 1e300}"# + "\n", file: "t.jsonl", format: .jsonLines)
        #expect(message?.hasPrefix("t.jsonl: point 1: the time 1e+297 (epoch seconds) is out of range: expected years 1 to 9999") == true, "\(message ?? "accepted")")
        #expect(failure(#"{"lat": 1, "lon": 2, "time": -1e300}"# + "\n", file: "t.jsonl", format: .jsonLines) != nil)
    }

    @Test func ownTracksTstOf1e300IsAnError() {
        let line = "2026-11-30T12:00:00Z\t*                 \t" + #"{"_type":"location","lat":1,"lon":2,"tst":1e300}"# + "\n"
        let message = failure(line, file: "2026-11.rec", format: .owntracksRecorder)
        #expect(message?.hasPrefix("2026-11.rec: point 1: the time 1e+300 (epoch seconds) is out of range") == true, "\(message ?? "accepted")")
    }

    @Test func geoJSONTimeOf1e300IsAnError() {
        let text = #"{"type": "Feature", "properties": {"coordTimes": [1796040000, 1e300]}, "geometry": {"type": "LineString", "coordinates": [[2, 1], [2.001, 1]]}}"#
        let message = failure(text, file: "t.geojson", format: .geojson)
        #expect(message?.hasPrefix("t.geojson: point 2: the time 1e+297 (epoch seconds) is out of range") == true, "\(message ?? "accepted")")
    }

    @Test func replayWalksOnlyWithinTheSupportedYears() throws {
        let track = try TrackReader.read(
            Array(#"{"type": "LineString", "coordinates": [[2, 1], [2.01, 1]]}"#.utf8), file: "r.geojson", format: .geojson)
        #expect(throws: TrackError.self) { try track.replayUpdates(file: "r.geojson", defaultDevice: "d", speed: 1, start: 1e300) }
        #expect(throws: TrackError.self) { try track.replayUpdates(file: "r.geojson", defaultDevice: "d", speed: 1, start: .nan) }
        #expect(throws: TrackError.self) { try track.replayUpdates(file: "r.geojson", defaultDevice: "d", speed: 1e-300, start: 0) }
        #expect(try track.replayUpdates(file: "r.geojson", defaultDevice: "d", speed: 1, start: 0).count == 2)
    }
}
