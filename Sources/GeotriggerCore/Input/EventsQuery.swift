/// The `events` query: `{"events": {"since": ISO time, "until": ISO time, "types": [...],
/// "devices": [...], "limit": N, "offset": N}}`, every key optional (docs/control-plane.md
/// "Queries"). The gateway answers with its journal's events, as they were published, whose
/// fix time lies in [`since`, `until`), oldest first, `offset` of them skipped: what the
/// console shows of the last hour at load and replays with its time slider.
public struct EventsQuery: Sendable, Equatable {
    /// From this fix time on (seconds since 1970); nil: ``defaultWindow`` before now.
    public var since: Double?
    /// Before this fix time; nil: no end.
    public var until: Double?
    /// Only these event types (`enter`, `exit`, `offRoute`, ...); nil: every type.
    public var types: [String]?
    /// Only these devices; nil: every device.
    public var devices: [String]?
    /// At most this many events (``defaultLimit`` when not given, at most ``maxLimit``).
    public var limit: Int
    /// The first this many of the events selected are skipped.
    public var offset: Int

    public init(
        since: Double? = nil, until: Double? = nil, types: [String]? = nil, devices: [String]? = nil,
        limit: Int = EventsQuery.defaultLimit, offset: Int = 0
    ) {
        self.since = since
        self.until = until
        self.types = types
        self.devices = devices
        self.limit = limit
        self.offset = offset
    }

    /// One hour: the console's replay.
    public static let defaultWindow = 3600.0
    public static let defaultLimit = 1000
    public static let maxLimit = 10_000
    /// The longest `types` or `devices` list.
    public static let maxListLength = 1000
    public static let maxOffset = FeaturesQuery.maxOffset

    /// Reads the value of a query's `events` key; the problem names the key at fault and what
    /// it expects.
    static func parse(_ value: JSONValue) -> Result<EventsQuery, QueryProblem> {
        func problem(_ text: String) -> Result<EventsQuery, QueryProblem> { .failure(QueryProblem("\"events\": " + text)) }
        guard case .object(let object) = value else {
            return .failure(QueryProblem(
                "\"events\" needs an object {\"since\": ISO-8601 time, \"until\": ISO-8601 time, \"types\": [event types], "
                    + "\"devices\": [device ids], \"limit\": 1...\(maxLimit), \"offset\": 0...\(maxOffset)} (every key optional), "
                    + "found \(value.typeName)"))
        }
        let keys = ["since", "until", "types", "devices", "limit", "offset"]
        if let unknown = object.keys.first(where: { !keys.contains($0) }) {
            return problem("unknown key \"\(unknown)\" (expected \(keys.dropLast().map { "\"\($0)\"" }.joined(separator: ", ")) or \"offset\")")
        }
        var query = EventsQuery()
        for key in ["since", "until"] {
            guard let time = object[key] else { continue }
            guard case .string(let text) = time, let seconds = ISO8601Time.parse(text) else {
                return problem("\"\(key)\" needs an ISO-8601 time such as \"2026-11-30T12:00:00Z\", found \(time.serialized())")
            }
            if key == "since" { query.since = seconds } else { query.until = seconds }
        }
        for key in ["types", "devices"] {
            guard let list = object[key] else { continue }
            let strings = list.arrayValue?.compactMap(\.stringValue)
            guard let strings, strings.count == list.arrayValue?.count, strings.count <= maxListLength else {
                let found = list.arrayValue.map { $0.count > maxListLength ? "\($0.count) values" : "an array holding \($0.first { $0.stringValue == nil }?.typeName ?? "")" }
                return problem("\"\(key)\" needs an array of at most \(maxListLength) strings, found \(found ?? list.typeName)")
            }
            if key == "types" { query.types = strings } else { query.devices = strings }
        }
        do throws(QueryProblem) {
            if let limit = try QueryRequest.integer(object, "limit", of: "events", within: 1...maxLimit).get() { query.limit = limit }
            if let offset = try QueryRequest.integer(object, "offset", of: "events", within: 0...maxOffset).get() { query.offset = offset }
        } catch {
            return .failure(error)
        }
        return .success(query)
    }
}
