/// Reads one GeoJSON Feature of a fence layer, collecting its defects.
struct FeatureReader {
    let file: String
    let layer: String
    let index: Int
    /// `fences.maxVertices`: a feature with more positions is rejected before its geometry is read.
    let maxVertices: Int
    /// The fence id, once read (also when the feature has other defects, for duplicate checks).
    private(set) var id: String?
    /// `properties.name`, once read.
    private(set) var name: String?
    private(set) var errors: [FenceError] = []
    private var coordinateErrors = 0
    private var reportedNesting = false

    init(file: String, layer: String, index: Int, maxVertices: Int = FenceLayerParser.defaultMaxVertices) {
        self.file = file
        self.layer = layer
        self.index = index
        self.maxVertices = maxVertices
    }

    mutating func error(_ message: String) {
        errors.append(FenceError(file: file, featureIndex: index, featureName: name, message: message))
    }

    /// Reads the feature; nil if it has any defect (all of them are in `errors`).
    mutating func read(_ value: JSONValue) -> Fence? {
        guard case .object(let feature) = value else {
            error("not a GeoJSON Feature (found \(value.typeName))")
            return nil
        }
        return read(feature, geometry: nil)
    }

    /// Reads the feature `feature`; `parsed`: its geometry as ``FeatureTextParser`` read it
    /// from the text (then `feature`'s `geometry` member is only a placeholder), else nil and
    /// the geometry is read from `feature`. Either way the same checks run in the same order.
    mutating func read(_ feature: JSONObject, geometry parsed: ParsedGeometry?) -> Fence? {
        var properties = JSONObject()
        switch feature["properties"] {
        case nil, .null?: break
        case .object(let p)?: properties = p
        case let other?: error("\"properties\" must be an object or null, found \(other.typeName)")
        }
        switch properties["name"] {
        case nil, .null?: break
        case .string(let s)?: name = s
        case let other?: error("properties.name must be a string, found \(other.typeName)")
        }
        switch feature["type"] {
        case .string("Feature")?: break
        case .string(let other)?: error("not a GeoJSON Feature (\"type\" is \"\(other)\")")
        case nil: error("not a GeoJSON Feature (\"type\" is missing)")
        case let other?: error("not a GeoJSON Feature (\"type\" is \(other.typeName))")
        }
        readID(feature: feature, properties: properties)

        var buffer: Double?
        switch properties["buffer"] {
        case nil, .null?: break
        case .number(let b)? where b >= 0 && b.isFinite: buffer = b
        case .number(let b)?: error("properties.buffer must be a number >= 0 (metres), found \(FeatureReader.format(b))")
        case let other?: error("properties.buffer must be a number >= 0 (metres), found \(other.typeName)")
        }

        let geometry: FenceGeometry?
        switch feature["geometry"] {
        case _ where parsed != nil:
            geometry = readGeometry(parsed!)
        case nil:
            error("missing \"geometry\"")
            geometry = nil
        case .null?:
            error("geometry is null: a fence needs a geometry")
            geometry = nil
        case let g?:
            geometry = readGeometry(g)
        }
        guard let geometry, let id, errors.isEmpty else { return nil }
        return Fence(
            id: id, layer: layer, name: name, properties: properties, geometry: geometry, buffer: buffer,
            featureIndex: index)
    }

    /// id = the Feature's `id`, else `properties.id`; numbers become decimal strings.
    mutating func readID(feature: JSONObject, properties: JSONObject) {
        let (value, member) =
            if let v = feature["id"], v != .null { (v, "id") } else { (properties["id"] ?? .null, "properties.id") }
        switch value {
        case .null:
            error("missing id: give the Feature an \"id\" or set properties.id")
        case .string(let s) where !s.isEmpty:
            id = s
        case .string:
            error("\(member) must not be empty")
        case .number(let n):
            id = FeatureReader.format(n)
        default:
            error("\(member) must be a string or a number, found \(value.typeName)")
        }
    }

    /// A number as the contract writes it: `7`, `7.5`.
    static func format(_ n: Double) -> String {
        var s = ""
        JSONValue.writeNumber(n, to: &s)
        return s
    }

