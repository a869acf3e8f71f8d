/// A JSON value as read from config, fence files and MQTT payloads, and as written in events.
///
/// Objects keep their key order (``JSONObject``) so that what the gateway writes reads in the
/// order the contract documents. Numbers are `Double` (GeoJSON and the contract need no more).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number, if this is a number.
    public var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The object, if this is an object.
    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The array, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The name of this value's JSON type, for error messages ("expected a number, found a string").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object that keeps its keys in insertion order. Lookup is linear: objects in this
/// product are small (fence properties, event payloads).
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public private(set) var entries: [(key: String, value: JSONValue)]

    public init() { entries = [] }

    public init(_ entries: [(key: String, value: JSONValue)]) {
        self.entries = []
        for (key, value) in entries { self[key] = value }
    }

    /// Takes `entries` as they are; the caller guarantees the keys are unique (the reader does).
    init(uniqueEntries entries: [(key: String, value: JSONValue)]) {
        self.entries = entries
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }
    public var keys: [String] { entries.map(\.key) }

    /// Reads a key; setting `nil` removes it, setting a value replaces it in place or appends it.
    public subscript(key: String) -> JSONValue? {
        get { entries.first { $0.key == key }?.value }
        set {
            let index = entries.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let i?, let v?): entries[i].value = v
            case (let i?, nil): entries.remove(at: i)
            case (nil, let v?): entries.append((key: key, value: v))
            case (nil, nil): break
            }
        }
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
