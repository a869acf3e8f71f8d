/// A fast reader for location payloads: one JSON object whose interesting members are
/// top-level scalars. It validates the whole text (RFC 8259, UTF-8) but materialises only the
/// values of the top-level members its receiver asks for, so the hot path builds no tree, no
/// String for a member name and none for a value nobody reads.
struct PayloadScanner {
    /// A wanted top-level member's value.
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

    /// What a scan fills. It recognises the members it wants by the UTF-8 bytes of their names
    /// (escapes already decoded), so the scanner need not build a String per name; the values of
    /// the members it does not want are validated and skipped.
    protocol Receiver {
        associatedtype Member
        /// The member called `name`, or nil to skip its value.
        static func member(named name: UnsafeBufferPointer<UInt8>) -> Member?
        /// Called for each wanted member in payload order (so a repeated name's last value comes last).
        mutating func set(_ member: Member, _ value: Value)
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var i = 0
    private static let maxDepth = 64

    /// Scans `bytes` (a whole payload) into `receiver`.
    static func scan<R: Receiver>(_ bytes: UnsafeBufferPointer<UInt8>, into receiver: inout R) throws(Failure) {
        var scanner = PayloadScanner(bytes: bytes)
        try scanner.topLevel(&receiver)
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private mutating func topLevel<R: Receiver>(_ receiver: inout R) throws(Failure) {
        skipSpace()
        guard next() == UInt8(ascii: "{") else { throw .notJSON("the payload is not a JSON object") }
        skipSpace()
        if peek() == UInt8(ascii: "}") {
            i += 1
        } else {
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\"") else { throw .notJSON("expected a member name at byte \(i)") }
                let member = try memberName(R.self)
                skipSpace()
                guard next() == UInt8(ascii: ":") else { throw .notJSON("expected ':' at byte \(i)") }
                skipSpace()
                if let member {
                    receiver.set(member, try value(depth: 1))
                } else {
                    try skipValue(depth: 1)
                }
                skipSpace()
                let c = next()
                if c == UInt8(ascii: "}") { break }
                guard c == UInt8(ascii: ",") else { throw .notJSON("expected ',' or '}' at byte \(i)") }
            }
        }
        skipSpace()
        guard i == bytes.count else { throw .notJSON("unexpected text after the JSON object at byte \(i)") }
    }

    /// Reads a member name at `i` and asks the receiver whether it wants it: a plain name is
    /// matched in place; only a name with escapes is decoded first.
    private mutating func memberName<R: Receiver>(_: R.Type) throws(Failure) -> R.Member? {
        let (raw, escaped) = try stringBody()
        guard escaped else { return R.member(named: raw) }
        var name = try unescape(raw)
        return name.withUTF8 { R.member(named: $0) }
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

    /// Validates a value that nobody reads, with exactly the checks (and failures) of ``value(depth:)``.
    private mutating func skipValue(depth: Int) throws(Failure) {
        guard let c = peek() else { throw .notJSON("unexpected end of the payload") }
        switch c {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["): try skipNested(depth: depth)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try numberText()
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

    /// Reads a number at `i`: see ``DecimalNumber`` for how its value is computed.
    private mutating func number() throws(Failure) -> Double {
        let (text, decimal) = try numberText()
        if let value = decimal.exactValue { return value }
        // Too many digits or too large an exponent for the exact product: Double's own parser,
        // which rounds correctly. Short texts become small strings (no allocation).
        guard let value = Double(String(decoding: text, as: UTF8.self)) else {
            throw .notJSON("invalid number at byte \(i - text.count)")
        }
        return value
    }

    /// Validates the JSON number at `i` and returns its text and its digits as a ``DecimalNumber``.
    private mutating func numberText() throws(Failure) -> (UnsafeBufferPointer<UInt8>, DecimalNumber) {
        let start = i
        var decimal = DecimalNumber()
        if peek() == UInt8(ascii: "-") {
            decimal.negative = true
            i += 1
        }
        guard let first = peek(), isDigit(first) else { throw .notJSON("invalid value at byte \(start)") }
        i += 1
        decimal.append(digit: first)
        if first != UInt8(ascii: "0") {
            while let d = peek(), isDigit(d) {
                decimal.append(digit: d)
                i += 1
            }
        }
        if peek() == UInt8(ascii: ".") {
            i += 1
            guard let d = peek(), isDigit(d) else { throw .notJSON("invalid number at byte \(start)") }
            while let d = peek(), isDigit(d) {
                decimal.append(fractionDigit: d)
                i += 1
            }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            i += 1
            var negativeExponent = false
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") {
                negativeExponent = peek() == UInt8(ascii: "-")
                i += 1
            }
            guard let d = peek(), isDigit(d) else { throw .notJSON("invalid number at byte \(start)") }
            var exponent = 0
            while let d = peek(), isDigit(d) {
                // Saturates: any exponent this large leaves the fast path anyway.
                exponent = min(exponent * 10 + Int(d &- 0x30), 100_000)
                i += 1
            }
            decimal.exponent += negativeExponent ? -exponent : exponent
        }
        return (UnsafeBufferPointer(rebasing: bytes[start..<i]), decimal)
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    /// Reads a string at `i` (which holds the opening quote), validating escapes and UTF-8.
    private mutating func string() throws(Failure) -> String {
        let (raw, escaped) = try stringBody()
        if escaped { return try unescape(raw) }
        return String(decoding: raw, as: UTF8.self)
    }

    /// Validates a string at `i` that nobody reads. Its escapes are still decoded (into a
    /// throw-away String, on this rare path) because decoding is what finds a lone surrogate.
    private mutating func skipString() throws(Failure) {
        let (raw, escaped) = try stringBody()
        if escaped { _ = try unescape(raw) }
    }

    /// Validates the string at `i` (which holds the opening quote) and moves past its closing
    /// quote. Returns the bytes between the quotes, and whether they hold an escape.
    private mutating func stringBody() throws(Failure) -> (raw: UnsafeBufferPointer<UInt8>, escaped: Bool) {
        i += 1
        let start = i
        var escaped = false
        while true {
            // The common bytes first: printable ASCII other than `"` and `\`.
            while i < bytes.count, bytes[i] >= 0x20, bytes[i] < 0x80, bytes[i] != UInt8(ascii: "\""),
                bytes[i] != UInt8(ascii: "\\")
            {
                i += 1
            }
            guard let c = next() else { throw .notJSON("unterminated string at byte \(start - 1)") }
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") {
                escaped = true
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
            } else {
                try skipUTF8Continuation(lead: c)
            }
        }
        return (UnsafeBufferPointer(rebasing: bytes[start..<(i - 1)]), escaped)
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
                try skipString()
                skipSpace()
                guard next() == UInt8(ascii: ":") else { throw .notJSON("expected ':' at byte \(i)") }
                skipSpace()
            }
            try skipValue(depth: depth + 1)
            skipSpace()
            let c = next()
            if c == close { return }
            guard c == UInt8(ascii: ",") else { throw .notJSON("expected ',' at byte \(i)") }
        }
    }
}