    // MARK: Geometry

    mutating func readGeometry(_ value: JSONValue) -> FenceGeometry? {
        guard case .object(let g) = value else {
            error("geometry must be an object, found \(value.typeName)")
            return nil
        }
        guard case .string(let type)? = g["type"] else {
            error("geometry has no \"type\" string")
            return nil
        }
        let supported = ["Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon"]
        guard supported.contains(type) else {
            if type == "GeometryCollection" {
                error("GeometryCollection is not supported: use a MultiPolygon, MultiPoint or MultiLineString, or one feature per part")
            } else {
                error("unsupported geometry type \"\(type)\" (expected Polygon, MultiPolygon, Point, MultiPoint, LineString or MultiLineString)")
            }
            return nil
        }
        guard let coordinates = g["coordinates"] else {
            error("\(type) has no \"coordinates\"")
            return nil
        }
        let nesting = ["Point": 0, "MultiPoint": 1, "LineString": 1, "MultiLineString": 2, "Polygon": 2][type] ?? 3
        let vertices = FeatureReader.positionCount(coordinates, nesting: nesting)
        guard vertices <= maxVertices else {
            error("\(type) has \(vertices) positions, more than fences.maxVertices (\(maxVertices)) allows")
            return nil
        }
        let before = errors.count
        let geometry: FenceGeometry?
        switch type {
        case "Point":
            geometry = position(coordinates, "coordinates").map { .points([$0]) }
        case "MultiPoint":
            geometry = list(coordinates, "coordinates", type, what: "points") { $0.position($1, $2) }.map { .points($0) }
        case "LineString":
            geometry = line(coordinates, "coordinates", label: "LineString").map { .lines([$0]) }
        case "MultiLineString":
            geometry = list(coordinates, "coordinates", type, what: "lines") { r, v, p in
                r.line(v, p, label: "MultiLineString line \(r.lastIndex(p))")
            }.map { .lines($0) }
        case "Polygon":
            geometry = polygon(coordinates, "coordinates", label: "Polygon").map { .polygons([$0]) }
        default:
            geometry = list(coordinates, "coordinates", type, what: "polygons") { r, v, p in
                r.polygon(v, p, label: "MultiPolygon polygon \(r.lastIndex(p))")
            }.map { .polygons($0) }
        }
        if coordinateErrors > FeatureReader.shownCoordinateErrors {
            error("\(coordinateErrors - FeatureReader.shownCoordinateErrors) more coordinate errors not shown")
        }
        return errors.count == before ? geometry : nil
    }

    /// The geometry as ``FeatureTextParser`` read it: positions all valid, no list empty, at
    /// most `maxVertices` of them; what remains are the checks of ``line(_:_:label:)`` and
    /// ``polygon(_:_:label:)`` on the positions, with the same labels.
    mutating func readGeometry(_ parsed: ParsedGeometry) -> FenceGeometry? {
        let before = errors.count
        let geometry: FenceGeometry?
        switch parsed {
        case .point(let position):
            geometry = .points([position])
        case .multiPoint(let points):
            geometry = .points(points)
        case .lineString(let points):
            geometry = checkedLine(points, label: "LineString").map { .lines([$0]) }
        case .multiLineString(let lines):
            var out: [[Coordinate]] = []
            out.reserveCapacity(lines.count)
            for (i, points) in lines.enumerated() {
                if let line = checkedLine(points, label: "MultiLineString line \(i)") { out.append(line) }
            }
            geometry = out.count == lines.count ? .lines(out) : nil
        case .polygon(let rings):
            geometry = polygon(rings: rings, label: "Polygon").map { .polygons([$0]) }
        case .multiPolygon(let polygons):
            var out: [Polygon] = []
            out.reserveCapacity(polygons.count)
            for (i, rings) in polygons.enumerated() {
                if let polygon = polygon(rings: rings, label: "MultiPolygon polygon \(i)") { out.append(polygon) }
            }
            geometry = out.count == polygons.count ? .polygons(out) : nil
        }
        return errors.count == before ? geometry : nil
    }

