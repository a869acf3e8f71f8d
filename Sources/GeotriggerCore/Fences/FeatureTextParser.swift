/// A feature's geometry read straight from its text into positions (see ``FeatureTextParser``).
enum ParsedGeometry: Equatable {
    case point(Coordinate)
    case multiPoint([Coordinate])
    case lineString([Coordinate])
    case multiLineString([[Coordinate]])
    case polygon([[Coordinate]])
    case multiPolygon([[[Coordinate]]])
}

/// Reads the text of one element of a fence file's `features` array the quick way: the
/// geometry's coordinates go straight into positions, with no `JSONValue` per array and number
/// (a feature's values are most of the allocations of a load otherwise); the other members
/// are read as values as usual.
///
/// Only the plain case is read this way: a well-formed object with unique keys whose
/// `geometry`, if an object, has its `type` (one of the six supported) before its
/// `coordinates`, nested as the type says, every position 2 or more numbers in range and no
/// list empty, `maxVertices` positions at most. For anything else (a defect to report, or
/// text that is not JSON) ``parse(_:depth:maxVertices:scratch:)`` returns nil and the caller
/// parses the text into a value and reads that (``FeatureReader/read(_:)``), so every message
/// stays worded and ordered as it always was.
enum FeatureTextParser {
    /// The feature in `bytes` (exactly one JSON value, `depth` containers deep in its file):
    /// its members, `geometry` a placeholder if it was read into the second result; nil if it
    /// is not of the plain case. `scratch` is reused between calls (positions collect there
    /// and are copied out in arrays of their exact size).
    static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, depth: Int, maxVertices: Int, scratch: inout [Coordinate]
    ) -> (feature: JSONObject, geometry: ParsedGeometry?)? {
        guard let (feature, geometry, length) = parse(prefixOf: bytes, depth: depth, maxVertices: maxVertices, scratch: &scratch)
        else { return nil }
        var rest = JSONParser(bytes: bytes, file: "", json5: false, recordsNodes: false)
        rest.position = length
        guard (try? rest.skipWhitespace()) != nil, rest.position == bytes.count else { return nil }
        return (feature, geometry)
    }

    /// As above, for a feature at the start of `bytes` that may go on after it (or be cut
    /// short: then nil): also returns the feature's length, up to and with its `}`.
    static func parse(
        prefixOf bytes: UnsafeBufferPointer<UInt8>, depth: Int, maxVertices: Int, scratch: inout [Coordinate]
    ) -> (feature: JSONObject, geometry: ParsedGeometry?, length: Int)? {
        guard bytes.first == UInt8(ascii: "{") else { return nil }
        var parser = JSONParser(bytes: bytes, file: "", json5: false, recordsNodes: false)
        parser.depth = depth
        do throws(JSONSyntaxError) {
            guard let (feature, geometry) = try parser.plainFeature(maxVertices: maxVertices, scratch: &scratch) else { return nil }
            return (feature, geometry, parser.position)
        } catch {
            return nil
        }
    }
}

