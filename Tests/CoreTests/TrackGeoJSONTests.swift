import Testing
@testable import GeotriggerCore

@Suite struct TrackGeoJSONTests {
    @Test func featureWithCoordTimes() throws {
        let track = try TrackFixture.read("walk.geojson")
        #expect(track.points == [
            TrackPoint(device: "workers/alice", lat: 34.45, lon: -119.71, time: noonNovember30),
            TrackPoint(device: "workers/alice", lat: 34.4502, lon: -119.7095, time: noonNovember30 + 10, altitude: 12.5),
            TrackPoint(device: "workers/alice", lat: 34.4504, lon: -119.709, time: noonNovember30 + 20.5),
        ])
        #expect(track.hasTimes)
        #expect(track.skipped.isEmpty)
    }

    @Test func bareLineStringHasNoTimes() throws {
        let track = try TrackFixture.read("route.geojson")
        #expect(track.coordinates == [
            Coordinate(lat: 34.45, lon: -119.71), Coordinate(lat: 34.45, lon: -119.709),
            Coordinate(lat: 34.451, lon: -119.709),
        ])
        #expect(track.points.allSatisfy { $0.time == nil && $0.device == nil })
        #expect(!track.hasTimes)
    }

    @Test func featureCollectionSkipsWaypointsAndJoinsMultiLineStrings() throws {
        let track = try TrackFixture.read("multi.geojson")
        // Times: epoch seconds, and a number > 1e11 read as milliseconds.
        #expect(track.points == [
            TrackPoint(device: "vehicles/v17", lat: 34.45, lon: -119.71, time: noonNovember30),
            TrackPoint(device: "vehicles/v17", lat: 34.45, lon: -119.7095, time: noonNovember30 + 5),
            TrackPoint(device: "vehicles/v17", lat: 34.4505, lon: -119.709, time: noonNovember30 + 60),
        ])
    }

    @Test func errorsNameFileLineFeatureAndWhatWasExpected() throws {
        let polygon = try TrackFixture.failure("polygon.geojson")
        #expect(
            polygon
                == #"polygon.geojson:5:27: feature 0 ("Desert Section"): a track is a LineString or MultiLineString, found Polygon"#)
        let position = try TrackFixture.failure("bad-position.geojson")
        #expect(
            position
                == #"bad-position.geojson:6:39: the feature ("Loop"): geometry.coordinates[1]: expected a position [lon, lat] or [lon, lat, altitude] of numbers"#)
        let times = try TrackFixture.failure("bad-times.geojson")
        #expect(
            times
                == "bad-times.geojson:1:50: the feature: properties.coordTimes has 1 time for 2 positions")
        // A multi-line document read as JSON lines fails on its first line.
        #expect(try TrackFixture.failure("walk.geojson", format: .jsonLines)?.hasPrefix("walk.geojson:1:") == true)
    }

    @Test func smallerErrors() {
        func failure(_ text: String) -> String? {
            do {
                _ = try TrackReader.read(Array(text.utf8), file: "t.geojson", format: .geojson)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(failure("[1, 2]") == "t.geojson:1:1: expected a GeoJSON object (a LineString or MultiLineString, or a Feature or FeatureCollection of them), found an array")
        #expect(failure(#"{"type": "Point", "coordinates": [1, 2]}"#) == "t.geojson:1:10: a track is a LineString or MultiLineString, or a Feature or FeatureCollection of them; found Point")
        #expect(failure(#"{"type": "LineString", "coordinates": [[1, 95]]}"#) == "t.geojson:1:40: coordinates[0]: lat must be -90 to 90, found 95.0")
        #expect(failure(#"{"type": "FeatureCollection", "features": []}"#) == "t.geojson: no LineString or MultiLineString: expected a route or track line (positions [lon, lat])")
        #expect(failure(#"{"type": "Feature", "properties": {"times": ["noon"]}, "geometry": {"type": "LineString", "coordinates": [[1, 2]]}}"#) == #"t.geojson:1:46: the feature: properties.times[0]: expected an ISO-8601 time (2026-11-30T12:00:00Z) or epoch seconds, found "noon""#)
        #expect(failure(#"{"type": "LineString", "coordinates": [[1, 2],]}"#)?.hasPrefix("t.geojson:1:") == true)
    }
}