    /// A polygon of rings already read (see ``polygon(_:_:label:)``).
    mutating func polygon(rings: [[Coordinate]], label: String) -> Polygon? {
        var ok = true
        for (i, ring) in rings.enumerated() where !checkRing(ring, i, label: label) { ok = false }
        guard ok else { return nil }
        return checkedPolygon(rings, label: label)
    }

    static let shownCoordinateErrors = FenceLayerParser.coordinateErrorsShown

    /// How many positions `value` holds as coordinates `nesting` arrays deep (0: one position);
    /// what is not an array where one is expected counts nothing (reading reports it).
    static func positionCount(_ value: JSONValue, nesting: Int) -> Int {
        guard nesting > 0 else { return 1 }
        guard case .array(let items) = value else { return 0 }
        if nesting == 1 { return items.count }
        return items.reduce(0) { $0 + positionCount($1, nesting: nesting - 1) }
    }

    /// The number in brackets at the end of a path (`coordinates[2]` → 2).
    func lastIndex(_ path: String) -> String {
        guard let open = path.lastIndex(of: "[") else { return path }
        return String(path[path.index(after: open)...].dropLast())
    }

    /// A wrong nesting level repeats for every element: only the first is reported.
    mutating func nestingError(_ message: String) {
        guard !reportedNesting else { return }
        reportedNesting = true
        coordinateError(message)
    }

    mutating func coordinateError(_ message: String) {
        coordinateErrors += 1
        if coordinateErrors <= FeatureReader.shownCoordinateErrors { error(message) }
    }

    /// Reads a non-empty array whose elements `element` reads; nil if any is bad.
    mutating func list<T>(
        _ value: JSONValue, _ path: String, _ type: String, what: String,
        _ element: (inout FeatureReader, JSONValue, String) -> T?
    ) -> [T]? {
        guard case .array(let items) = value else {
            nestingError("\(path): expected an array of \(what), found \(value.typeName)")
            return nil
        }
        guard !items.isEmpty else {
            error("\(type) has no \(what)")
            return nil
        }
        var out: [T] = []
        out.reserveCapacity(items.count)
        var ok = true
        for (i, item) in items.enumerated() {
            if let v = element(&self, item, "\(path)[\(i)]") { out.append(v) } else { ok = false }
        }
        return ok ? out : nil
    }

    /// A position `[longitude, latitude, (altitude...)]` in range.
    mutating func position(_ value: JSONValue, _ path: String) -> Coordinate? {
        guard case .array(let numbers) = value else {
            nestingError("\(path): expected a position [longitude, latitude], found \(value.typeName)")
            return nil
        }
        guard numbers.count >= 2 else {
            coordinateError("\(path): expected a position [longitude, latitude], found \(numbers.count) number\(numbers.count == 1 ? "" : "s")")
            return nil
        }
        for (k, n) in numbers.enumerated() {
            guard case .number = n else {
                coordinateError("\(path)[\(k)]: expected a number, found \(n.typeName)")
                return nil
            }
        }
        let lon = numbers[0].numberValue!, lat = numbers[1].numberValue!
        guard lon >= -180 && lon <= 180 else {
            coordinateError("\(path): longitude \(FeatureReader.format(lon)) is out of range (-180 to 180)")
            return nil
        }
        guard lat >= -90 && lat <= 90 else {
            let swapped = abs(lon) <= 90 && abs(lat) <= 180 ? " (are longitude and latitude swapped? GeoJSON writes [longitude, latitude])" : ""
            coordinateError("\(path): latitude \(FeatureReader.format(lat)) is out of range (-90 to 90)\(swapped)")
            return nil
        }
        return Coordinate(lat: lat, lon: lon)
    }

    /// An array of positions, all valid.
    mutating func positions(_ value: JSONValue, _ path: String) -> [Coordinate]? {
        guard case .array(let items) = value else {
            nestingError("\(path): expected an array of positions, found \(value.typeName)")
            return nil
        }
        var out: [Coordinate] = []
        out.reserveCapacity(items.count)
        var ok = true
        for (i, item) in items.enumerated() {
            if let c = position(item, "\(path)[\(i)]") { out.append(c) } else { ok = false }
        }
        return ok ? out : nil
    }

