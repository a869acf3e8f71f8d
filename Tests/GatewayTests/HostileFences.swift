import Foundation
import TestSupport

/// A fences folder whose one fence is named to attack the operator's terminal: an OSC that
/// retitles the window, a bell, a clear-screen, a C1 CSI and a line separator. Its layer's
/// message repeats the name, so events carry it twice.
enum HostileFences {
    static let name = "\u{1b}]0;x\u{07}\u{1b}[2J\u{9b}\u{2028}"

    /// Writes `fences/hostile.geojson` (a square from 10.000 to 10.001 degrees in lat and lon)
    /// into `directory`; returns the folder.
    static func write(in directory: TemporaryDirectory) throws -> String {
        try FileManager.default.createDirectory(atPath: directory.file("fences"), withIntermediateDirectories: true)
        try directory.write("fences/hostile.geojson", #"""
            {"type": "FeatureCollection",
             "geotrigger": {"message": "'Entered ' + $fencefeature.name"},
             "features": [{"type": "Feature", "id": "square",
               "properties": {"name": "\u001b]0;x\u0007\u001b[2J\u009b\u2028"},
               "geometry": {"type": "Polygon", "coordinates": [[[10, 10], [10.001, 10], [10.001, 10.001], [10, 10.001], [10, 10]]]}}]}
            """#)
        return directory.file("fences")
    }

    /// The scalars of `output` a terminal acts on: C0 but the line feed, DEL, C1, U+2028, U+2029.
    static func rawControls(_ output: String) -> [UInt32] {
        output.unicodeScalars.map(\.value).filter {
            ($0 < 0x20 && $0 != 0x0A) || (0x7F...0x9F).contains($0) || $0 == 0x2028 || $0 == 0x2029
        }
    }

    /// A failure message naming how many raw control characters (and ESC bytes) got through.
    static func report(_ raw: [UInt32], in output: String) -> String {
        "\(raw.count) raw control characters (\(raw.filter { $0 == 0x1B }.count) ESC): \(output.debugDescription)"
    }
}
