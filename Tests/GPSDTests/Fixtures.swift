import Foundation
import TestSupport

/// Test fixtures under `Tests/Fixtures/nmea`.
enum Fixtures {
    static let nmea = URL(fileURLWithPath: repositoryRoot + "/Tests/Fixtures/nmea")

    static func nmea(_ name: String) -> URL { nmea.appendingPathComponent(name) }

    /// A lead-in gpsd discards while it activates the pty gpsfake feeds (about 0.8 s): GSA
    /// sentences without a fix, time, date or position, `seconds` long at `cycle` s per line.
    static func leadIn(seconds: Double, cycle: Double) -> String {
        let line = "$GPGSA,A,1,,,,,,,,,,,,,,,*1E\n"
        return String(repeating: line, count: Int((seconds / cycle).rounded(.up)))
    }

    /// A temporary log made of `parts` (texts and fixture files) in order.
    static func temporaryLog(_ parts: [LogPart]) throws -> URL {
        var text = ""
        for part in parts {
            switch part {
            case .text(let value): text += value
            case .file(let url): text += String(decoding: try Data(contentsOf: url), as: UTF8.self)
            }
            if !text.hasSuffix("\n") { text += "\n" }
        }
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("geotrigger-gpsd-\(UUID().uuidString).log")
        try Data(text.utf8).write(to: url)
        return url
    }

    enum LogPart {
        case text(String)
        case file(URL)
    }
}
