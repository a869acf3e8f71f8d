extension TrackReader {
    /// JSON lines: one object per line, `{"device", "lat", "lon", "time", "accuracy", "speed",
    /// "heading", "altitude"}`; `lat` and `lon` are required, `time` is ISO-8601 or epoch
    /// seconds (a number > 1e11 is milliseconds). Blank lines are skipped; other members are
    /// ignored.
    static func readJSONLines(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var points: [TrackPoint] = []
        var lines = TextLines(bytes, from: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0)
        while let line = lines.next() {
            let range = TextLines.trimmed(bytes, line.range)
            guard !range.isEmpty else { continue }
            let fields = try JSONLineFields(bytes, range, line: line, file: file)
            var point = TrackPoint(lat: try fields.required("lat"), lon: try fields.required("lon"))
            if let problem = checkPosition(lat: point.lat, lon: point.lon) { throw fields.error(problem.hasPrefix("lon") ? "lon" : "lat", problem) }
            switch fields.object["device"] {
            case nil, .null?: break
            case .string(let device)?: point.device = device
            case let other?: throw fields.error("device", "'device' must be a string, found \(other.typeName)")
            }
            if let value = fields.object["time"], value != .null {
                guard let t = time(value) else {
                    throw fields.error(
                        "time", "'time' must be ISO-8601 (2026-11-30T12:00:00Z) or epoch seconds, found \(value.serialized())")
                }
                point.time = t
            }
            point.accuracy = try fields.optional("accuracy", in: 0...Double.infinity)
            point.speed = try fields.optional("speed", in: 0...Double.infinity)
            point.heading = try fields.optional("heading", in: 0...360)
            point.altitude = try fields.optional("altitude", in: -Double.infinity...Double.infinity)
            points.append(point)
        }
        guard !points.isEmpty else {
            throw TrackError(file: file, message: "no points: expected one {\"lat\": …, \"lon\": …} object per line")
        }
        return Track(points: points)
    }
}

/// One line of a line-oriented JSON format parsed as an object, with errors that name the
/// file's line and the member's column.
struct JSONLineFields {
    let document: JSONDocument
    let object: JSONObject
    let file: String
    let line: Int
    /// Characters on the line before the JSON text (recorder lines have a prefix).
    let columnOffset: Int

    init(_ bytes: [UInt8], _ range: Range<Int>, line: TextLines.Line, file: String) throws(TrackError) {
        self.file = file
        self.line = line.number
        columnOffset = String(decoding: bytes[line.range.lowerBound..<range.lowerBound], as: UTF8.self).count
        do {
            document = try JSONReader.parse(Array(bytes[range]), file: file, dialect: .json)
        } catch {
            throw TrackError(file: file, line: line.number, column: error.location.column + columnOffset, message: error.message)
        }
        guard let object = document.value.objectValue else {
            throw TrackError(
                file: file, line: line.number, column: columnOffset + 1,
                message: "expected a JSON object, found \(document.value.typeName)")
        }
        self.object = object
    }

    /// An error about member `key`, located at the member (or at the object if it is absent).
    func error(_ key: String, _ message: String) -> TrackError {
        let column = document.location(of: [.key(key)])?.column ?? 1
        return TrackError(file: file, line: line, column: column + columnOffset, message: message)
    }

    /// A required finite number.
    func required(_ key: String) throws(TrackError) -> Double {
        switch object[key] {
        case nil: throw error(key, "'\(key)' is missing (expected a number)")
        case .number(let n)?: return n
        case let other?: throw error(key, "'\(key)' must be a number, found \(other.typeName)")
        }
    }

    /// An optional number within `range`; absent or null is nil.
    func optional(_ key: String, in range: ClosedRange<Double>) throws(TrackError) -> Double? {
        switch object[key] {
        case nil, .null?: return nil
        case .number(let n)?:
            guard range.contains(n) else {
                let bounds =
                    range.upperBound.isInfinite
                    ? (range.lowerBound.isInfinite ? "finite" : ">= \(Self.text(range.lowerBound))")
                    : "\(Self.text(range.lowerBound)) to \(Self.text(range.upperBound))"
                throw error(key, "'\(key)' must be \(bounds), found \(Self.text(n))")
            }
            return n
        case let other?: throw error(key, "'\(key)' must be a number, found \(other.typeName)")
        }
    }

    /// `5` rather than `5.0` for whole numbers.
    static func text(_ n: Double) -> String {
        n == n.rounded() && abs(n) < 1e15 ? String(Int(n)) : String(n)
    }
}
