/// One query of the dispatcher's control plane (`PREFIX/query/GATEWAY_ID`), read from its JSON
/// payload: exactly one kind, plus the v3.1.1 reply members `replyTo` and `correlation`.
///
/// Pure, so that the gateway's `QueryService` and the fuzz target read queries the same way.
public struct QueryRequest: Sendable, Equatable {
    /// What the query asks.
    public enum Kind: Sendable, Equatable {
        /// `{"inside": {"layer", "fence"}}`: the devices with a confirmed stay in a fence.
        case inside(layer: String, fence: String)
        /// `{"device": ID}`: a device's state.
        case device(String)
        /// `{"near": {"lat", "lon", "radius", "limit"}}`: the `limit` watched fences nearest
        /// to the point within `radius` metres.
        case near(Coordinate, radius: Double, limit: Int = QueryRequest.defaultNearLimit)
        /// `{"fences": LAYER}` or `{"fences": {"layer", "offset", "limit"}}`: a layer's fences,
        /// `offset` of them skipped, at most `limit` (the reply's byte budget may cut it shorter).
        case fences(String, offset: Int = 0, limit: Int = QueryRequest.maxFencesLimit)
        /// `{"expectations": DEVICE_OR_*}`: open expected arrivals.
        case expectations(String)
        /// `{"trips": {"device": ID}}` or `{"trips": {}}`: open trips with their progress, of one
        /// device (nil: every device).
        case trips(device: String?)
        /// `{"features": {"bbox", "layers", "limit"}}`: fence geometry as GeoJSON.
        case features(FeaturesQuery)
        /// `{"track": {"device", "since", "offset", "limit"}}`: a device's recent positions from
        /// `since` (Unix seconds; nil: the last 24 hours), oldest first, `offset` of them skipped,
        /// at most `limit` (the reply's byte budget may cut it shorter).
        case track(device: String, since: Double?, offset: Int = 0, limit: Int = QueryRequest.maxTrackLimit)
        /// `{"track": {"devices": [ID, ...], "since", "partBytes"}}`: the recent positions of
        /// several devices, in the order asked, from `since` (nil: the last 24 hours); with
        /// `partBytes` the reply comes in parts of at most that many bytes, like `features`.
        case tracks(devices: [String], since: Double?, partBytes: Int? = nil)
        /// `{"events": {"since", "until", "types", "devices", "limit", "offset"}}`: the journal's
        /// events, as published, oldest first.
        case events(EventsQuery)
    }

    /// The kind, or why the query is malformed (the text of the `{"error"}` reply).
    public var kind: Result<Kind, QueryProblem>
    /// The JSON's `replyTo`, when it is a string.
    public var replyTo: String?
    /// The JSON's `correlation`, copied into the reply as it is.
    public var correlation: JSONValue?

    public init(kind: Result<Kind, QueryProblem>, replyTo: String? = nil, correlation: JSONValue? = nil) {
        self.kind = kind
        self.replyTo = replyTo
        self.correlation = correlation
    }

    /// The largest `near` radius, in metres.
    public static let maxNearRadius = 100_000.0
    /// How many fences a `near` reply lists at most when the query gives no `limit`: a radius
    /// of 100 km can hold every fence of the gateway, and the search for the nearest costs
    /// about as much as the fences it measures.
    public static let defaultNearLimit = 1000
    /// The largest `limit` of a `near` or `fences` query (the reply's 900 KiB budget may cut
    /// a reply shorter still).
    public static let maxNearLimit = 10_000
    public static let maxFencesLimit = 10_000
    /// The largest `limit` of a `track` query: a day's track at one position per 10 s (8,640)
    /// fits in one page.
    public static let maxTrackLimit = 10_000
    /// The most devices one `track` query may list in `devices` (a reply holds what fits in
    /// 900 KiB; the rest are asked again).
    public static let maxTrackDevices = 1000

    /// Reads a query payload; `file` names it in syntax errors (the query topic).
    public static func parse(_ payload: [UInt8], file: String) -> QueryRequest {
        let document: JSONDocument
        do {
            document = try JSONReader.parse(payload, file: file, dialect: .json)
        } catch {
            return QueryRequest(kind: .failure(QueryProblem("not JSON: \(error.location.line):\(error.location.column): \(error.message)")))
        }
        guard case .object(let object) = document.value else {
            return QueryRequest(kind: .failure(QueryProblem("a query is a JSON object, found \(document.value.typeName)")))
        }
        var request = QueryRequest(kind: kind(of: object), correlation: object["correlation"])
        if case .string(let replyTo)? = object["replyTo"] { request.replyTo = replyTo }
        return request
    }

