/// Reads the track and route files of `simulate` and `replay` (docs/commands.md "Tracks and routes": GeoJSON
/// LineString, GPX, TCX, KML, OwnTracks recorder files, NMEA logs and JSON lines). Pure: the caller
/// reads the file and passes its bytes and name; the name is used in error messages and, for
/// recorder files, to find the device (`…/rec/USER/DEVICE/YYYY-MM.rec`).
public enum TrackReader {
    /// Reads `bytes` as `format`, or as the format ``TrackFormat/detect(file:bytes:)`` finds.
    /// Throws a ``TrackError`` naming the file, the line (or feature, or element) and what was
    /// expected; a file without a single point is an error too.
    public static func read(_ bytes: [UInt8], file: String, format: TrackFormat? = nil) throws(TrackError) -> Track {
        guard let format = format ?? TrackFormat.detect(file: file, bytes: bytes) else {
            throw TrackError(
                file: file,
                message: "cannot tell the track format; expected GeoJSON, GPX, TCX, KML, an OwnTracks recorder file, "
                    + "an NMEA log or JSON lines (name the format: geojson, gpx, tcx, kml, owntracks, nmea or jsonl)")
        }
        let track: Track
        switch format {
        case .geojson: track = try readGeoJSON(bytes, file: file)
        case .gpx: track = try readGPX(bytes, file: file)
        case .tcx: track = try readTCX(bytes, file: file)
        case .kml: track = try readKML(bytes, file: file)
        case .owntracksRecorder: track = try readOwnTracksRecorder(bytes, file: file)
        case .nmea: track = try readNMEA(bytes, file: file)
        case .jsonLines: track = try readJSONLines(bytes, file: file)
        }
        try checkTimes(track, file: file)
        return track
    }

    /// Every point's time (whatever the format gave it) within ``ISO8601Time/supportedRange``,
    /// so that replay can write it (a time of 1e300 is an error here, not a trap later).
    static func checkTimes(_ track: Track, file: String) throws(TrackError) {
        for (k, point) in track.points.enumerated() {
            guard let time = point.time, !ISO8601Time.supportedRange.contains(time) else { continue }
            throw TrackError(
                file: file,
                message: "point \(k + 1): the time \(time) (epoch seconds) is out of range: expected years 1 to 9999 "
                    + "(\(ISO8601Time.format(ISO8601Time.supportedRange.lowerBound)) to \(ISO8601Time.format(ISO8601Time.supportedRange.upperBound)))")
        }
    }

    /// Checks a position read from `what` (e.g. `line 3`), for messages.
    static func checkPosition(lat: Double, lon: Double) -> String? {
        guard lat.isFinite, lon.isFinite else { return "lat and lon must be finite numbers" }
        guard (-90...90).contains(lat) else { return "lat must be -90 to 90, found \(lat)" }
        guard (-180...180).contains(lon) else { return "lon must be -180 to 180, found \(lon)" }
        return nil
    }

    /// A time given as ISO-8601 text or as epoch seconds (a number > 1e11 is milliseconds), as
    /// the `json` payload format takes it; nil if it is neither.
    static func time(_ value: JSONValue) -> Double? {
        switch value {
        case .number(let n) where n.isFinite: n > 1e11 ? n / 1000 : n
        case .string(let s): ISO8601Time.parse(s)
        default: nil
        }
    }
}
