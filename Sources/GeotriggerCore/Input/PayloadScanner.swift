/// A fast reader for location payloads: one JSON object whose interesting members are
/// top-level scalars. It validates the whole text (RFC 8259, UTF-8) but materialises only the
/// top-level members' scalar values, so the hot path builds no tree.
struct PayloadScanner {
    /// A top-level member's value.
    enum Value {
        case number(Double)
        case string(String)
        case bool(Bool)
        case null
        /// An object or array (validated, not kept).
        case nested
    }

    enum Failure: Error {
        case notJSON(String)
        case invalidUTF8
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0
    private static let maxDepth = 64

    /// Scans `bytes` (a whole payload) and calls `member` for each top-level key and value.
    static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>, member: (String, Value) -> Void
    ) throws(Failure) {
        var scanner = PayloadScanner(bytes: bytes)
        try scanner.topLevel(member)
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private mutating func topLevel(_ member: (String, Value) -> Void) throws(Failure) {
        skipSpace()
        guard next() == UInt8(ascii: "{") else { throw .notJSON("the payload is not a JSON object") }
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\"") else { throw .notJSON("expected a member name at byte \(i)") }
                let key = try string()
                skipSpace()
                guard next() == UInt8(ascii: ":") else { throw .notJSON("expected ':' at byte \(i)") }
                skipSpace()
                member(key, try value(depth: 1))
                skipSpace()
                let c = next()
                if c == UInt8(ascii: "}") { break }
                guard c == UInt8(ascii: ",") else { throw .notJSON("expected ',' or '}' at byte \(i)") }
            }
        }
        skipSpace()
        guard i == bytes.count else { throw .notJSON("unexpected text after the JSON object at byte \(i)") }
    }

    private func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }

    private mutating func next() -> UInt8? {
        guard i < bytes.count else { return nil }
        defer { i += 1 }
        return bytes[i]
    }

    private mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(Failure) -> Value {
        guard let c = peek() else { throw .notJSON("unexpected end of the payload") }
        switch c {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipNested(depth: depth)
            return .nested
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw .notJSON("unexpected end of the payload") }
        for k in 0..<n where bytes[i + k] != word.utf8Start[k] {
            throw .notJSON("invalid literal at byte \(i)")
        }
        i += n
    }

    private mutating func number() throws(Failure) -> Double {
        let start = i
        if peek() == UInt8(ascii: "-") { i += 1 }
        guard let first = peek(), isDigit(first) else { throw .notJSON("invalid value at byte \(start)") }
        i += 1
        if first != UInt8(ascii: "0") { while let d = peek(), isDigit(d) { i += 1 } }
        if peek() == UInt8(ascii: ".") {
            i += 1
            guard let d = peek(), isDigit(d) else { throw .notJSON("invalid number at byte \(start)") }
            while let d = peek(), isDigit(d) { i += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            i += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
            guard let d = peek(), isDigit(d) else { throw .notJSON("invalid number at byte \(start)") }
            while let d = peek(), isDigit(d) { i += 1 }
        }
        // Short texts become small strings (no allocation); Double's parser rounds correctly.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let value = Double(text) else { throw .notJSON("invalid number at byte \(start)") }
        return value
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// Reads a string at `i` (which holds the opening quote), validating escapes and UTF-8.
    private mutating func string() throws(Failure) -> String {
        i += 1
        let start = i
        var plain = true
        while true {
            guard let c = next() else { throw .notJSON("unterminated string at byte \(start - 1)") }
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") {
                plain = false
                guard let e = next() else { throw .notJSON("unterminated string at byte \(start - 1)") }
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    for _ in 0..<4 {
                        guard let h = next(), hexValue(h) != nil else { throw .notJSON("bad \\u escape at byte \(i)") }
                    }
                default: throw .notJSON("bad escape at byte \(i - 1)")
                }
            } else if c < 0x20 {
                throw .notJSON("control character in a string at byte \(i - 1)")
            } else if c >= 0x80 {
                plain = false
                try skipUTF8Continuation(lead: c)
            }
        }
        let raw = UnsafeBufferPointer(rebasing: bytes[start..<(i - 1)])
        if plain { return String(decoding: raw, as: UTF8.self) }
        return try unescape(raw)
    }

    /// Checks the continuation bytes of a multi-byte UTF-8 sequence whose lead byte was just read.
    private mutating func skipUTF8Continuation(lead: UInt8) throws(Failure) {
        let count: Int
        var minimum: UInt32
        var scalar: UInt32
        switch lead {
        case 0xC2...0xDF: count = 1; minimum = 0x80; scalar = UInt32(lead & 0x1F)
        case 0xE0...0xEF: count = 2; minimum = 0x800; scalar = UInt32(lead & 0x0F)
        case 0xF0...0xF4: count = 3; minimum = 0x10000; scalar = UInt32(lead & 0x07)
        default: throw .invalidUTF8
        }
        for _ in 0..<count {
            guard let c = next(), c & 0xC0 == 0x80 else { throw .invalidUTF8 }
            scalar = scalar << 6 | UInt32(c & 0x3F)
        }
        guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else {
            throw .invalidUTF8
        }
    }

    private func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: UInt32(c - 0x30)
        case 0x41...0x46: UInt32(c - 0x41 + 10)
        case 0x61...0x66: UInt32(c - 0x61 + 10)
        default: nil
        }
    }

    /// Decodes the escapes of an already validated string body.
    private func unescape(_ raw: UnsafeBufferPointer<UInt8>) throws(Failure) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var k = 0
        func hex4(_ at: Int) -> UInt32 {
            (0..<4).reduce(0) { $0 << 4 | hexValue(raw[at + $1])! }
        }
        func append(_ scalar: Unicode.Scalar) { out.append(contentsOf: UTF8.encode(scalar)!) }
        while k < raw.count {
            let c = raw[k]
            guard c == UInt8(ascii: "\\") else { out.append(c); k += 1; continue }
            let e = raw[k + 1]
            k += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = hex4(k)
                k += 4
                if (0xD800...0xDBFF).contains(code) {
                    guard k + 6 <= raw.count, raw[k] == UInt8(ascii: "\\"), raw[k + 1] == UInt8(ascii: "u") else {
                        throw .notJSON("lone surrogate in a \\u escape")
                    }
                    let low = hex4(k + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw .notJSON("lone surrogate in a \\u escape") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    k += 6
                } else if (0xDC00...0xDFFF).contains(code) {
                    throw .notJSON("lone surrogate in a \\u escape")
                }
                append(Unicode.Scalar(code)!)
            default: out.append(e)  // " \ /
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Skips a nested object or array, validating it.
    private mutating func skipNested(depth: Int) throws(Failure) {
        guard depth < PayloadScanner.maxDepth else { throw .notJSON("nesting deeper than \(PayloadScanner.maxDepth)") }
        let open = next()!
        let close = open == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        skipSpace()
        if peek() == close { i += 1; return }
        while true {
            skipSpace()
            if open == UInt8(ascii: "{") {
                guard peek() == UInt8(ascii: "\"") else { throw .notJSON("expected a member name at byte \(i)") }
                _ = try string()
                skipSpace()
                guard next() == UInt8(ascii: ":") else { throw .notJSON("expected ':' at byte \(i)") }
                skipSpace()
            }
            _ = try value(depth: depth + 1)
            skipSpace()
            let c = next()
            if c == close { return }
            guard c == UInt8(ascii: ",") else { throw .notJSON("expected ',' at byte \(i)") }
        }
    }
}
