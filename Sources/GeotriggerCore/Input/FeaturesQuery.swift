/// The `features` query: `{"features": {"bbox": [west, south, east, north], "layers": [...],
/// "limit": N, "offset": N, "partBytes": N}}`, every key optional
/// (docs/control-plane.md "Queries"). The gateway answers with a GeoJSON FeatureCollection of the fences whose bounding
/// box meets `bbox`, `offset` of them skipped (pages: the next page starts where a truncated
/// one ended): one message, or with `partBytes` several of at most that many bytes each
/// (mosquitto's websockets listener sends a large message in 4 KB pieces, one per turn of its
/// loop, so a browser asks for parts of about that size).
public struct FeaturesQuery: Sendable, Equatable {
    /// The area asked, in degrees; nil: everywhere.
    public var bbox: BoundingBox?
    /// The layers asked, as given; nil: every layer.
    public var layers: [String]?
    /// At most this many features (``defaultLimit`` when not given, at most ``maxLimit``).
    public var limit: Int
    /// The first this many of the fences selected are skipped (0 when not given).
    public var offset: Int
    /// The reply in parts of at most this many bytes each (within ``partBytesRange``); nil: one
    /// message.
    public var partBytes: Int?

    public init(
        bbox: BoundingBox? = nil, layers: [String]? = nil, limit: Int = FeaturesQuery.defaultLimit, offset: Int = 0,
        partBytes: Int? = nil
    ) {
        self.bbox = bbox
        self.layers = layers
        self.limit = limit
        self.offset = offset
        self.partBytes = partBytes
    }

    public static let defaultLimit = 2000
    public static let maxLimit = 10_000
    /// Past any fence count a gateway holds.
    public static let maxOffset = 100_000_000
    /// From 1 KiB to the whole reply's 900 KiB.
    public static let partBytesRange = 1024...921_600

    /// `[west, south, east, north]` in degrees (RFC 7946 section 5). A `west` greater than
    /// `east` is a box across the antimeridian: from `west` east to 180, then from -180 to `east`.
    public struct BoundingBox: Sendable, Equatable {
        public var west: Double, south: Double, east: Double, north: Double

        public init(west: Double, south: Double, east: Double, north: Double) {
            self.west = west
            self.south = south
            self.east = east
            self.north = north
        }

        /// The box as ``GeoBounds``: one across the antimeridian has its east side 360 degrees on,
        /// past 180.
        public var bounds: GeoBounds {
            GeoBounds(minLat: south, minLon: west, maxLat: north, maxLon: west > east ? east + 360 : east)
        }
    }

    /// Reads the value of a query's `features` key; the problem names the key at fault and
    /// what it expects.
    static func parse(_ value: JSONValue) -> Result<FeaturesQuery, QueryProblem> {
        func problem(_ text: String) -> Result<FeaturesQuery, QueryProblem> { .failure(QueryProblem("\"features\": " + text)) }
        guard case .object(let object) = value else {
            return .failure(QueryProblem(
                "\"features\" needs an object {\"bbox\": [west, south, east, north], \"layers\": [layer names], "
                    + "\"limit\": 1...\(maxLimit), \"offset\": 0...\(maxOffset), \"partBytes\": \(partBytesRange)} "
                    + "(every key optional), "
                    + "found \(value.typeName)"))
        }
        if let unknown = object.keys.first(where: { !["bbox", "layers", "limit", "offset", "partBytes"].contains($0) }) {
            return problem("unknown key \"\(unknown)\" (expected \"bbox\", \"layers\", \"limit\", \"offset\" or \"partBytes\")")
        }
        var query = FeaturesQuery()
        if let bbox = object["bbox"] {
            let numbers = bbox.arrayValue?.compactMap(\.numberValue) ?? []
            guard let array = bbox.arrayValue, array.count == 4, numbers.count == 4 else {
                let found = bbox.arrayValue.map { "an array of \($0.count) values" } ?? bbox.typeName
                return problem("\"bbox\" needs [west, south, east, north]: 4 numbers in degrees, found \(found)")
            }
            let box = BoundingBox(west: numbers[0], south: numbers[1], east: numbers[2], north: numbers[3])
            guard (-180...180).contains(box.west), (-180...180).contains(box.east) else {
                return problem(
                    "\"bbox\" west and east must be longitudes within -180...180, found \(QueryRequest.text(box.west)) and \(QueryRequest.text(box.east))")
            }
            guard (-90...90).contains(box.south), (-90...90).contains(box.north) else {
                return problem(
                    "\"bbox\" south and north must be latitudes within -90...90, found \(QueryRequest.text(box.south)) and \(QueryRequest.text(box.north))")
            }
            guard box.south <= box.north else {
                return problem("\"bbox\" south (\(QueryRequest.text(box.south))) must not exceed north (\(QueryRequest.text(box.north)))")
            }
            query.bbox = box
        }
        if let layers = object["layers"] {
            let names = layers.arrayValue?.compactMap(\.stringValue)
            guard let names, names.count == layers.arrayValue?.count else {
                let other = layers.arrayValue?.first { $0.stringValue == nil }
                return problem("\"layers\" needs an array of layer name strings, found "
                    + (other.map { "an array holding \($0.typeName)" } ?? layers.typeName))
            }
            query.layers = names
        }
        func integer(_ key: String, within range: ClosedRange<Int>) -> Result<Int?, QueryProblem> {
            QueryRequest.integer(object, key, of: "features", within: range)
        }
        do throws(QueryProblem) {
            if let limit = try integer("limit", within: 1...maxLimit).get() { query.limit = limit }
            if let offset = try integer("offset", within: 0...maxOffset).get() { query.offset = offset }
            query.partBytes = try integer("partBytes", within: partBytesRange).get()
        } catch {
            return .failure(error)
        }
        return .success(query)
    }
}
