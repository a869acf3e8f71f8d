/// The track and route file formats `simulate` and `replay` read (docs/commands.md "Tracks and routes").
public enum TrackFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// GeoJSON: a LineString or MultiLineString, a Feature of one, or a FeatureCollection of them.
    case geojson
    /// GPX 1.0 / 1.1: tracks (`trk`), or routes (`rte`) in a file without tracks.
    case gpx
    /// TCX (Garmin Training Center): activities, or courses in a file without activities.
    case tcx
    /// KML with Google's `gx:Track` (or `LineString` routes in a file without tracks).
    case kml
    /// An OwnTracks recorder `.rec` file: `TIME \t * \t {JSON}` per line.
    case owntracksRecorder
    /// An NMEA 0183 log (RMC for positions, GGA for altitude and HDOP).
    case nmea
    /// JSON lines: one `{device, lat, lon, time, accuracy, speed, heading}` object per line.
    case jsonLines

    /// The name people type: `geojson`, `gpx`, `tcx`, `kml`, `owntracks`, `nmea`, `jsonl`.
    public var name: String {
        switch self {
        case .geojson: "geojson"
        case .gpx: "gpx"
        case .tcx: "tcx"
        case .kml: "kml"
        case .owntracksRecorder: "owntracks"
        case .nmea: "nmea"
        case .jsonLines: "jsonl"
        }
    }

    public var description: String { name }

    /// The format named `name` (see ``name``; `rec`, `json-lines`, `ndjson` and `jsonlines` are
    /// accepted too), or nil.
    public init?(name: String) {
        switch name.lowercased() {
        case "geojson": self = .geojson
        case "gpx": self = .gpx
        case "tcx": self = .tcx
        case "kml": self = .kml
        case "owntracks", "rec", "recorder": self = .owntracksRecorder
        case "nmea": self = .nmea
        case "jsonl", "jsonlines", "json-lines", "ndjson": self = .jsonLines
        default: return nil
        }
    }

    /// The format of a file, from its content first (the first meaningful line), then from the
    /// file name's extension (`.geojson`, `.gpx`, `.tcx`, `.kml`, `.rec`, `.nmea`/`.log`,
    /// `.jsonl`/`.ndjson`);
    /// nil if neither tells.
    public static func detect(file: String, bytes: [UInt8]) -> TrackFormat? {
        detect(content: bytes) ?? detect(fileName: file)
    }

    /// The format suggested by the file name's extension alone.
    public static func detect(fileName: String) -> TrackFormat? {
        let name = fileName.split(separator: "/").last.map(String.init) ?? fileName
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "geojson": return .geojson
        case "gpx": return .gpx
        case "tcx": return .tcx
        case "kml": return .kml
        case "rec": return .owntracksRecorder
        case "nmea", "nma", "log": return .nmea
        case "jsonl", "ndjson": return .jsonLines
        default: return nil
        }
    }

    /// The format told by the content: `<` opens XML, TCX if the first element is
    /// `TrainingCenterDatabase`, KML if it is `kml`, else GPX; `$` or `!` opens NMEA (after `#`
    /// comment lines); an ISO-8601 time followed by a TAB opens a recorder line; `{` opens
    /// JSON lines when the first line is a whole object with a `lat` member, else GeoJSON.
    static func detect(content bytes: [UInt8]) -> TrackFormat? {
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        var lines = TextLines(bytes, from: start)
        while let line = lines.next() {
            let text = line.range
            var i = text.lowerBound
            while i < text.upperBound, TextLines.isSpace(bytes[i]) { i += 1 }
            guard i < text.upperBound else { continue }
            switch bytes[i] {
            case UInt8(ascii: "#"): continue
            case UInt8(ascii: "<"): return xmlFormat(bytes, from: i)
            case UInt8(ascii: "$"), UInt8(ascii: "!"): return .nmea
            case UInt8(ascii: "{"):
                if let document = try? JSONReader.parse(Array(bytes[i..<text.upperBound]), file: "", dialect: .json),
                    let object = document.value.objectValue
                {
                    return object["lat"] != nil || object["type"] == nil ? .jsonLines : .geojson
                }
                return .geojson
            case UInt8(ascii: "["): return nil
            default:
                if let tab = bytes[i..<text.upperBound].firstIndex(of: 0x09),
                    ISO8601Time.parse(String(decoding: bytes[i..<tab], as: UTF8.self)) != nil
                {
                    return .owntracksRecorder
                }
                return nil
            }
        }
        return nil
    }

    /// TCX or KML by the name of the first element at or after `start`, else GPX.
    static func xmlFormat(_ bytes: [UInt8], from start: Int) -> TrackFormat {
        var i = start
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "<"), i + 1 < bytes.count else {
                i += 1
                continue
            }
            let next = bytes[i + 1]
            if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") {
                i += 2
                continue
            }
            var end = i + 1
            while end < bytes.count, !TextLines.isSpace(bytes[end]), bytes[end] != UInt8(ascii: ">"), bytes[end] != UInt8(ascii: "/") {
                end += 1
            }
            var name = String(decoding: bytes[(i + 1)..<end], as: UTF8.self)
            if let colon = name.lastIndex(of: ":") { name = String(name[name.index(after: colon)...]) }
            switch name {
            case "TrainingCenterDatabase": return .tcx
            case "kml": return .kml
            default: return .gpx
            }
        }
        return .gpx
    }
}
