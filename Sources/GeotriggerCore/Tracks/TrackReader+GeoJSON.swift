extension TrackReader {
    /// GeoJSON (RFC 7946): a LineString or MultiLineString geometry, a Feature of one, or a
    /// FeatureCollection of them (Point and MultiPoint features, such as waypoints, are
    /// skipped; the lines of a MultiLineString or of several features follow each other).
    /// Positions are `[lon, lat]` or `[lon, lat, altitude]`. Per-position times come from
    /// `properties.coordTimes` or `properties.times` (togeojson's names) or
    /// `properties.coordinateProperties.times`: ISO-8601 strings or epoch seconds, one per
    /// position (an array per line for a MultiLineString). The device is
    /// `properties.device`, else `properties.name`.
    static func readGeoJSON(_ bytes: [UInt8], file: String) throws(TrackError) -> Track {
        let document: JSONDocument
        do {
            document = try JSONReader.parse(bytes, file: file, dialect: .json)
        } catch {
            throw TrackError(file: file, line: error.location.line, column: error.location.column, message: error.message)
        }
        var reader = GeoJSONTrackReader(document: document)
        try reader.read()
        guard !reader.points.isEmpty else {
            throw TrackError(
                file: file, message: "no LineString or MultiLineString: expected a route or track line (positions [lon, lat])")
        }
        return Track(points: reader.points)
    }
}

/// Walks a GeoJSON document for its lines, naming features in errors as fence files do
/// (`feature 2 ("Morning walk")`).
private struct GeoJSONTrackReader {
    let document: JSONDocument
    var points: [TrackPoint] = []

    init(document: JSONDocument) { self.document = document }

    private static let expected = "a LineString or MultiLineString, or a Feature or FeatureCollection of them"

    mutating func read() throws(TrackError) {
        let root = document.value
        guard let object = root.objectValue else {
            throw error([], nil, "expected a GeoJSON object (\(Self.expected)), found \(root.typeName)")
        }
        switch object["type"] {
        case .string("FeatureCollection")?:
            guard let features = object["features"]?.arrayValue else {
                throw error([.key("features")], nil, "a FeatureCollection needs a 'features' array")
            }
            for index in features.indices {
                try readFeature(features[index], path: [.key("features"), .index(index)], index: index, inCollection: true)
            }
        case .string("Feature")?:
            try readFeature(root, path: [], index: nil, inCollection: false)
        case .string("LineString")?, .string("MultiLineString")?:
            try readGeometry(object, path: [], context: nil, device: nil, times: nil, timesPath: [])
        case .string(let other)?:
            throw error([.key("type")], nil, "a track is \(Self.expected); found \(other)")
        default:
            throw error([.key("type")], nil, "expected a 'type' string (\(Self.expected))")
        }
    }

    private mutating func readFeature(
        _ value: JSONValue, path: [JSONPathComponent], index: Int?, inCollection: Bool
    ) throws(TrackError) {
        var context = index.map { "feature \($0)" } ?? "the feature"
        guard let feature = value.objectValue, feature["type"] == .string("Feature") else {
            throw error(path, context, "expected a Feature object")
        }
        let properties = feature["properties"]?.objectValue
        let name = properties?["name"]?.stringValue
        if let name { context += " (\"\(name)\")" }
        guard let geometry = feature["geometry"]?.objectValue else {
            if inCollection, feature["geometry"] == .null { return }
            throw error(path + [.key("geometry")], context, "expected a geometry object (LineString or MultiLineString)")
        }
        switch geometry["type"] {
        case .string("LineString")?, .string("MultiLineString")?:
            break
        case .string("Point")? where inCollection, .string("MultiPoint")? where inCollection:
            return
        case .string(let other)?:
            throw error(
                path + [.key("geometry"), .key("type")], context,
                "a track is a LineString or MultiLineString, found \(other)")
        default:
            throw error(path + [.key("geometry")], context, "expected a geometry 'type' string")
        }
        var times: JSONValue?
        var timesPath = path + [.key("properties")]
        for key in ["coordTimes", "times"] where times == nil {
            if let value = properties?[key], value != .null {
                times = value
                timesPath.append(.key(key))
            }
        }
        if times == nil, let value = properties?["coordinateProperties"]?.objectValue?["times"] {
            times = value
            timesPath += [.key("coordinateProperties"), .key("times")]
        }
        let device = properties?["device"]?.stringValue ?? name
        try readGeometry(
            geometry, path: path + [.key("geometry")], context: context, device: device, times: times, timesPath: timesPath)
    }

