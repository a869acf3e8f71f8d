extension JSONValue {
    /// Compact JSON text: keys in the object's order, integers without a fraction, other numbers
    /// in Swift's shortest round-trip form, non-finite numbers as `null`.
    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    /// The compact JSON text of ``serialized()`` as UTF-8 bytes (what MQTT payloads and the
    /// store take), built without an intermediate `String`.
    public func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    /// Appends the compact JSON text of this value to `out`.
    public func write(to out: inout String) {
        out += serialized()
    }

    /// Appends the compact JSON text of this value to `out` as UTF-8.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: JSONValue.append("null", to: &out)
        case .bool(let b): JSONValue.append(b ? "true" : "false", to: &out)
        case .number(let n): JSONValue.writeNumber(n, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (i, e) in o.entries.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(e.key, to: &out)
                out.append(UInt8(ascii: ":"))
                e.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends the JSON number text of `n` to `out` (for messages quoting a value).
    static func writeNumber(_ n: Double, to out: inout String) {
        var bytes: [UInt8] = []
        writeNumber(n, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `s` as a quoted JSON string to `out` (for messages quoting a key or value).
    static func writeString(_ s: String, to out: inout String) {
        var bytes: [UInt8] = []
        writeString(s, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    @inline(__always)
    static func append(_ s: StaticString, to out: inout [UInt8]) {
        s.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    static func writeNumber(_ n: Double, to out: inout [UInt8]) {
        guard n.isFinite else { append("null", to: &out); return }
        if n == n.rounded(), abs(n) < 1e15 {
            writeInteger(Int64(n), to: &out)
            return
        }
        // One decimal (a figure rounded to 0.1, as trips' and many others are): the digits of
        // `tenths / 10`, which is the shortest text that reads back as `n` (`n.description`):
        // `n` is the double nearest to that decimal of at most 11 significant digits, and two
        // decimals of at most 15 never share a double. Without the float-to-text conversion,
        // which took ~0.5 us a number.
        let tenths = (n * 10).rounded()
        if abs(tenths) < 1e10, tenths / 10 == n {
            let t = Int64(tenths)
            if t < 0 { out.append(UInt8(ascii: "-")) }
            writeInteger(abs(t) / 10, to: &out)
            out.append(UInt8(ascii: "."))
            out.append(UInt8(truncatingIfNeeded: 48 + abs(t) % 10))
            return
        }
        out.append(contentsOf: n.description.utf8)
    }

    /// The decimal digits of `value` (with `-` when negative), as `String(value)` writes them.
    static func writeInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude as unsigned, so Int64.min has one too.
        var rest = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = 20
            repeat {
                i -= 1
                digits[i] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// A quoted JSON string: `"`, `\` and control characters escaped, everything else (valid
    /// UTF-8 already) copied in runs.
    static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { bytes in
            out.reserveCapacity(out.count + bytes.count + 2)
            out.append(UInt8(ascii: "\""))
            var runStart = 0
            for i in 0..<bytes.count {
                let b = bytes[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                if runStart < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i])) }
                runStart = i + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)]])
                }
            }
            if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count])) }
            out.append(UInt8(ascii: "\""))
        }
    }
}
