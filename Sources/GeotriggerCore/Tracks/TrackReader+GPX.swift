extension TrackReader {
    /// GPX 1.0 / 1.1 as devices and apps write it. Every `trk` is a part (``TrackPart``) whose
    /// `trkpt`s, over all its `trkseg`s, follow each other; its `<name>` becomes the points'
    /// device. A point has `lat` and `lon` attributes and, as direct children, optional
    /// `<time>`, `<ele>`, `<hdop>` (accuracy ≈ HDOP × ``TrackPoint/metresPerHDOP``), `<speed>`
    /// (m/s) and `<course>` (degrees); `speed` and `course` are also taken from `<extensions>`
    /// (Garmin's TrackPointExtension) when they hold a number. Any other extension is ignored,
    /// as are waypoints (`wpt`), and routes (`rte`) in a file that has track points: they are
    /// listed in ``Track/ignored``. A file with routes only (a planned route) reads its `rtept`s.
    static func readGPX(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var reader = GPXReader(file: file)
        var scanner = XMLScanner(bytes, file: file)
        try scanner.scan { event, line throws(TrackError) in try reader.handle(event, line: line) }
        guard reader.sawRoot else {
            throw TrackError(file: file, message: "expected a GPX document (a <gpx> root element), found no elements")
        }
        reader.closePart()
        return try reader.track()
    }
}

/// The state of reading GPX events: the open elements, the point being read and the track or
/// route it belongs to.
private struct GPXReader {
    let file: String
    var points: [TrackPoint] = []
    var parts: [TrackPart] = []
    var sawRoot = false
    var waypoints = 0
    /// Local names of the open elements.
    var stack: [String] = []
    /// Text of the innermost open element.
    var text = ""
    /// The `trk` or `rte` being read.
    var part: TrackPart?
    /// The point being read, its element name, number (1-based per element name) and line.
    var point: TrackPoint?
    var pointElement = ""
    var pointLine = 0
    var counts: [String: Int] = [:]

    init(file: String) { self.file = file }

    /// The points of the tracks (or, without tracks, of the routes), what was ignored, or an
    /// error if there is no point at all.
    func track() throws(TrackError) -> Track {
        var ignored: [String] = []
        if waypoints > 0 { ignored.append("\(waypoints) waypoint\(waypoints == 1 ? "" : "s") (wpt)") }
        guard
            let track = TrackReader.recordings(
                points: points, parts: parts, ignored: ignored, routeWord: "rte")
        else {
            throw TrackError(
                file: file,
                message: "no track points: expected <trkpt lat=\"…\" lon=\"…\"> or <rtept> elements"
                    + (waypoints > 0 ? " (waypoints, <wpt>, are not a track)" : ""))
        }
        return track
    }

    mutating func handle(_ event: XMLScanner.Event, line: Int) throws(TrackError) {
        switch event {
        case .start(let name, let attributes):
            if !sawRoot {
                guard name == "gpx" else {
                    throw TrackError(file: file, line: line, message: "expected a <gpx> root element, found <\(name)>")
                }
                sawRoot = true
            }
            if name == "wpt", stack.last == "gpx" { waypoints += 1 }
            if (name == "trk" || name == "rte"), stack.last == "gpx" {
                closePart()
                let kind: TrackPart.Kind = name == "trk" ? .track : .route
                let number = (counts[name] ?? 0) + 1
                counts[name] = number
                part = TrackPart(kind: kind, number: number, line: line, points: points.count..<points.count)
            }
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
                if part == nil {
                    // A point outside any trk or rte (not valid GPX, but written): a track of its own.
                    let kind = name == "trkpt" ? "trk" : "rte"
                    let number = (counts[kind] ?? 0) + 1
                    counts[kind] = number
                    part = TrackPart(
                        kind: kind == "trk" ? .track : .route, number: number, line: line, points: points.count..<points.count)
                }
                point = TrackPoint(lat: lat, lon: lon)
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
            if name == "name", let parent = stack.last, parent == "trk" || parent == "rte", stack.count == 2 {
                part?.name = value.isEmpty ? nil : value
                return
            }
            if (name == "trk" || name == "rte"), stack.count == 1 {
                closePart()
                return
            }
            if name == "trkpt" || name == "rtept" {
                if let point {
                    points.append(point)
                    if let from = part?.points.lowerBound { part?.points = from..<points.count }
                }
                point = nil
                return
            }
            guard point != nil, let parent = stack.last else { return }
            // A value of the point itself, or one of an extension (Garmin's TrackPointExtension
            // holds speed and course); other extensions are not read.
            let direct = parent == pointElement
            let inExtension = stack.contains("extensions")
            guard direct || (inExtension && (name == "speed" || name == "course")) else { return }
            let what = "\(pointElement) \(counts[pointElement] ?? 0)"
            func number(unit: String) throws(TrackError) -> Double? {
                guard let n = Double(value), n.isFinite else {
                    if !direct { return nil }  // an extension's own vocabulary: not ours to judge
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
            case "hdop": point?.accuracy = try number(unit: "dilution of precision").map { $0 * TrackPoint.metresPerHDOP }
            case "speed": if let n = try number(unit: "metres per second") { point?.speed = n }
            case "course": if let n = try number(unit: "degrees") { point?.heading = n }
            default: break
            }
        }
    }

    /// Ends the part being read (at its end tag, at the next part or at the end of the file),
    /// giving its points its name as their device.
    mutating func closePart() {
        guard let open = part else { return }
        for i in open.points { points[i].device = open.name }
        parts.append(open)
        part = nil
    }
}

extension TrackReader {
    /// The track of a file's `points` in `parts`: a file with recordings (tracks,
    /// activities) keeps only those, its routes listed in `ignored` (`routeWord` names their
    /// element); a file of routes only keeps its routes. Parts without points are listed in
    /// `ignored` too. Nil when no point is left.
    static func recordings(points: [TrackPoint], parts: [TrackPart], ignored: [String], routeWord: String) -> Track? {
        var ignored = ignored
        let recorded = parts.filter { $0.kind != .route }.reduce(0) { $0 + $1.points.count }
        let routes = parts.filter { $0.kind == .route }
        var kept = parts
        var keptPoints = points
        if recorded > 0, !routes.isEmpty {
            let routePoints = routes.reduce(0) { $0 + $1.points.count }
            ignored.append(
                "\(routes.count) route\(routes.count == 1 ? "" : "s") (\(routeWord), \(routePoints) point\(routePoints == 1 ? "" : "s")): "
                    + "planned, not recorded")
            keptPoints = []
            kept = []
            for var part in parts where part.kind != .route {
                let from = keptPoints.count
                keptPoints += points[part.points]
                part.points = from..<keptPoints.count
                kept.append(part)
            }
        }
        let empty = kept.filter { $0.points.isEmpty }
        if !empty.isEmpty {
            ignored += empty.map { "\($0.label), which has no points" }
            kept.removeAll { $0.points.isEmpty }
        }
        return keptPoints.isEmpty ? nil : Track(points: keptPoints, parts: kept, ignored: ignored)
    }
}

extension String {
    /// The string without leading and trailing ASCII white space.
    var trimmingSpaces: String {
        let b = Array(utf8)
        let r = TextLines.trimmed(b, 0..<b.count)
        return r.count == b.count ? self : String(decoding: b[r], as: UTF8.self)
    }
}
