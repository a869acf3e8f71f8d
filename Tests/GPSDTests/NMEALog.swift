import Foundation
import GPSD

/// A small reader of NMEA 0183 logs, the oracle for the integration tests: which epochs of a
/// log carry a valid fix, independent of gpsd.
struct NMEALog {
    struct Position: Equatable {
        var timeOfDay: String
        var lat: Double
        var lon: Double

        /// hhmmss.sss as seconds since midnight.
        var secondsOfDay: Double? {
            guard timeOfDay.count >= 6, let hours = Double(timeOfDay.prefix(2)),
                let minutes = Double(timeOfDay.dropFirst(2).prefix(2)),
                let seconds = Double(timeOfDay.dropFirst(4))
            else { return nil }
            return hours * 3600 + minutes * 60 + seconds
        }

        /// Whether `fix` is this position: same time of day (gpsd may move the date by GPS week
        /// rollovers, always whole days) within 5 ms, and lat/lon within `tolerance` degrees.
        func matches(_ fix: GPSFix, tolerance: Double = 1e-6) -> Bool {
            guard let secondsOfDay else { return false }
            let fixSeconds = fix.time.truncatingRemainder(dividingBy: 86_400)
            return abs(fixSeconds - secondsOfDay) < 0.005 && abs(fix.lat - lat) <= tolerance
                && abs(fix.lon - lon) <= tolerance
        }
    }

    let url: URL
    /// Every sentence with a valid checksum, without `$` and `*CS`, split at commas.
    let sentences: [[Substring]]

    init(_ url: URL) throws {
        self.url = url
        let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        sentences = text.split(whereSeparator: \.isNewline).compactMap { line in
            NMEALog.checkedBody(of: line).map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        }
    }

    /// The body of a sentence `$BODY*CS` whose checksum (XOR of BODY's bytes) matches, else nil.
    static func checkedBody(of line: Substring) -> Substring? {
        let line = line.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        let text = Substring(String(line))
        guard text.first == "$", let star = text.lastIndex(of: "*") else { return nil }
        let body = text[text.index(after: text.startIndex)..<star]
        let digits = text[text.index(after: star)...]
        guard digits.count == 2, let expected = UInt8(digits, radix: 16) else { return nil }
        let actual = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return actual == expected ? body : nil
    }

    /// The sentence type without talker (`RMC` for `GPRMC`).
    private static func type(_ fields: [Substring]) -> Substring { fields[0].dropFirst(2) }

    /// ddmm.mmmm + hemisphere to signed degrees.
    static func degrees(_ value: Substring, _ hemisphere: Substring, degreeDigits: Int) -> Double? {
        guard value.count > degreeDigits, let whole = Double(value.prefix(degreeDigits)),
            let minutes = Double(value.dropFirst(degreeDigits))
        else { return nil }
        let magnitude = whole + minutes / 60
        switch hemisphere {
        case "N", "E": return magnitude
        case "S", "W": return -magnitude
        default: return nil
        }
    }

    private static func position(time: Substring, lat: Substring, ns: Substring, lon: Substring, ew: Substring)
        -> Position?
    {
        guard let latitude = degrees(lat, ns, degreeDigits: 2),
            let longitude = degrees(lon, ew, degreeDigits: 3)
        else { return nil }
        return Position(timeOfDay: String(time), lat: latitude, lon: longitude)
    }

    /// RMC sentences with status A and a valid checksum, in log order.
    var validRMCs: [Position] {
        sentences.compactMap { fields in
            guard NMEALog.type(fields) == "RMC", fields.count > 6, fields[2] == "A" else { return nil }
            return NMEALog.position(time: fields[1], lat: fields[3], ns: fields[4], lon: fields[5], ew: fields[6])
        }
    }

    /// The last position any valid fix sentence carries: RMC status A, GGA quality > 0, or GLL
    /// status A. For most logs this is the last valid RMC; `bundg_zeus_9.log` ends with a
    /// GLL-only epoch after its last RMC, which gpsd reports as a fix.
    var lastValidPosition: Position? {
        for fields in sentences.reversed() {
            switch NMEALog.type(fields) {
            case "RMC" where fields.count > 6 && fields[2] == "A":
                return NMEALog.position(time: fields[1], lat: fields[3], ns: fields[4], lon: fields[5], ew: fields[6])
            case "GGA" where fields.count > 6 && !fields[6].isEmpty && fields[6] != "0":
                return NMEALog.position(time: fields[1], lat: fields[2], ns: fields[3], lon: fields[4], ew: fields[5])
            case "GLL" where fields.count > 6 && fields[6] == "A":
                return NMEALog.position(time: fields[5], lat: fields[1], ns: fields[2], lon: fields[3], ew: fields[4])
            default:
                continue
            }
        }
        return nil
    }

    /// Lines with a valid sentence or a comment gpsfake passes on: how long a replay takes.
    var sentenceCount: Int { sentences.count }
}
