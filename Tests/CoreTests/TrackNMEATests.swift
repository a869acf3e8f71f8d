import Foundation
import Testing
@testable import GeotriggerCore

@Suite struct TrackNMEATests {
    @Test func rmcPointsWithGGAOfTheSameTimeBeforeOrAfter() throws {
        let track = try TrackFixture.read("walk.nmea")
        let knot = 1852.0 / 3600
        #expect(track.points == [
            // GGA before the RMC.
            TrackPoint(
                lat: 34.45, lon: -119.71, time: noonNovember30, accuracy: 1.2 * TrackPoint.metresPerHDOP,
                speed: 2 * knot, heading: 90, altitude: 15.5),
            // $GNRMC, GGA after it.
            TrackPoint(
                lat: 34 + 27.0006 / 60, lon: -(119 + 42.5994 / 60), time: noonNovember30 + 1,
                accuracy: 0.8 * TrackPoint.metresPerHDOP, speed: 2.5 * knot, heading: 45, altitude: 16),
            // 120002 has a bad checksum, 120003 is void; then southern and eastern hemispheres, 2000-01-01.
            TrackPoint(lat: -(34 + 27.0018 / 60), lon: 119 + 42.5982 / 60, time: 946_728_004),
        ])
        #expect(track.skipped == [.wrongChecksum: 1, .noFix: 1])
    }

    @Test func aLogWithoutAFixIsAnError() throws {
        let message = try TrackFixture.failure("no-fix.nmea")
        #expect(
            message
                == "no-fix.nmea: no RMC sentence with a fix (status A) and a good checksum; expected an NMEA 0183 log "
                + "($GPRMC or $GNRMC lines), found 2 sentences (1 wrong checksum, 1 no fix)")
    }

    @Test func checksums() {
        let good = Array("$GPRMC,120000.00,A,3427.0000,N,11942.6000,W,2.0,90.0,301126,,,A*78".utf8)
        #expect(TrackReader.checkedBody(good, 1..<good.count) != nil)
        #expect(TrackReader.checkedBody(Array("$GPTXT,x*1b".utf8), 1..<11) == 1..<8)  // lowercase hex
        #expect(TrackReader.checkedBody(Array("$GPTXT,x*1B".utf8), 1..<11) == 1..<8)
        #expect(TrackReader.checkedBody(Array("$GPTXT,x*1B0".utf8), 1..<12) == nil)
        var wrong = good
        wrong[wrong.count - 1] = UInt8(ascii: "9")
        #expect(TrackReader.checkedBody(wrong, 1..<wrong.count) == nil)
        let missing = Array("$GPGSV,1,1,00".utf8)
        #expect(TrackReader.checkedBody(missing, 1..<missing.count) == nil)
    }

    /// gpsd's capture from a boat on the IJsselmeer: every RMC sentence with status A and a
    /// good checksum, counted here independently, is one point.
    @Test func realLogFromGPSDRegressionSuite() throws {
        let bytes = try TrackFixture.bytes("bundg_zeus_9.log")
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
        func checksumOK(_ s: String) -> Bool {
            Int(s.suffix(2), radix: 16) == Int(s.dropFirst().prefix { $0 != "*" }.utf8.reduce(0, ^))
        }
        let rmc = lines.filter { $0.hasPrefix("$GPRMC") && $0.split(separator: ",")[2] == "A" && checksumOK($0) }
        let ggaTimes = Set(lines.filter { $0.hasPrefix("$GPGGA") && checksumOK($0) }.map { $0.split(separator: ",")[1] })
        let withGGA = rmc.filter { ggaTimes.contains($0.split(separator: ",")[1]) }.count

        let track = try TrackReader.read(bytes, file: "bundg_zeus_9.log")
        #expect(rmc.count == 146)
        #expect(track.points.count == rmc.count)
        #expect(track.points.filter { $0.altitude != nil }.count == withGGA)
        #expect(track.skipped.isEmpty)
        // $GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,200818 and its GGA (after it): -4 m, HDOP 0.60.
        let first = try #require(track.points.first)
        #expect(first == TrackPoint(
            lat: 52 + 51.0093 / 60, lon: 5 + 18.8170 / 60, time: 1_534_758_457, accuracy: 0.6 * TrackPoint.metresPerHDOP,
            speed: 5.6 * 1852 / 3600, heading: 230.5, altitude: -4))
        let last = try #require(track.points.last?.time)
        #expect(last == 1_534_758_457 + 146)  // 09:50:03
        // Fix times never go backwards (the log repeats 09:49:45 once).
        let times = track.points.compactMap(\.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 >= $0 })
    }

    @Test func damagedSentencesAreSkippedAndCounted() throws {
        var text = String(decoding: try TrackFixture.bytes("bundg_zeus_9.log"), as: UTF8.self)
        // Flip one digit of the first RMC's latitude: the checksum no longer matches.
        let damaged = text.replacingOccurrences(of: "$GPRMC,094737,A,5251.0093", with: "$GPRMC,094737,A,5251.0094")
        #expect(damaged != text)
        text = damaged
        let track = try TrackReader.read(Array(text.utf8), file: "damaged.log")
        #expect(track.points.count == 145)
        #expect(track.skipped == [.wrongChecksum: 1])
        #expect(track.points.first?.time == 1_534_758_458)
    }

    /// Every RMC or GGA sentence that gives no point is counted under why; sentences that are
    /// not about position (GSV, TXT) are not skipped, they are simply not read.
    @Test func skippedSentencesAreCountedByReason() throws {
        let rmc = "GPRMC,120000.00,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"
        let log = [
            TimeValueTests.sentence(rmc),
            TimeValueTests.sentence("GPRMC,123456.1e30,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"),
            TimeValueTests.sentence("GPRMC,250000.00,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"),
            TimeValueTests.sentence("GPRMC,12h000.00,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"),
            TimeValueTests.sentence("GPRMC,120001.00,A,4717.11,N,00833.91,E,0.0,0.0,311126,,"),  // 31 November
            TimeValueTests.sentence("GPRMC,120001.00,A,4717.11,N,00833.91,E,0.0,0.0,30nov6,,"),
            TimeValueTests.sentence("GPRMC,120001.00,A,9117.11,N,00833.91,E,0.0,0.0,301126,,"),  // 91 degrees
            TimeValueTests.sentence("GPRMC,120001.00,A,4717.11,X,00833.91,E,0.0,0.0,301126,,"),
            TimeValueTests.sentence("GPRMC,120001.00,A,4717.11,N"),
            TimeValueTests.sentence("GPRMC,120002.00,V,,,,,,,301126,,"),
            TimeValueTests.sentence("GPGGA,120002.00,,,,,0,00,99.99,,,,,,"),
            TimeValueTests.sentence("GPGGA,1e30,4717.11,N,00833.91,E,1,08,1.0,400.0,M,48.0,M,,"),
            String(TimeValueTests.sentence(rmc).dropLast()) + "0",
            "$" + rmc,
            TimeValueTests.sentence("GPGSV,1,1,00"),
            TimeValueTests.sentence("GPTXT,01,01,02,ANTENNA OK"),
        ].joined(separator: "\n")
        let track = try TrackReader.read(Array(log.utf8), file: "log.nmea", format: .nmea)
        #expect(track.points.count == 1)
        #expect(track.skipped == [
            .timeOutOfRange: 3, .unreadableTime: 1, .dateOutOfRange: 1, .unreadableDate: 1, .positionOutOfRange: 1,
            .unreadablePosition: 1, .tooFewFields: 1, .noFix: 2, .wrongChecksum: 1, .noChecksum: 1,
        ])
        #expect(track.skipSummary == [
            "1 NMEA sentence: no checksum",
            "1 NMEA sentence: wrong checksum",
            "1 NMEA sentence: too few fields",
            "2 NMEA sentences: no fix",
            "1 NMEA sentence: unreadable time",
            "3 NMEA sentences: time out of range",
            "1 NMEA sentence: unreadable date",
            "1 NMEA sentence: date out of range",
            "1 NMEA sentence: unreadable position",
            "1 NMEA sentence: position out of range",
        ])
    }
}
