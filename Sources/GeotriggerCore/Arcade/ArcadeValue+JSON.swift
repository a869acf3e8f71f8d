extension ArcadeValue {
    /// Converts a JSON value: objects become dictionaries (key order kept), strings stay text
    /// (no guessing of dates).
    public init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .number(let n): self = .number(n)
        case .string(let s): self = .string(s)
        case .array(let a): self = .array(a.map(ArcadeValue.init))
        case .object(let o):
            self = .dictionary(ArcadeDictionary(o.entries.map { (key: $0.key, value: ArcadeValue($0.value)) }))
        }
    }

    /// The JSON form of this value: a date becomes an ISO-8601 UTC string
    /// (`2026-11-30T12:00:00Z`, with milliseconds when it has them); a non-finite number stays
    /// a number (the JSON writer prints it as `null`).
    public var json: JSONValue {
        switch self {
        case .null: .null
        case .bool(let b): .bool(b)
        case .number(let n): .number(n)
        case .string(let s): .string(s)
        case .date(let seconds): .string(ArcadeDateFormat.iso8601(seconds))
        case .array(let a): .array(a.map(\.json))
        case .dictionary(let d): .object(JSONObject(d.entries.map { (key: $0.key, value: $0.value.json) }))
        }
    }
}
