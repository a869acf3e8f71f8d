extension TrackReader {
    /// GPX 1.0 / 1.1: every `trkpt` and `rtept` in document order, with `lat` and `lon`
    /// attributes, and optional `<time>`, `<ele>`, `<hdop>` (accuracy ≈ HDOP ×
    /// ``TrackPoint/metresPerHDOP``), `<speed>` (m/s) and `<course>` (degrees), also when they sit
    /// in `<extensions>` under a namespace prefix. The device is the `<name>` of the enclosing
    /// `trk` or `rte`, if it has one. Waypoints (`wpt`) are not part of a track.
    static func readGPX(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var reader = GPXReader(file: file)
        var scanner = XMLScanner(bytes, file: file)
        try scanner.scan { event, line throws(TrackError) in try reader.handle(event, line: line) }
        guard reader.sawRoot else {
            throw TrackError(file: file, message: "expected a GPX document (a <gpx> root element), found no elements")
        }
        guard !reader.points.isEmpty else {
            throw TrackError(file: file, message: "no track points: expected <trkpt lat=\"…\" lon=\"…\"> or <rtept> elements")
        }
        return Track(points: reader.points)
    }
}

/// The state of reading GPX events: the open elements, the point being read and the name of
/// the track or route it belongs to.
private struct GPXReader {
    let file: String
    var points: [TrackPoint] = []
    var sawRoot = false
    /// Local names of the open elements.
    var stack: [String] = []
    /// Text of the innermost open element.
    var text = ""
    /// `<name>` of the enclosing `trk` or `rte`.
    var containerName: String?
    /// The point being read, its element name, number (1-based per element name) and line.
    var point: TrackPoint?
    var pointElement = ""
    var pointLine = 0
    var counts: [String: Int] = [:]

    init(file: String) { self.file = file }

    mutating func handle(_ event: XMLScanner.Event, line: Int) throws(TrackError) {
        switch event {
        case .start(let name, let attributes):
            if !sawRoot {
                guard name == "gpx" else {
                    throw TrackError(file: file, line: line, message: "expected a <gpx> root element, found <\(name)>")
                }
                sawRoot = true
            }
            if name == "trk" || name == "rte" { containerName = nil }
            if name == "trkpt" || name == "rtept" {
                let number = (counts[name] ?? 0) + 1
                counts[name] = number
                pointElement = name
                pointLine = line
                func coordinate(_ key: String) throws(TrackError) -> Double {
                    guard let text = attributes.first(where: { $0.name == key })?.value else {
                        throw TrackError(
                            file: file, line: line,
                            message: "\(name) \(number): expected a \(key) attribute (decimal degrees)")
                    }
                    guard let value = Double(text.trimmingSpaces), value.isFinite else {
                        throw TrackError(
                            file: file, line: line,
                            message: "\(name) \(number): expected a number in \(key)=\"\(text)\"")
                    }
                    return value
                }
                let lat = try coordinate("lat")
                let lon = try coordinate("lon")
                if let problem = TrackReader.checkPosition(lat: lat, lon: lon) {
                    throw TrackError(file: file, line: line, message: "\(name) \(number): \(problem)")
                }
                point = TrackPoint(device: containerName, lat: lat, lon: lon)
            }
            stack.append(name)
            text = ""
        case .text(let s):
            text += s
        case .end(let name):
            guard let open = stack.lastIndex(of: name) else { return }  // a stray end tag: tolerated
            stack.removeSubrange(open...)
            let value = text.trimmingSpaces
            text = ""
            if name == "name", let parent = stack.last, parent == "trk" || parent == "rte" {
                containerName = value.isEmpty ? nil : value
                return
            }
            if name == "trkpt" || name == "rtept" {
                if let point { points.append(point) }
                point = nil
                return
            }
            guard point != nil else { return }
            let what = "\(pointElement) \(counts[pointElement] ?? 0)"
            func number(unit: String) throws(TrackError) -> Double {
                guard let n = Double(value), n.isFinite else {
                    throw TrackError(
                        file: file, line: pointLine, message: "\(what): expected <\(name)> to hold a number (\(unit)), found '\(value)'")
                }
                return n
            }
            switch name {
            case "time":
                guard let t = ISO8601Time.parse(value) else {
                    throw TrackError(
                        file: file, line: pointLine,
                        message: "\(what): expected <time> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found '\(value)'")
                }
                point?.time = t
            case "ele": point?.altitude = try number(unit: "metres")
            case "hdop": point?.accuracy = try number(unit: "dilution of precision") * TrackPoint.metresPerHDOP
            case "speed": point?.speed = try number(unit: "metres per second")
            case "course": point?.heading = try number(unit: "degrees")
            default: break
            }
        }
    }
}

extension String {
    /// The string without leading and trailing ASCII white space.
    fileprivate var trimmingSpaces: String {
        let b = Array(utf8)
        let r = TextLines.trimmed(b, 0..<b.count)
        return r.count == b.count ? self : String(decoding: b[r], as: UTF8.self)
    }
}