    private static func kind(of request: JSONObject) -> Result<Kind, QueryProblem> {
        let kinds = request.keys.filter { $0 != "replyTo" && $0 != "correlation" }
        guard kinds.count == 1, let kind = kinds.first, let value = request[kind] else {
            return .failure(QueryProblem(
                kinds.isEmpty
                    ? "a query needs one of \"inside\", \"device\", \"near\", \"fences\", \"expectations\", \"trips\", \"features\", \"track\", \"events\""
                    : "a query asks one thing, found \(kinds.map { "\"\($0)\"" }.joined(separator: ", "))"))
        }
        switch kind {
        case "inside":
            guard case .object(let o) = value, case .string(let layer)? = o["layer"], case .string(let fence)? = o["fence"] else {
                return .failure(QueryProblem("\"inside\" needs {\"layer\": string, \"fence\": string}"))
            }
            return .success(.inside(layer: layer, fence: fence))
        case "device":
            guard case .string(let device) = value, !device.isEmpty else { return .failure(QueryProblem("\"device\" needs a device id string")) }
            return .success(.device(device))
        case "near":
            guard case .object(let o) = value, case .number(let lat)? = o["lat"], case .number(let lon)? = o["lon"] else {
                return .failure(QueryProblem("\"near\" needs {\"lat\": number, \"lon\": number, \"radius\": metres}"))
            }
            guard (-90...90).contains(lat), (-180...180).contains(lon) else {
                return .failure(QueryProblem("\"near\": lat must be within -90...90 and lon within -180...180"))
            }
            var radius = 100.0
            switch o["radius"] {
            case nil: break
            case .number(let r)? where r > 0 && r <= maxNearRadius: radius = r
            default: return .failure(QueryProblem("\"near\": radius must be a number of metres > 0 and <= 100000"))
            }
            let limit: Int?
            do throws(QueryProblem) {
                limit = try integer(o, "limit", of: "near", within: 1...maxNearLimit).get()
            } catch {
                return .failure(error)
            }
            return .success(.near(Coordinate(lat: lat, lon: lon), radius: radius, limit: limit ?? defaultNearLimit))
        case "fences":
            if case .string(let layer) = value { return .success(.fences(layer)) }
            guard case .object(let o) = value, case .string(let layer)? = o["layer"] else {
                return .failure(QueryProblem(
                    "\"fences\" needs a layer name string, or {\"layer\": string, \"offset\": 0...\(FeaturesQuery.maxOffset), "
                        + "\"limit\": 1...\(maxFencesLimit)} (offset and limit optional)"))
            }
            if let unknown = o.keys.first(where: { !["layer", "offset", "limit"].contains($0) }) {
                return .failure(QueryProblem("\"fences\": unknown key \"\(unknown)\" (expected \"layer\", \"offset\" or \"limit\")"))
            }
            let offset: Int?, limit: Int?
            do throws(QueryProblem) {
                offset = try integer(o, "offset", of: "fences", within: 0...FeaturesQuery.maxOffset).get()
                limit = try integer(o, "limit", of: "fences", within: 1...maxFencesLimit).get()
            } catch {
                return .failure(error)
            }
            return .success(.fences(layer, offset: offset ?? 0, limit: limit ?? maxFencesLimit))
        case "expectations":
            guard case .string(let device) = value, !device.isEmpty else {
                return .failure(QueryProblem("\"expectations\" needs a device id string, or \"*\" for every device"))
            }
            return .success(.expectations(device))
        case "trips":
            guard case .object(let o) = value else {
                return .failure(QueryProblem("\"trips\" needs {\"device\": ID} or {} for every device"))
            }
            switch o["device"] {
            case nil, .null?: return .success(.trips(device: nil))
            case .string(let device)? where !device.isEmpty: return .success(.trips(device: device))
            default: return .failure(QueryProblem("\"trips\": \"device\" must be a device id string"))
            }
        case "features":
            return FeaturesQuery.parse(value).map(Kind.features)
        case "track":
            return track(value)
        case "events":
            return EventsQuery.parse(value).map(Kind.events)
        default:
            return .failure(QueryProblem(
                "unknown query \"\(kind)\" (expected \"inside\", \"device\", \"near\", \"fences\", \"expectations\", \"trips\", \"features\", \"track\" or \"events\")"))
        }
    }

