/// Writes one JSON object of known keys straight to UTF-8 bytes, member by member, exactly as
/// ``JSONValue/serializedBytes()`` writes the same object (keys in the order written, numbers
/// as ``JSONValue`` writes them, times as ``ISO8601Time/format(_:milliseconds:)``): for a payload
/// built at every update (a trip's progress, docs/performance.md "Trips"), without the tree of
/// values, their strings, and ``JSONObject``'s key lookups that building it takes.
public struct JSONObjectWriter {
    private var out: [UInt8]
    private var empty = true

    /// `capacity`: the bytes to reserve (the payload is returned in that buffer, so a close
    /// guess leaves little unused).
    public init(capacity: Int) {
        out = []
        out.reserveCapacity(capacity)
        out.append(UInt8(ascii: "{"))
    }

    /// `"key":`; `key` is written as it is, so it must need no escaping (letters and digits).
    private mutating func key(_ key: StaticString) {
        if !empty { out.append(UInt8(ascii: ",")) }
        empty = false
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ key: StaticString, _ value: String) {
        self.key(key)
        JSONValue.writeString(value, to: &out)
    }

    public mutating func number(_ key: StaticString, _ value: Double) {
        self.key(key)
        JSONValue.writeNumber(value, to: &out)
    }

    /// An ISO-8601 time string (``ISO8601Time/format(_:milliseconds:)``).
    public mutating func time(_ key: StaticString, _ seconds: Double, milliseconds: Bool = false) {
        self.key(key)
        out.append(UInt8(ascii: "\""))
        ISO8601Time.append(seconds, milliseconds: milliseconds, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// The object's bytes, closed.
    public consuming func finish() -> [UInt8] {
        out.append(UInt8(ascii: "}"))
        return out
    }
}
