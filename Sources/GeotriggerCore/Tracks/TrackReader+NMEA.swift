extension TrackReader {
    /// NMEA 0183: one point per RMC sentence (any talker: `$GPRMC`, `$GNRMC`, …) with status
    /// `A`, timed by its date and time fields; a GGA sentence of the same time of day (before or
    /// after it) adds altitude and HDOP. Sentences with a missing or wrong checksum, and RMC or
    /// GGA sentences without a fix or with a time, date or position that cannot be read, are
    /// skipped and counted by reason in ``Track/skipped``; other sentences (GSV, TXT, ...),
    /// lines starting with `#` (gpsd test log headers) and lines without a `$` sentence are
    /// ignored.
    static func readNMEA(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var points: [TrackPoint] = []
        var skipped: [TrackSkipReason: Int] = [:]
        var sentences = 0
        // Time of day (ms) of the last point, and whether a GGA already filled it.
        var lastPointTime: Int?
        var lastPointHasGGA = false
        // A GGA not yet matched with an RMC: time of day (ms), altitude, HDOP.
        var pendingGGA: (time: Int, altitude: Double?, hdop: Double?)?

        var lines = TextLines(bytes)
        while let line = lines.next() {
            let range = TextLines.trimmed(bytes, line.range)
            guard !range.isEmpty, bytes[range.lowerBound] != UInt8(ascii: "#") else { continue }
            // Binary data (UBX, SiRF) may precede a sentence on the same line.
            guard let dollar = bytes[range].lastIndex(of: UInt8(ascii: "$")) else { continue }
            sentences += 1
            guard let body = checkedBody(bytes, dollar + 1..<range.upperBound) else {
                skipped[hasChecksum(bytes, dollar + 1..<range.upperBound) ? .wrongChecksum : .noChecksum, default: 0] += 1
                continue
            }
            let fields = bytes[body].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            guard let address = fields.first, address.utf8.count >= 5 else { continue }
            switch address.suffix(3) {
            case "RMC":
                guard fields.count >= 10 else { skipped[.tooFewFields, default: 0] += 1; continue }
                guard fields[2] == "A" else { skipped[.noFix, default: 0] += 1; continue }
                guard let timeOfDay = timeOfDayMilliseconds(fields[1]) else {
                    skipped[isNumber(fields[1]) ? .timeOutOfRange : .unreadableTime, default: 0] += 1
                    continue
                }
                guard let day = dayNumber(fields[9]) else {
                    skipped[isNumber(fields[9]) ? .dateOutOfRange : .unreadableDate, default: 0] += 1
                    continue
                }
                guard let lat = coordinate(fields[3], fields[4], degreeDigits: 2),
                    let lon = coordinate(fields[5], fields[6], degreeDigits: 3)
                else {
                    let readable = isNumber(fields[3]) && isNumber(fields[5]) && ["N", "S"].contains(fields[4])
                        && ["E", "W"].contains(fields[6])
                    skipped[readable ? .positionOutOfRange : .unreadablePosition, default: 0] += 1
                    continue
                }
                var point = TrackPoint(lat: lat, lon: lon, time: Double(day * 86400) + Double(timeOfDay) / 1000)
                if let knots = Double(fields[7]), knots.isFinite, knots >= 0 { point.speed = knots * 1852 / 3600 }
                if let course = Double(fields[8]), course.isFinite, (0...360).contains(course) { point.heading = course }
                lastPointHasGGA = false
                if let gga = pendingGGA, gga.time == timeOfDay {
                    point.altitude = gga.altitude
                    point.accuracy = gga.hdop.map { $0 * TrackPoint.metresPerHDOP }
                    lastPointHasGGA = true
                }
                pendingGGA = nil
                points.append(point)
                lastPointTime = timeOfDay
            case "GGA":
                guard fields.count >= 10 else { skipped[.tooFewFields, default: 0] += 1; continue }
                guard let quality = Int(fields[6]), quality > 0 else { skipped[.noFix, default: 0] += 1; continue }
                guard let timeOfDay = timeOfDayMilliseconds(fields[1]) else {
                    skipped[isNumber(fields[1]) ? .timeOutOfRange : .unreadableTime, default: 0] += 1
                    continue
                }
                let altitude = Double(fields[9]).flatMap { $0.isFinite ? $0 : nil }
                let hdop = Double(fields[8]).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
                if lastPointTime == timeOfDay, !lastPointHasGGA, !points.isEmpty {
                    points[points.count - 1].altitude = altitude
                    points[points.count - 1].accuracy = hdop.map { $0 * TrackPoint.metresPerHDOP }
                    lastPointHasGGA = true
                } else {
                    pendingGGA = (timeOfDay, altitude, hdop)
                }
            default:
                continue
            }
        }
        guard !points.isEmpty else {
            let reasons = skipped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key.rawValue)" }
            throw TrackError(
                file: file,
                message: "no RMC sentence with a fix (status A) and a good checksum; expected an NMEA 0183 log "
                    + "($GPRMC or $GNRMC lines), found \(sentences) sentence\(sentences == 1 ? "" : "s")"
                    + (reasons.isEmpty ? "" : " (\(reasons.joined(separator: ", ")))"))
        }
        return Track(points: points, skipped: skipped)
    }

    /// True if the sentence in `range` ends in `*HH` (two hex digits), right or wrong.
    static func hasChecksum(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        range.count >= 3 && bytes[range.upperBound - 3] == UInt8(ascii: "*")
            && hexValue(bytes[range.upperBound - 2]) != nil && hexValue(bytes[range.upperBound - 1]) != nil
    }

    /// True if a field that did not read as a time, date or coordinate is still a number
    /// (`256000`, `123456.1e30`, `9130.5`): out of range rather than unreadable.
    static func isNumber(_ text: String) -> Bool {
        guard let first = text.utf8.first, first >= 48, first <= 57, let value = Double(text) else { return false }
        return !value.isNaN
    }

    /// The sentence body between `$` and `*` if `*HH` follows it and HH is the XOR of the body.
    static func checkedBody(_ bytes: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        guard let star = bytes[range].lastIndex(of: UInt8(ascii: "*")), range.upperBound - star == 3,
            let high = hexValue(bytes[star + 1]), let low = hexValue(bytes[star + 2])
        else { return nil }
        var sum: UInt8 = 0
        for b in bytes[range.lowerBound..<star] { sum ^= b }
        return sum == high << 4 | low ? range.lowerBound..<star : nil
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// `hhmmss` or `hhmmss.sss` as milliseconds since midnight.
    static func timeOfDayMilliseconds(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count >= 6, b[0..<6].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        func two(_ i: Int) -> Int { Int(b[i] - 48) * 10 + Int(b[i + 1] - 48) }
        let (h, m, s) = (two(0), two(2), two(4))
        guard h < 24, m < 60, s <= 60 else { return nil }
        var ms = 0
        if b.count > 6 {
            // Decimal digits only: `123456.1e30` is not a time (and would not fit an Int).
            guard b[6] == UInt8(ascii: "."), b.count > 7, b[7...].allSatisfy({ $0 >= 48 && $0 <= 57 }),
                let fraction = Double("0" + text.dropFirst(6))
            else { return nil }
            ms = Int((fraction * 1000).rounded())
        }
        return ((h * 60 + m) * 60 + s) * 1000 + ms
    }

    /// `ddmmyy` as days since 1970 (two-digit years 80-99 are 1980-1999, else 20yy, as gpsd).
    static func dayNumber(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 6, b.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        func two(_ i: Int) -> Int { Int(b[i] - 48) * 10 + Int(b[i + 1] - 48) }
        let (d, m, yy) = (two(0), two(2), two(4))
        let year = yy >= 80 ? 1900 + yy : 2000 + yy
        guard (1...12).contains(m), d >= 1, d <= CivilDate.daysInMonth(year: year, month: m) else { return nil }
        return CivilDate.days(year: year, month: m, day: d)
    }

    /// `ddmm.mmmm` (or `dddmm.mmmm`) with its hemisphere letter as signed degrees.
    static func coordinate(_ text: String, _ hemisphere: String, degreeDigits: Int) -> Double? {
        guard text.utf8.count > degreeDigits + 1, text.utf8.prefix(degreeDigits).allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let degrees = Int(text.prefix(degreeDigits)), let minutes = Double(text.dropFirst(degreeDigits)),
            minutes.isFinite, minutes >= 0, minutes < 60
        else { return nil }
        let value = Double(degrees) + minutes / 60
        guard value <= (degreeDigits == 2 ? 90 : 180) else { return nil }
        switch hemisphere {
        case "N", "E": return value
        case "S", "W": return -value
        default: return nil
        }
    }
}
