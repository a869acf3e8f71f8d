/// One step of a path into a JSON document: an object key or an array index.
public enum JSONPathComponent: Sendable, Hashable {
    case key(String)
    case index(Int)
}

extension Array where Element == JSONPathComponent {
    /// The path as people write it: `triggers[0].rule`; keys that are not identifiers are quoted
    /// (`properties["opening hours"]`); the empty path is `$`.
    public var pathString: String {
        guard !isEmpty else { return "$" }
        var out = ""
        for component in self {
            switch component {
            case .index(let i):
                out += "[\(i)]"
            case .key(let k) where JSONPathComponent.isPlainIdentifier(k):
                if !out.isEmpty { out += "." }
                out += k
            case .key(let k):
                out += "["
                JSONValue.writeString(k, to: &out)
                out += "]"
            }
        }
        return out
    }
}

extension JSONPathComponent {
    /// True for keys written bare in a path: ASCII letters, digits, `_` and `$`, not starting with a digit.
    static func isPlainIdentifier(_ key: String) -> Bool {
        guard let first = key.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return key.utf8.allSatisfy { b in
            (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: "$")
        }
    }
}