    mutating func line(_ value: JSONValue, _ path: String, label: String) -> [Coordinate]? {
        guard let points = positions(value, path) else { return nil }
        return checkedLine(points, label: label)
    }

    /// A line's positions, if there are at least 2.
    mutating func checkedLine(_ points: [Coordinate], label: String) -> [Coordinate]? {
        guard points.count >= 2 else {
            error("\(label) has \(points.count) position\(points.count == 1 ? "" : "s"), needs at least 2")
            return nil
        }
        return points
    }

    /// A polygon: rings closed, >= 4 positions, with area, not crossing themselves or each other.
    mutating func polygon(_ value: JSONValue, _ path: String, label: String) -> Polygon? {
        guard case .array(let ringValues) = value else {
            nestingError("\(path): expected an array of rings, found \(value.typeName)")
            return nil
        }
        guard !ringValues.isEmpty else {
            error("\(label) has no rings")
            return nil
        }
        var rings: [[Coordinate]] = []
        var ok = true
        for (i, ringValue) in ringValues.enumerated() {
            guard let ring = positions(ringValue, "\(path)[\(i)]") else {
                ok = false
                continue
            }
            if !checkRing(ring, i, label: label) { ok = false }
            rings.append(ring)
        }
        guard ok else { return nil }
        return checkedPolygon(rings, label: label)
    }

    /// Ring `i` of a polygon has at least 4 positions and is closed.
    mutating func checkRing(_ ring: [Coordinate], _ i: Int, label: String) -> Bool {
        let name = "\(label) ring \(i)\(i > 0 ? " (a hole)" : "")"
        if ring.count < 4 {
            error("\(name) has \(ring.count) position\(ring.count == 1 ? "" : "s"), a ring needs at least 4 (the last repeating the first)")
            return false
        } else if ring.first != ring.last {
            error("\(name) is not closed: its last position must repeat the first")
            return false
        }
        return true
    }

    /// The polygon of `rings` (each passed ``checkRing(_:_:label:)``), if they neither cross
    /// themselves or each other nor lack area.
    mutating func checkedPolygon(_ rings: [[Coordinate]], label: String) -> Polygon? {
        // Crossings first: a bow tie has zero signed area too, but "intersects itself" says why.
        if let hit = RingIntersectionFinder.find(in: rings) {
            let near = "[\(FeatureReader.format(FeatureReader.round(hit.point.lon))), \(FeatureReader.format(FeatureReader.round(hit.point.lat)))]"
            if hit.ringA == hit.ringB {
                error(
                    "\(label) ring \(hit.ringA) intersects itself near \(near) (the edges from positions \(hit.positionA) and \(hit.positionB))")
            } else {
                error(
                    "\(label) rings \(hit.ringA) and \(hit.ringB) cross near \(near) (the edge from position \(hit.positionA) of ring \(hit.ringA) and the edge from position \(hit.positionB) of ring \(hit.ringB))")
            }
            return nil
        }
        for (i, ring) in rings.enumerated() where FeatureReader.area(ring) == 0 {
            error("\(label) ring \(i)\(i > 0 ? " (a hole)" : "") has no area (its positions lie on one line)")
            return nil
        }
        return Polygon(exterior: rings[0], holes: Array(rings.dropFirst()))
    }

    /// Rounds degrees to 7 decimals (about 1 cm) for messages.
    static func round(_ degrees: Double) -> Double { (degrees * 1e7).rounded() / 1e7 }

    /// Twice the signed area in square degrees (shoelace), relative to the first position.
    static func area(_ ring: [Coordinate]) -> Double {
        let o = ring[0]
        var sum = 0.0
        for i in 1..<(ring.count - 1) {
            let a = ring[i], b = ring[i + 1]
            sum += (a.lon - o.lon) * (b.lat - o.lat) - (b.lon - o.lon) * (a.lat - o.lat)
        }
        return sum
    }
}