    /// `{"track": {"device": ID, "since": ISO time, "offset": N, "limit": N}}` (all but `device`
    /// optional), or `{"track": {"devices": [ID, ...], "since": ISO time, "partBytes": N}}`.
    private static func track(_ value: JSONValue) -> Result<Kind, QueryProblem> {
        let usage = "\"track\" needs {\"device\": ID, \"since\": ISO-8601 time, \"offset\": 0...\(FeaturesQuery.maxOffset), "
            + "\"limit\": 1...\(maxTrackLimit)} (since, offset and limit optional), or {\"devices\": [1...\(maxTrackDevices) IDs], "
            + "\"since\": ISO-8601 time, \"partBytes\": \(FeaturesQuery.partBytesRange)} (since and partBytes optional)"
        guard case .object(let o) = value else { return .failure(QueryProblem(usage)) }
        var since: Double?
        switch o["since"] {
        case nil, .null?: break
        case .string(let text)? where ISO8601Time.parse(text) != nil: since = ISO8601Time.parse(text)
        case let other?:
            return .failure(QueryProblem(
                "\"track\": \"since\" needs an ISO-8601 time such as \"2026-11-30T12:00:00Z\", found \(other.serialized())"))
        }
        if let list = o["devices"] {
            if let unknown = o.keys.first(where: { !["devices", "since", "partBytes"].contains($0) }) {
                return .failure(QueryProblem(
                    "\"track\": unknown key \"\(unknown)\" beside \"devices\" (expected \"since\" or \"partBytes\"; "
                        + "a reply cut short by its budget is asked again from the device it stopped at)"))
            }
            guard let array = list.arrayValue, (1...maxTrackDevices).contains(array.count) else {
                return .failure(QueryProblem(
                    "\"track\": \"devices\" needs an array of 1...\(maxTrackDevices) device ids, found "
                        + (list.arrayValue.map { "\($0.count) values" } ?? list.typeName)))
            }
            var devices: [String] = []
            devices.reserveCapacity(array.count)
            for item in array {
                guard case .string(let device) = item, !device.isEmpty else {
                    let found = item.stringValue != nil ? "an empty string" : item.typeName
                    return .failure(QueryProblem("\"track\": \"devices\" needs device id strings, found \(found)"))
                }
                devices.append(device)
            }
            let partBytes: Int?
            do throws(QueryProblem) {
                partBytes = try integer(o, "partBytes", of: "track", within: FeaturesQuery.partBytesRange).get()
            } catch {
                return .failure(error)
            }
            return .success(.tracks(devices: devices, since: since, partBytes: partBytes))
        }
        guard case .string(let device)? = o["device"], !device.isEmpty else { return .failure(QueryProblem(usage)) }
        if let unknown = o.keys.first(where: { !["device", "since", "offset", "limit"].contains($0) }) {
            return .failure(QueryProblem("\"track\": unknown key \"\(unknown)\" (expected \"device\", \"since\", \"offset\" or \"limit\")"))
        }
        let offset: Int?, limit: Int?
        do throws(QueryProblem) {
            offset = try integer(o, "offset", of: "track", within: 0...FeaturesQuery.maxOffset).get()
            limit = try integer(o, "limit", of: "track", within: 1...maxTrackLimit).get()
        } catch {
            return .failure(error)
        }
        return .success(.track(device: device, since: since, offset: offset ?? 0, limit: limit ?? maxTrackLimit))
    }

    /// The integer under `key` of the query `query`'s `object`, within `range`; nil when not
    /// given; else a problem naming the query and the key.
    static func integer(
        _ object: JSONObject, _ key: String, of query: String, within range: ClosedRange<Int>
    ) -> Result<Int?, QueryProblem> {
        guard let value = object[key] else { return .success(nil) }
        guard case .number(let n) = value, n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound) else {
            let found = value.numberValue.map(text) ?? value.typeName
            return .failure(QueryProblem("\"\(query)\": \"\(key)\" needs an integer within \(range), found \(found)"))
        }
        return .success(Int(n))
    }

    /// A number as a message quotes it (JSON's text; `inf` or `nan` for what JSON cannot write).
    static func text(_ n: Double) -> String { n.isFinite ? JSONValue.number(n).serialized() : "\(n)" }

    /// Where a reply goes: `asked` (the v5 response topic, else `replyTo`) when it lies under
    /// `repliesPrefix` (one level at least, no wildcard), else `fallback`; with the refusal to
    /// put in the reply instead of the answer when `asked` was elsewhere.
    public static func replyTopic(asked: String?, repliesPrefix: String, fallback: String) -> (topic: String, refusal: String?) {
        guard let asked else { return (fallback, nil) }
        if asked.hasPrefix(repliesPrefix), asked.utf8.count > repliesPrefix.utf8.count, !asked.contains("+"), !asked.contains("#") {
            return (asked, nil)
        }
        return (fallback, "replies go only to topics under \(repliesPrefix), not \"\(asked)\"")
    }
}

/// Why a query cannot be answered: the text of its `{"error"}` reply.
public struct QueryProblem: Error, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
