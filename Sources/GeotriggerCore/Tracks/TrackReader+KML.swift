extension TrackReader {
    /// KML 2.2 with Google's extensions: every `gx:Track` is a part (the ones of a
    /// `gx:MultiTrack` follow each other as parts of their own), its `<when>` times paired in
    /// order with its `<gx:coord>` positions (`lon lat [alt]`, space-separated); the device is
    /// the enclosing `Placemark`'s `<name>`. A `LineString` (`<coordinates>` of `lon,lat[,alt]`
    /// tuples) is a route, read only from a file without tracks; `Point` placemarks are listed
    /// in ``Track/ignored``. `gx:angles`, `ExtendedData`, styles and anything else are not
    /// read. KMZ (a zipped KML) is not read: unzip it first.
    static func readKML(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        var reader = KMLReader(file: file)
        var scanner = XMLScanner(bytes, file: file)
        try scanner.scan { event, line throws(TrackError) in try reader.handle(event, line: line) }
        guard reader.sawRoot else {
            throw TrackError(file: file, message: "expected a KML document (a <kml> root element), found no elements")
        }
        var ignored: [String] = []
        if reader.pointPlacemarks > 0 {
            let n = reader.pointPlacemarks
            ignored.append("\(n) placemark\(n == 1 ? "" : "s") with a Point")
        }
        guard let track = recordings(points: reader.points, parts: reader.parts, ignored: ignored, routeWord: "LineString") else {
            throw TrackError(
                file: file, message: "no track points: expected a <gx:Track> of <when> and <gx:coord> elements, or a <LineString>")
        }
        return track
    }
}

/// The state of reading KML events.
private struct KMLReader {
    let file: String
    var points: [TrackPoint] = []
    var parts: [TrackPart] = []
    var sawRoot = false
    var pointPlacemarks = 0
    var stack: [String] = []
    var text = ""
    /// The enclosing placemark's name.
    var placemarkName: String?
    /// The `gx:Track` being read: its line, times and positions.
    var track: (line: Int, times: [Double], coordinates: [(lat: Double, lon: Double, altitude: Double?)])?
    var counts: [TrackPart.Kind: Int] = [:]

    init(file: String) { self.file = file }

    mutating func handle(_ event: XMLScanner.Event, line: Int) throws(TrackError) {
        switch event {
        case .start(let name, _):
            if !sawRoot {
                guard name == "kml" else {
                    throw TrackError(file: file, line: line, message: "expected a <kml> root element, found <\(name)>")
                }
                sawRoot = true
            }
            switch name {
            case "Placemark": placemarkName = nil
            case "Track": track = (line, [], [])
            case "Point" where stack.last == "Placemark": pointPlacemarks += 1
            default: break
            }
            stack.append(name)
            text = ""
        case .text(let s):
            text += s
        case .end(let name):
            guard let open = stack.lastIndex(of: name) else { return }
            let endLine = line
            stack.removeSubrange(open...)
            let value = text.trimmingSpaces
            text = ""
            switch name {
            case "name" where stack.last == "Placemark":
                placemarkName = value.isEmpty ? nil : value
            case "when" where track != nil:
                guard let t = ISO8601Time.parse(value) else {
                    throw TrackError(
                        file: file, line: endLine,
                        message: "expected <when> to hold an ISO-8601 time (2026-11-30T12:00:00Z), found '\(value)'")
                }
                track?.times.append(t)
            case "coord" where track != nil:
                let fields = value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" })
                guard fields.count == 2 || fields.count == 3, let lon = Double(fields[0]), let lat = Double(fields[1]),
                    lon.isFinite, lat.isFinite
                else {
                    throw TrackError(
                        file: file, line: endLine, message: "expected <gx:coord> to hold 'lon lat' or 'lon lat altitude', found '\(value)'")
                }
                if let problem = TrackReader.checkPosition(lat: lat, lon: lon) {
                    throw TrackError(file: file, line: endLine, message: "gx:coord: \(problem)")
                }
                track?.coordinates.append((lat, lon, fields.count == 3 ? Double(fields[2]) : nil))
            case "Track":
                guard let open = track else { return }
                track = nil
                guard open.times.count == open.coordinates.count else {
                    throw TrackError(
                        file: file, line: open.line,
                        message: "gx:Track\(placemarkName.map { " (\"\($0)\")" } ?? ""): expected one <when> per <gx:coord>, "
                            + "found \(open.times.count) <when> and \(open.coordinates.count) <gx:coord>")
                }
                let from = points.count
                for (time, c) in zip(open.times, open.coordinates) {
                    points.append(TrackPoint(device: placemarkName, lat: c.lat, lon: c.lon, time: time, altitude: c.altitude))
                }
                addPart(.track, line: open.line, from: from)
            case "coordinates" where stack.last == "LineString":
                let from = points.count
                for tuple in value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) {
                    let fields = tuple.split(separator: ",", omittingEmptySubsequences: false)
                    guard fields.count == 2 || fields.count == 3, let lon = Double(fields[0]), let lat = Double(fields[1]),
                        lon.isFinite, lat.isFinite
                    else {
                        throw TrackError(
                            file: file, line: endLine,
                            message: "expected <coordinates> to hold 'lon,lat' or 'lon,lat,altitude' tuples, found '\(tuple)'")
                    }
                    if let problem = TrackReader.checkPosition(lat: lat, lon: lon) {
                        throw TrackError(file: file, line: endLine, message: "coordinates: \(problem)")
                    }
                    points.append(
                        TrackPoint(device: placemarkName, lat: lat, lon: lon, altitude: fields.count == 3 ? Double(fields[2]) : nil))
                }
                addPart(.route, line: endLine, from: from)
            default: break
            }
        }
    }

    private mutating func addPart(_ kind: TrackPart.Kind, line: Int, from: Int) {
        let number = (counts[kind] ?? 0) + 1
        counts[kind] = number
        parts.append(TrackPart(kind: kind, number: number, name: placemarkName, line: line, points: from..<points.count))
    }
}
