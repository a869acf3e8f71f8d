import Testing
@testable import GeotriggerCore

@Suite struct TrackGPXTests {
    @Test func readsTrackAndRoutePointsWithTheirFields() throws {
        let track = try TrackFixture.read("walk.gpx")
        #expect(track.points == [
            TrackPoint(
                device: "workers/bob", lat: 34.45, lon: -119.71, time: noonNovember30,
                accuracy: 1.96 * TrackPoint.metresPerHDOP, altitude: 12.5),
            TrackPoint(
                device: "workers/bob", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, speed: 1.5,
                heading: 61),
            TrackPoint(device: "workers/bob", lat: 34.4504, lon: -119.709),
        ])
        // A file with a track: its route is planned, not recorded.
        #expect(track.ignored == ["1 waypoint (wpt)", "1 route (rte, 1 point): planned, not recorded"])
        #expect(track.parts == [TrackPart(kind: .track, number: 1, name: "workers/bob", line: 7, points: 0..<3)])
        #expect(abs(track.points[0].accuracy! - 15) < 1e-9)  // HDOP 1.96 is gpsd's 15 m at 95 %, 68 % here
        #expect(!track.hasTimes)
    }

    @Test func namespacesPrefixesEntitiesAndCDATA() throws {
        let text = """
            <?xml version='1.0'?>
            <g:gpx xmlns:g="http://www.topografix.com/GPX/1/1"><g:trk><g:name><![CDATA[fleet/van &1]]></g:name>
            <g:trkseg><g:trkpt lat = "1.5" lon='2.5'><g:time>2026-11-30T13:00:00+01:00</g:time></g:trkpt></g:trkseg></g:trk>
            <trk><name>a&amp;b&#x2F;c&#47;d</name><trkseg><trkpt lat="3" lon="4"/></trkseg></trk></g:gpx>
            """
        let track = try TrackReader.read(Array(text.utf8), file: "t.gpx")
        #expect(track.points == [
            TrackPoint(device: "fleet/van &1", lat: 1.5, lon: 2.5, time: noonNovember30),
            TrackPoint(device: "a&b/c/d", lat: 3, lon: 4),
        ])
    }

    @Test func errorsNameFileLineElementAndWhatWasExpected() throws {
        let badTrkpt = try TrackFixture.failure("bad-trkpt.gpx")
        #expect(badTrkpt == #"bad-trkpt.gpx:5: trkpt 2: expected a number in lat="north""#)
        let badTime = try TrackFixture.failure("bad-time.gpx")
        #expect(badTime == "bad-time.gpx:2: trkpt 1: expected <time> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found 'yesterday'")
        let unclosed = try TrackFixture.failure("unclosed.gpx")
        #expect(unclosed == "unclosed.gpx:3: the tag <trkpt is not closed with '>'")
    }

    @Test func smallerErrors() {
        func failure(_ text: String) -> String? {
            do {
                _ = try TrackReader.read(Array(text.utf8), file: "t.gpx", format: .gpx)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(failure("<kml><Document/></kml>") == "t.gpx:1: expected a <gpx> root element, found <kml>")
        #expect(failure("<gpx><wpt lat=\"1\" lon=\"2\"/></gpx>") == "t.gpx: no track points: expected <trkpt lat=\"…\" lon=\"…\"> or <rtept> elements (waypoints, <wpt>, are not a track)")
        #expect(failure("") == "t.gpx: expected a GPX document (a <gpx> root element), found no elements")
        #expect(failure("<gpx>\n<rte><rtept lon=\"2\"/></rte></gpx>") == "t.gpx:2: rtept 1: expected a lat attribute (decimal degrees)")
        #expect(failure("<gpx><trk><trkpt lat=\"91\" lon=\"2\"/></trk></gpx>") == "t.gpx:1: trkpt 1: lat must be -90 to 90, found 91.0")
        #expect(failure("<gpx><trk><trkpt lat=\"1\" lon=\"2\"><ele>high</ele></trkpt></trk></gpx>") == "t.gpx:1: trkpt 1: expected <ele> to hold a number (metres), found 'high'")
        #expect(failure("<gpx>\n<!-- never closed") == "t.gpx:2: this comment is never closed (expected '-->')")
        #expect(failure("<gpx><trk><name>a & b</name></trk></gpx>") == "t.gpx:1: expected an entity such as &amp; (a bare '&' must be written &amp;)")
        #expect(failure("<gpx a=b></gpx>") == "t.gpx:1: expected a quoted value for attribute a in <gpx>")
    }
}