    private mutating func readGeometry(
        _ geometry: JSONObject, path: [JSONPathComponent], context: String?, device: String?,
        times: JSONValue?, timesPath: [JSONPathComponent]
    ) throws(TrackError) {
        let coordinatesPath = path + [.key("coordinates")]
        guard let coordinates = geometry["coordinates"]?.arrayValue else {
            throw error(coordinatesPath, context, "expected a 'coordinates' array")
        }
        if geometry["type"] == .string("LineString") {
            try readLine(coordinates, path: coordinatesPath, context: context, device: device, times: times, timesPath: timesPath)
            return
        }
        var lineTimes: [JSONValue]?
        if let times {
            guard let array = times.arrayValue, array.count == coordinates.count,
                array.allSatisfy({ $0.arrayValue != nil })
            else {
                throw error(
                    timesPath, context,
                    "expected one array of times per line of the MultiLineString (\(coordinates.count))")
            }
            lineTimes = array
        }
        for index in coordinates.indices {
            guard let line = coordinates[index].arrayValue else {
                throw error(coordinatesPath + [.index(index)], context, "expected an array of positions")
            }
            try readLine(
                line, path: coordinatesPath + [.index(index)], context: context, device: device,
                times: lineTimes?[index], timesPath: timesPath + [.index(index)])
        }
    }

    private mutating func readLine(
        _ positions: [JSONValue], path: [JSONPathComponent], context: String?, device: String?,
        times: JSONValue?, timesPath: [JSONPathComponent]
    ) throws(TrackError) {
        var timeValues: [JSONValue]?
        if let times {
            guard let array = times.arrayValue else {
                throw error(timesPath, context, "expected an array of times (ISO-8601 strings or epoch seconds)")
            }
            guard array.count == positions.count else {
                throw error(
                    timesPath, context,
                    "\(timesPath.pathString) has \(array.count) time\(array.count == 1 ? "" : "s") for \(positions.count) position\(positions.count == 1 ? "" : "s")"
                )
            }
            timeValues = array
        }
        for index in positions.indices {
            let positionPath = path + [.index(index)]
            guard let position = positions[index].arrayValue, position.count >= 2, position.count <= 3,
                let lon = position[0].numberValue, let lat = position[1].numberValue
            else {
                throw error(
                    positionPath, context,
                    "\(positionPath.pathString): expected a position [lon, lat] or [lon, lat, altitude] of numbers")
            }
            if let problem = TrackReader.checkPosition(lat: lat, lon: lon) {
                throw error(positionPath, context, "\(positionPath.pathString): \(problem)")
            }
            var point = TrackPoint(device: device, lat: lat, lon: lon)
            if position.count == 3 {
                guard let altitude = position[2].numberValue else {
                    throw error(positionPath, context, "\(positionPath.pathString): the altitude must be a number")
                }
                point.altitude = altitude
            }
            if let timeValues {
                guard let time = TrackReader.time(timeValues[index]) else {
                    throw error(
                        timesPath + [.index(index)], context,
                        "\((timesPath + [.index(index)]).pathString): expected an ISO-8601 time (2026-11-30T12:00:00Z) or epoch seconds, found \(timeValues[index].serialized())"
                    )
                }
                point.time = time
            }
            points.append(point)
        }
    }

    /// An error located at the value at `path` (or the nearest enclosing value that exists).
    private func error(_ path: [JSONPathComponent], _ context: String?, _ message: String) -> TrackError {
        var path = path
        var location = document.valueLocation(of: path)
        while location == nil, !path.isEmpty {
            path.removeLast()
            location = document.valueLocation(of: path)
        }
        return TrackError(
            file: document.file, line: location?.line, column: location?.column,
            message: context.map { "\($0): \(message)" } ?? message)
    }
}
