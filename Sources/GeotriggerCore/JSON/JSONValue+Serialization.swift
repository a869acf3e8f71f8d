extension JSONValue {
    /// Compact JSON text: keys in the object's order, integers without a fraction, other numbers
    /// in Swift's shortest round-trip form, non-finite numbers as `null`.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): JSONValue.writeNumber(n, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, e) in o.entries.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(e.key, to: &out)
                out += ":"
                e.value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeNumber(_ n: Double, to out: inout String) {
        guard n.isFinite else { out += "null"; return }
        if n == n.rounded(), abs(n) < 1e15 {
            out += String(Int64(n))
        } else {
            out += "\(n)"
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