extension JSONParser {
    /// The feature object at `position` (a `{`): see ``FeatureTextParser``. Nil: not plain.
    fileprivate mutating func plainFeature(
        maxVertices: Int, scratch: inout [Coordinate]
    ) throws(JSONSyntaxError) -> (feature: JSONObject, geometry: ParsedGeometry?)? {
        try enterContainer()
        position += 1
        var entries: [(key: String, value: JSONValue)] = []
        entries.reserveCapacity(4)
        var geometry: ParsedGeometry?
        try skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return (JSONObject(uniqueEntries: entries), nil)
        }
        while true {
            guard let key = try plainKey(), !entries.contains(where: { $0.key == key }) else { return nil }
            if key == "geometry", bytes[position] == UInt8(ascii: "{") {
                guard let g = try plainGeometry(maxVertices: maxVertices, scratch: &scratch) else { return nil }
                geometry = g
                entries.append((key: key, value: .object(JSONObject())))
            } else {
                entries.append((key: key, value: try parseValue(keyOffset: -1)))
            }
            guard let more = try plainSeparator(close: UInt8(ascii: "}")) else { return nil }
            if !more { break }
        }
        depth -= 1
        return (JSONObject(uniqueEntries: entries), geometry)
    }

    /// A member's key and its `:`, leaving `position` at the value; nil if not there.
    private mutating func plainKey() throws(JSONSyntaxError) -> String? {
        try skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
        let key = try parseString()
        try skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
        position += 1
        try skipWhitespace()
        guard position < bytes.count else { return nil }
        return key
    }

    /// After a member or element: true past a `,` (another follows), false past `close`, nil
    /// for anything else.
    private mutating func plainSeparator(close: UInt8) throws(JSONSyntaxError) -> Bool? {
        try skipWhitespace()
        guard position < bytes.count else { return nil }
        let b = bytes[position]
        position += 1
        if b == UInt8(ascii: ",") { return true }
        return b == close ? false : nil
    }

    /// The geometry object at `position`: its `type`, then its `coordinates` read as the type
    /// nests them (other members are read as values and dropped, as ``FeatureReader`` ignores
    /// them). Nil if not plain.
    private mutating func plainGeometry(maxVertices: Int, scratch: inout [Coordinate]) throws(JSONSyntaxError) -> ParsedGeometry? {
        try enterContainer()
        position += 1
        var keys: [String] = []
        var type: String?
        var geometry: ParsedGeometry?
        var vertices = 0
        while true {
            guard let key = try plainKey(), !keys.contains(key) else { return nil }
            keys.append(key)
            if key == "type" {
                guard bytes[position] == UInt8(ascii: "\"") else { return nil }
                type = try parseString()
            } else if key == "coordinates" {
                guard let type, let g = try plainCoordinates(type, vertices: &vertices, scratch: &scratch) else { return nil }
                guard vertices <= maxVertices else { return nil }
                geometry = g
            } else {
                _ = try parseValue(keyOffset: -1)
            }
            guard let more = try plainSeparator(close: UInt8(ascii: "}")) else { return nil }
            if !more { break }
        }
        depth -= 1
        return geometry
    }

    /// The coordinates of a geometry of type `type`; nil for an unsupported type or anything
    /// not plain. Adds the positions read to `vertices`.
    private mutating func plainCoordinates(
        _ type: String, vertices: inout Int, scratch: inout [Coordinate]
    ) throws(JSONSyntaxError) -> ParsedGeometry? {
        switch type {
        case "Point":
            guard let p = try plainPosition() else { return nil }
            vertices += 1
            return .point(p)
        case "MultiPoint":
            return try plainPositions(vertices: &vertices, scratch: &scratch).map { .multiPoint($0) }
        case "LineString":
            return try plainPositions(vertices: &vertices, scratch: &scratch).map { .lineString($0) }
        case "MultiLineString":
            return try plainList { (p: inout JSONParser) throws(JSONSyntaxError) in
                try p.plainPositions(vertices: &vertices, scratch: &scratch)
            }.map { .multiLineString($0) }
        case "Polygon":
            return try plainList { (p: inout JSONParser) throws(JSONSyntaxError) in
                try p.plainPositions(vertices: &vertices, scratch: &scratch)
            }.map { .polygon($0) }
        case "MultiPolygon":
            return try plainList { (p: inout JSONParser) throws(JSONSyntaxError) in
                try p.plainList { (q: inout JSONParser) throws(JSONSyntaxError) in
                    try q.plainPositions(vertices: &vertices, scratch: &scratch)
                }
            }.map { .multiPolygon($0) }
        default:
            return nil
        }
    }

    /// A non-empty array whose elements `element` reads; nil if not plain.
    private mutating func plainList<T>(
        _ element: (inout JSONParser) throws(JSONSyntaxError) -> T?
    ) throws(JSONSyntaxError) -> [T]? {
        guard bytes[position] == UInt8(ascii: "[") else { return nil }
        try enterContainer()
        position += 1
        var items: [T] = []
        while true {
            try skipWhitespace()
            guard position < bytes.count, let item = try element(&self) else { return nil }
            items.append(item)
            guard let more = try plainSeparator(close: UInt8(ascii: "]")) else { return nil }
            if !more { break }
        }
        depth -= 1
        return items
    }

    /// A non-empty array of positions, collected in `scratch` and returned as an array of its
    /// own, of exactly their count (`Array(scratch)`, or of all of it as a slice, would share
    /// scratch's buffer, with all its spare capacity, for as long as the fence lives); nil if
    /// not plain.
    private mutating func plainPositions(vertices: inout Int, scratch: inout [Coordinate]) throws(JSONSyntaxError) -> [Coordinate]? {
        guard bytes[position] == UInt8(ascii: "[") else { return nil }
        try enterContainer()
        position += 1
        scratch.removeAll(keepingCapacity: true)
        while true {
            try skipWhitespace()
            guard position < bytes.count, let p = try plainPosition() else { return nil }
            scratch.append(p)
            guard let more = try plainSeparator(close: UInt8(ascii: "]")) else { return nil }
            if !more { break }
        }
        depth -= 1
        vertices += scratch.count
        return [Coordinate](unsafeUninitializedCapacity: scratch.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: scratch)
        }
    }

    /// A position `[longitude, latitude, ...]` of numbers only, in range; nil if not plain.
    private mutating func plainPosition() throws(JSONSyntaxError) -> Coordinate? {
        guard bytes[position] == UInt8(ascii: "[") else { return nil }
        try enterContainer()
        position += 1
        var lon = 0.0, lat = 0.0
        var count = 0
        while true {
            try skipWhitespace()
            guard position < bytes.count else { return nil }
            let b = bytes[position]
            guard b == UInt8(ascii: "-") || JSONParser.isDigit(b) else { return nil }
            let n = try parseNumber()
            if count == 0 { lon = n } else if count == 1 { lat = n }
            count += 1
            guard let more = try plainSeparator(close: UInt8(ascii: "]")) else { return nil }
            if !more { break }
        }
        depth -= 1
        guard count >= 2, lon >= -180 && lon <= 180, lat >= -90 && lat <= 90 else { return nil }
        return Coordinate(lat: lat, lon: lon)
    }
}
