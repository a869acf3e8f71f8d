extension Fence {
    /// The most bytes of a fence's `name` (UTF-8) and of its `properties` (compact JSON) that a
    /// fence keeps, and so copies into events, device states and query replies: one fence with
    /// a huge name cannot make every event about it larger than a broker takes
    /// (docs/limits.md).
    public static let outputLimit = 4096

    /// `name` cut to at most `limit` UTF-8 bytes, on a character's boundary; whether it was cut.
    static func cut(name: String?, limit: Int = outputLimit) -> (String?, Bool) {
        guard let name, name.utf8.count > limit else { return (name, false) }
        return (String(name.prefix(utf8Bytes: limit)), true)
    }

    /// `properties` with the entries, in order, that fit in `limit` bytes of compact JSON (the
    /// first that does not fit and every one after it are left out); whether any was.
    static func cut(properties: JSONObject, limit: Int = outputLimit) -> (JSONObject, Bool) {
        var bound = 2
        for entry in properties.entries {
            bound += JSONValue.sizeBound(of: entry.key) + 2 + entry.value.sizeBound
            if bound > limit { break }
        }
        guard bound > limit else { return (properties, false) }
        var kept: [(key: String, value: JSONValue)] = []
        var size = 2
        for entry in properties.entries {
            let entrySize = JSONValue.string(entry.key).serializedBytes().count + 1 + entry.value.serializedBytes().count
                + (kept.isEmpty ? 0 : 1)
            if size + entrySize > limit { break }
            size += entrySize
            kept.append(entry)
        }
        return (JSONObject(uniqueEntries: kept), true)
    }
}

extension JSONValue {
    /// At least the length of this value's compact JSON text, found without writing it (every
    /// string byte counted as a six-byte escape, every number as 32 bytes).
    var sizeBound: Int {
        switch self {
        case .null, .bool: 5
        case .number: 32
        case .string(let s): JSONValue.sizeBound(of: s)
        case .array(let a): a.reduce(2) { $0 + $1.sizeBound + 1 }
        case .object(let o): o.entries.reduce(2) { $0 + JSONValue.sizeBound(of: $1.key) + 2 + $1.value.sizeBound }
        }
    }

    static func sizeBound(of string: String) -> Int { string.utf8.count * 6 + 2 }
}
