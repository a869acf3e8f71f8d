extension TrackReader {
    /// TCX (Garmin Training Center Database v1/v2): every `Activity` is a part whose laps
    /// follow each other; a `Trackpoint` has `Time` and `Position` (`LatitudeDegrees`,
    /// `LongitudeDegrees`), optional `AltitudeMeters` and, in `Extensions`, a `Speed` (m/s)
    /// when it holds a number. Trackpoints without a `Position` (a watch records heart rate or
    /// cadence while it has no fix) are listed in ``Track/ignored``; so are `Course`s in a file
    /// with activities (a file of courses only reads them, named after their `Name`). Other
    /// elements (heart rate, cadence, laps' totals, `Creator`) are not read. Activities have no
    /// name: their points have no device.
    static func readTCX(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var reader = TCXReader(file: file)
        var scanner = XMLScanner(bytes, file: file)
        try scanner.scan { event, line throws(TrackError) in try reader.handle(event, line: line) }
        guard reader.sawRoot else {
            throw TrackError(file: file, message: "expected a TCX document (a <TrainingCenterDatabase> root element), found no elements")
        }
        reader.closePart()
        var ignored: [String] = []
        if reader.withoutPosition > 0 {
            let n = reader.withoutPosition
            ignored.append("\(n) Trackpoint\(n == 1 ? "" : "s") without a Position")
        }
        guard let track = recordings(points: reader.points, parts: reader.parts, ignored: ignored, routeWord: "Course") else {
            throw TrackError(
                file: file,
                message: "no track points: expected <Trackpoint> elements with a <Position> in an <Activity> or <Course>")
        }
        return track
    }
}

/// The state of reading TCX events.
private struct TCXReader {
    let file: String
    var points: [TrackPoint] = []
    var parts: [TrackPart] = []
    var sawRoot = false
    var withoutPosition = 0
    var stack: [String] = []
    var text = ""
    var part: TrackPart?
    /// The trackpoint being read (position filled in as its elements end), its number and line.
    var point: (lat: Double?, lon: Double?, time: Double?, altitude: Double?, speed: Double?)?
    var pointNumber = 0
    var pointLine = 0
    var counts: [TrackPart.Kind: Int] = [:]

    init(file: String) { self.file = file }

    mutating func handle(_ event: XMLScanner.Event, line: Int) throws(TrackError) {
        switch event {
        case .start(let name, _):
            if !sawRoot {
                guard name == "TrainingCenterDatabase" else {
                    throw TrackError(file: file, line: line, message: "expected a <TrainingCenterDatabase> root element, found <\(name)>")
                }
                sawRoot = true
            }
            if name == "Activity" || name == "Course" {
                closePart()
                let kind: TrackPart.Kind = name == "Activity" ? .activity : .route
                let number = (counts[kind] ?? 0) + 1
                counts[kind] = number
                part = TrackPart(kind: kind, number: number, line: line, points: points.count..<points.count)
            }
            if name == "Trackpoint", part != nil {
                pointNumber += 1
                pointLine = line
                point = (nil, nil, nil, nil, nil)
            }
            stack.append(name)
            text = ""
        case .text(let s):
            text += s
        case .end(let name):
            guard let open = stack.lastIndex(of: name) else { return }
            stack.removeSubrange(open...)
            let value = text.trimmingSpaces
            text = ""
            if name == "Name", stack.last == "Course" {
                part?.name = value.isEmpty ? nil : value
                return
            }
            if name == "Activity" || name == "Course" {
                closePart()
                return
            }
            if name == "Trackpoint" {
                defer { point = nil }
                guard let p = point else { return }
                guard let lat = p.lat, let lon = p.lon else {
                    withoutPosition += 1
                    return
                }
                if let problem = TrackReader.checkPosition(lat: lat, lon: lon) {
                    throw TrackError(file: file, line: pointLine, message: "Trackpoint \(pointNumber): \(problem)")
                }
                points.append(TrackPoint(lat: lat, lon: lon, time: p.time, speed: p.speed, altitude: p.altitude))
                if let from = part?.points.lowerBound { part?.points = from..<points.count }
                return
            }
            guard point != nil else { return }
            let what = "Trackpoint \(pointNumber)"
            func number(unit: String) throws(TrackError) -> Double {
                guard let n = Double(value), n.isFinite else {
                    throw TrackError(
                        file: file, line: pointLine, message: "\(what): expected <\(name)> to hold a number (\(unit)), found '\(value)'")
                }
                return n
            }
            switch name {
            case "Time" where stack.last == "Trackpoint":
                guard let t = ISO8601Time.parse(value) else {
                    throw TrackError(
                        file: file, line: pointLine,
                        message: "\(what): expected <Time> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found '\(value)'")
                }
                point?.time = t
            case "LatitudeDegrees" where stack.last == "Position": point?.lat = try number(unit: "decimal degrees")
            case "LongitudeDegrees" where stack.last == "Position": point?.lon = try number(unit: "decimal degrees")
            case "AltitudeMeters" where stack.last == "Trackpoint": point?.altitude = try number(unit: "metres")
            case "Speed" where stack.contains("Extensions"):
                if let n = Double(value), n.isFinite { point?.speed = n }
            default: break
            }
        }
    }

    mutating func closePart() {
        guard let open = part else { return }
        for i in open.points { points[i].device = open.name }
        parts.append(open)
        part = nil
    }
}
