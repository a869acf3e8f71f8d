extension TrackReader {
    /// OwnTracks recorder files (`rec/USER/DEVICE/YYYY-MM.rec`): one record per line,
    /// `ISO-8601 time TAB padding (or *) TAB JSON payload`. Only `_type: location` records are
    /// points (`lat`, `lon` required; `tst` epoch seconds, else the line's time; `acc`, `vel`
    /// km/h, `cog`, `alt`; -1 for `vel` or `cog` means unknown). The device is `USER/DEVICE`
    /// when the file name has the recorder's `rec/USER/DEVICE/` folders.
    static func readOwnTracksRecorder(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        let device = recorderDevice(file: file)
        var points: [TrackPoint] = []
        var records = 0
        var lines = TextLines(bytes, from: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0)
        while let line = lines.next() {
            let range = TextLines.trimmed(bytes, line.range)
            guard !range.isEmpty else { continue }
            guard let firstTab = bytes[range].firstIndex(of: 0x09),
                let secondTab = bytes[(firstTab + 1)..<range.upperBound].firstIndex(of: 0x09),
                let lineTime = ISO8601Time.parse(String(decoding: bytes[range.lowerBound..<firstTab], as: UTF8.self))
            else {
                throw TrackError(
                    file: file, line: line.number,
                    message: "expected an OwnTracks recorder line: ISO-8601 time, TAB, '*' or padding, TAB, JSON payload")
            }
            records += 1
            let json = TextLines.trimmed(bytes, (secondTab + 1)..<range.upperBound)
            let fields = try JSONLineFields(bytes, json, line: line, file: file)
            guard fields.object["_type"] == .string("location") else { continue }
            var point = TrackPoint(
                device: device, lat: try fields.required("lat"), lon: try fields.required("lon"),
                time: try fields.optional("tst", in: 0...Double.infinity) ?? lineTime)
            if let problem = checkPosition(lat: point.lat, lon: point.lon) { throw fields.error(problem.hasPrefix("lon") ? "lon" : "lat", problem) }
            point.accuracy = try fields.optional("acc", in: 0...Double.infinity)
            point.speed = try fields.optional("vel", in: -1...Double.infinity).flatMap { $0 < 0 ? nil : $0 / 3.6 }
            point.heading = try fields.optional("cog", in: -1...360).flatMap { $0 < 0 ? nil : $0 }
            point.altitude = try fields.optional("alt", in: -Double.infinity...Double.infinity)
            points.append(point)
        }
        guard !points.isEmpty else {
            throw TrackError(
                file: file,
                message: "no location records: expected lines with a {\"_type\": \"location\", …} payload, found \(records) other record\(records == 1 ? "" : "s")")
        }
        return Track(points: points)
    }

    /// `USER/DEVICE` from a recorder path `…/rec/USER/DEVICE/FILE`, else nil.
    static func recorderDevice(file: String) -> String? {
        let parts = file.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 4, parts[parts.count - 4] == "rec" else { return nil }
        return "\(parts[parts.count - 3])/\(parts[parts.count - 2])"
    }
}
