import Testing
@testable import GeotriggerCore

/// TCX (Garmin Training Center) and KML `gx:Track` (Google), read with the GPX reader's rules
/// (issue 54): recordings are parts, planned routes beside them and points without a position
/// are listed as ignored.
@Suite struct TrackTCXKMLTests {
    /// `forerunner.tcx`: written like a Garmin Connect export: one activity in two laps, a
    /// trackpoint with heart rate but no position, speed in the TPX extension, a course.
    @Test func tcxActivityLapsFollowEachOther() throws {
        let track = try TrackFixture.read("forerunner.tcx")
        #expect(track.points == [
            TrackPoint(lat: 34.45, lon: -119.71, time: noonNovember30, speed: 3.1, altitude: 12.5),
            TrackPoint(lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10),
            TrackPoint(lat: 34.4504, lon: -119.709, time: noonNovember30 + 60),
        ])
        #expect(track.parts == [TrackPart(kind: .activity, number: 1, line: 4, points: 0..<3)])
        #expect(track.ignored == ["1 Trackpoint without a Position", "1 route (Course, 1 point): planned, not recorded"])
        let plan = try track.replayPlan(file: "forerunner.tcx")
        #expect(plan.updates.map(\.device) == ["replay", "replay", "replay"])
    }

    @Test func tcxCoursesOnlyAreARoute() throws {
        let text = """
            <TrainingCenterDatabase><Courses><Course><Name>Loop #1</Name><Track>
            <Trackpoint><Position><LatitudeDegrees>1</LatitudeDegrees><LongitudeDegrees>2</LongitudeDegrees></Position></Trackpoint>
            </Track></Course></Courses></TrainingCenterDatabase>
            """
        let track = try TrackReader.read(Array(text.utf8), file: "c.tcx")
        #expect(track.points == [TrackPoint(device: "Loop #1", lat: 1, lon: 2)])
        #expect(track.parts.map(\.kind) == [.route])
    }

    /// `earth.kml`: written like a Google Earth export: a Point placemark, a LineString, and
    /// a placemark `Phone #1` with a gx:MultiTrack of two gx:Tracks (with gx:angles and
    /// ExtendedData, not read).
    @Test func kmlTracksArePartsNamedAfterTheirPlacemark() throws {
        let track = try TrackFixture.read("earth.kml")
        #expect(track.points == [
            TrackPoint(device: "Phone #1", lat: 34.45, lon: -119.71, time: noonNovember30, altitude: 12.5),
            TrackPoint(device: "Phone #1", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, altitude: 12.9),
            TrackPoint(device: "Phone #1", lat: 34.451, lon: -119.708, time: noonNovember30 + 300, altitude: 13.4),
        ])
        #expect(track.parts == [
            TrackPart(kind: .track, number: 1, name: "Phone #1", line: 20, points: 0..<2),
            TrackPart(kind: .track, number: 2, name: "Phone #1", line: 28, points: 2..<3),
        ])
        #expect(track.ignored == ["1 placemark with a Point", "1 route (LineString, 2 points): planned, not recorded"])
        let plan = try track.replayPlan(file: "earth.kml")
        #expect(Set(plan.updates.map(\.device)) == ["Phone 1"])
        #expect(plan.notes.count == 2)  // the ignored, and one renaming for both tracks
    }

    @Test func errorsNameFileLineAndWhatWasExpected() {
        func failure(_ text: String, _ name: String) -> String? {
            do {
                _ = try TrackReader.read(Array(text.utf8), file: name)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(failure("<kml><Placemark><name>a</name><gx:Track>\n<when>2026-11-30T12:00:00Z</when></gx:Track></Placemark></kml>", "t.kml")
            == "t.kml:1: gx:Track (\"a\"): expected one <when> per <gx:coord>, found 1 <when> and 0 <gx:coord>")
        #expect(failure("<kml><gx:Track>\n<when>noon</when></gx:Track></kml>", "t.kml")
            == "t.kml:2: expected <when> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found 'noon'")
        #expect(failure("<kml><gx:Track><when>2026-11-30T12:00:00Z</when><gx:coord>1,2</gx:coord></gx:Track></kml>", "t.kml")
            == "t.kml:1: expected <gx:coord> to hold 'lon lat' or 'lon lat altitude', found '1,2'")
        #expect(failure("<kml><Placemark><Point><coordinates>1,2</coordinates></Point></Placemark></kml>", "t.kml")
            == "t.kml: no track points: expected a <gx:Track> of <when> and <gx:coord> elements, or a <LineString>")
        #expect(failure("<TrainingCenterDatabase><Activities><Activity>\n<Lap><Track><Trackpoint><Time>x</Time></Trackpoint></Track></Lap></Activity></Activities></TrainingCenterDatabase>", "t.tcx")
            == "t.tcx:2: Trackpoint 1: expected <Time> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found 'x'")
        #expect(failure("<TrainingCenterDatabase><Activities><Activity><Lap><Track><Trackpoint><Position><LatitudeDegrees>95</LatitudeDegrees><LongitudeDegrees>1</LongitudeDegrees></Position></Trackpoint></Track></Lap></Activity></Activities></TrainingCenterDatabase>", "t.tcx")
            == "t.tcx:1: Trackpoint 1: lat must be -90 to 90, found 95.0")
        #expect(failure("<gpx/>", "t.tcx") == "t.tcx: no track points: expected <trkpt lat=\"…\" lon=\"…\"> or <rtept> elements")
    }
}
