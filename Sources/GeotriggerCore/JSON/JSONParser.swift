/// The recursive-descent parser behind ``JSONReader``: one pass over the bytes, recording one
/// ``JSONDocument/Node`` (byte offsets only) per value when a document is wanted.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let file: String
    let json5: Bool
    /// False when only the value is wanted: no nodes or children are recorded.
    let recordsNodes: Bool
    /// A member of the top-level object whose array value is not kept: each element is handed
    /// to ``streamedElement`` as soon as it is read (so a large array never exists as a whole).
    var streamedMember: String?
    var streamedElement: ((JSONValue) -> Void)?
    /// Set just before the streamed member's value is parsed; read (and cleared) by `parseValue`.
    var streamNext = false
    var position = 0
    var depth = 0
    var nodes: [JSONDocument.Node] = []
    var children: [Int32] = []
    /// Children of the containers being parsed, moved to `children` when each one closes.
    var pending: [Int32] = []

    init(bytes: UnsafeBufferPointer<UInt8>, file: String, json5: Bool, recordsNodes: Bool = true) {
        self.bytes = bytes
        self.file = file
        self.json5 = json5
        self.recordsNodes = recordsNodes
        if recordsNodes { nodes.reserveCapacity(min(bytes.count / 8, 1 << 20)) }
    }

    // MARK: Document and values

    mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
        // A UTF-8 byte order mark is ignored, as RFC 8259 allows.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
        let value = try parseValue(keyOffset: -1)
        try skipWhitespace()
        if position < bytes.count {
            throw error("unexpected \(describeCharacter(at: position)) after the top-level value")
        }
        return value
    }

    /// Parses the value at the next non-blank position and records its node.
    mutating func parseValue(keyOffset: Int32) throws(JSONSyntaxError) -> JSONValue {
        let streaming = streamNext
        streamNext = false
        try skipWhitespace()
        guard position < bytes.count else { throw error("unexpected end of input, expected a value") }
        let start = position
        let node = nodes.count
        if recordsNodes {
            nodes.append(JSONDocument.Node(offset: Int32(start), keyOffset: keyOffset, firstChild: 0, childCount: 0))
        }
        switch bytes[start] {
        case UInt8(ascii: "{"): return try parseObject(node: node)
        case UInt8(ascii: "["): return try parseArray(node: node, streaming: streaming)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "'"):
            guard json5 else { throw error("single-quoted strings are not allowed in JSON (only in JSON5)") }
            return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        case UInt8(ascii: "+"):
            guard json5 else { throw error("a '+' sign is not allowed in JSON (only in JSON5)") }
            return .number(try parseNumber())
        case UInt8(ascii: "."):
            guard json5 else { throw error("a number cannot start with '.' in JSON (only in JSON5)") }
            return .number(try parseNumber())
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return try parseWord()
        default:
            throw error("unexpected \(describeCharacter(at: start)), expected a value")
        }
    }

    mutating func parseObject(node: Int) throws(JSONSyntaxError) -> JSONValue {
        let open = position
        try enterContainer()
        position += 1
        let firstPending = pending.count
        var entries: [(key: String, value: JSONValue)] = []
        var index: [String: Int] = [:]
        // Without nodes, the key offsets of `entries` (for the duplicate-key message).
        var keyOffsets: [Int32] = []
        while true {
            try skipWhitespace()
            guard position < bytes.count else { throw unclosed("object", at: open) }
            let b = bytes[position]
            if b == UInt8(ascii: "}") && entries.isEmpty {
                position += 1
                break
            }
            let keyOffset = position
            let key = try parseKey()
            // Duplicate keys: a linear scan for small objects, a dictionary for larger ones.
            var firstIndex: Int?
            if entries.count < 16 {
                firstIndex = entries.firstIndex { $0.key == key }
            } else {
                if index.isEmpty { for (i, e) in entries.enumerated() { index[e.key] = i } }
                firstIndex = index[key]
            }
            if let firstIndex {
                let first =
                    recordsNodes ? Int(nodes[Int(pending[firstPending + firstIndex])].keyOffset) : Int(keyOffsets[firstIndex])
                var quoted = ""
                JSONValue.writeString(key, to: &quoted)
                throw error(
                    "duplicate key \(quoted) (first at line \(locationText(first)))", at: keyOffset)
            }
            try skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                if position >= bytes.count { throw unclosed("object", at: open) }
                throw error("expected ':' after object key")
            }
            position += 1
            let valueNode = nodes.count
            streamNext = depth == 1 && streamedMember == key
            let value = try parseValue(keyOffset: Int32(keyOffset))
            if !index.isEmpty { index[key] = entries.count }
            entries.append((key: key, value: value))
            if recordsNodes { pending.append(Int32(valueNode)) } else { keyOffsets.append(Int32(keyOffset)) }
            try skipWhitespace()
            guard position < bytes.count else { throw unclosed("object", at: open) }
            switch bytes[position] {
            case UInt8(ascii: ","):
                let comma = position
                position += 1
                try skipWhitespace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    if !json5 { throw error("a trailing comma is not allowed in JSON (only in JSON5)", at: comma) }
                    position += 1
                    return closeObject(node: node, firstPending: firstPending, entries: entries)
                }
            case UInt8(ascii: "}"):
                position += 1
                return closeObject(node: node, firstPending: firstPending, entries: entries)
            default:
                throw error("expected ',' or '}' after object member")
            }
        }
        return closeObject(node: node, firstPending: firstPending, entries: entries)
    }

    mutating func closeObject(node: Int, firstPending: Int, entries: [(key: String, value: JSONValue)]) -> JSONValue {
        closeContainer(node: node, firstPending: firstPending)
        return .object(JSONObject(uniqueEntries: entries))
    }

    /// Parses an array; `streaming`: its elements go to ``streamedElement`` and the value
    /// returned is an empty array.
    mutating func parseArray(node: Int, streaming: Bool = false) throws(JSONSyntaxError) -> JSONValue {
        let open = position
        try enterContainer()
        position += 1
        let firstPending = pending.count
        var elements: [JSONValue] = []
        try skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            closeContainer(node: node, firstPending: firstPending)
            return .array(elements)
        }
        while true {
            try skipWhitespace()
            guard position < bytes.count else { throw unclosed("array", at: open) }
            if recordsNodes { pending.append(Int32(nodes.count)) }
            let element = try parseValue(keyOffset: -1)
            if streaming { streamedElement?(element) } else { elements.append(element) }
            try skipWhitespace()
            guard position < bytes.count else { throw unclosed("array", at: open) }
            switch bytes[position] {
            case UInt8(ascii: ","):
                let comma = position
                position += 1
                try skipWhitespace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    if !json5 { throw error("a trailing comma is not allowed in JSON (only in JSON5)", at: comma) }
                    position += 1
                    closeContainer(node: node, firstPending: firstPending)
                    return .array(elements)
                }
            case UInt8(ascii: "]"):
                position += 1
                closeContainer(node: node, firstPending: firstPending)
                return .array(elements)
            default:
                throw error("expected ',' or ']' after array element")
            }
        }
    }

    mutating func enterContainer() throws(JSONSyntaxError) {
        depth += 1
        if depth > JSONReader.maximumDepth {
            throw error("nesting is deeper than \(JSONReader.maximumDepth) levels")
        }
    }

    mutating func closeContainer(node: Int, firstPending: Int) {
        depth -= 1
        guard recordsNodes else { return }
        nodes[node].firstChild = Int32(children.count)
        nodes[node].childCount = Int32(pending.count - firstPending)
        children.append(contentsOf: pending[firstPending...])
        pending.removeSubrange(firstPending...)
    }

    /// `true`, `false`, `null`, and in JSON5 `Infinity` and `NaN`.
    mutating func parseWord() throws(JSONSyntaxError) -> JSONValue {
        let start = position
        let word = readWord()
        switch word {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        case "Infinity" where json5: return .number(.infinity)
        case "NaN" where json5: return .number(.nan)
        case "Infinity", "NaN": throw error("\(word) is not allowed in JSON (only in JSON5)", at: start)
        default: throw error("unexpected word '\(word)', expected a value", at: start)
        }
    }

    /// Reads a run of ASCII letters, digits, `_` and `$` (at most 40 shown).
    mutating func readWord() -> String {
        let start = position
        while position < bytes.count, JSONParser.isIdentifierPartASCII(bytes[position]) { position += 1 }
        let shown = min(position, start + 40)
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<shown]), as: UTF8.self)
    }

    // MARK: Keys and strings

    mutating func parseKey() throws(JSONSyntaxError) -> String {
        let b = bytes[position]
        if b == UInt8(ascii: "\"") { return try parseString() }
        guard json5 else {
            if b == UInt8(ascii: "'") || JSONParser.isIdentifierStartASCII(b) {
                throw error("object keys must be double-quoted strings in JSON")
            }
            throw error("expected a string key or '}'")
        }
        if b == UInt8(ascii: "'") { return try parseString() }
        return try parseIdentifier()
    }

    /// A JSON5 identifier key (ECMAScript IdentifierName), with `\uXXXX` escapes.
    mutating func parseIdentifier() throws(JSONSyntaxError) -> String {
        var scalars = String.UnicodeScalarView()
        while position < bytes.count {
            let b = bytes[position]
            let first = scalars.isEmpty
            if b < 0x80 {
                if first ? JSONParser.isIdentifierStartASCII(b) : JSONParser.isIdentifierPartASCII(b) {
                    scalars.append(Unicode.Scalar(b))
                    position += 1
                    continue
                }
                if b == UInt8(ascii: "\\") {
                    let escape = position
                    guard position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                        throw error("invalid escape in key: only \\uXXXX is allowed")
                    }
                    position += 2
                    let scalar = try readUnicodeEscape(escapeStart: escape)
                    guard first ? JSONParser.isIdentifierStart(scalar) : JSONParser.isIdentifierPart(scalar) else {
                        throw error("\\u escape in key is not an identifier character", at: escape)
                    }
                    scalars.append(scalar)
                    continue
                }
                break
            }
            guard let (scalar, length) = decodeScalar(at: position) else { throw invalidUTF8(at: position) }
            guard first ? JSONParser.isIdentifierStart(scalar) : JSONParser.isIdentifierPart(scalar) else { break }
            scalars.append(scalar)
            position += length
        }
        if scalars.isEmpty { throw error("expected a key or '}'") }
        return String(scalars)
    }

    /// Parses a string starting at its quote (`"`, or `'` in JSON5).
    mutating func parseString() throws(JSONSyntaxError) -> String {
        let open = position
        let quote = bytes[open]
        position += 1
        let contentStart = position
        // Fast path: plain ASCII without escapes.
        while position < bytes.count {
            let b = bytes[position]
            if b == quote {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[contentStart..<position]), as: UTF8.self)
                position += 1
                return s
            }
            if b == UInt8(ascii: "\\") || b < 0x20 || b >= 0x80 { break }
            position += 1
        }
        var out: [UInt8] = Array(UnsafeBufferPointer(rebasing: bytes[contentStart..<position]))
        while true {
            guard position < bytes.count else { throw error("unterminated string", at: open) }
            let b = bytes[position]
            if b == quote {
                position += 1
                return String(decoding: out, as: UTF8.self)
            }
            if b == UInt8(ascii: "\\") {
                try readEscape(into: &out, stringStart: open)
            } else if b == 0x0A || b == 0x0D {
                throw error("unterminated string: a line break comes before the closing quote", at: open)
            } else if b < 0x20 {
                guard json5 else {
                    throw error("control character \(JSONParser.hexScalar(UInt32(b))) in a string must be escaped")
                }
                out.append(b)
                position += 1
            } else if b < 0x80 {
                out.append(b)
                position += 1
            } else {
                guard let (_, length) = decodeScalar(at: position) else { throw invalidUTF8(at: position) }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[position..<position + length]))
                position += length
            }
        }
    }

    /// Reads one escape sequence at `position` (a backslash) and appends its UTF-8.
    mutating func readEscape(into out: inout [UInt8], stringStart: Int) throws(JSONSyntaxError) {
        let escape = position
        guard position + 1 < bytes.count else { throw error("unterminated string", at: stringStart) }
        let c = bytes[position + 1]
        position += 2
        switch c {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            let scalar = try readUnicodeEscape(escapeStart: escape)
            JSONParser.appendUTF8(scalar, to: &out)
        default:
            guard json5 else {
                throw error("invalid escape '\\\(describeEscaped(at: escape + 1))' in a string", at: escape)
            }
            switch c {
            case UInt8(ascii: "'"): out.append(0x27)
            case UInt8(ascii: "v"): out.append(0x0B)
            case UInt8(ascii: "0"):
                if position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                    throw error("invalid escape '\\0' followed by a digit in a string", at: escape)
                }
                out.append(0)
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                throw error("invalid escape '\\\(Character(Unicode.Scalar(c)))' in a string", at: escape)
            case UInt8(ascii: "x"):
                guard position + 1 < bytes.count, let h = JSONParser.hexValue(bytes[position]),
                    let l = JSONParser.hexValue(bytes[position + 1])
                else { throw error("invalid \\x escape: expected 2 hexadecimal digits", at: escape) }
                position += 2
                JSONParser.appendUTF8(Unicode.Scalar(UInt8(h * 16 + l)), to: &out)
            case 0x0A:
                break  // line continuation
            case 0x0D:
                if position < bytes.count, bytes[position] == 0x0A { position += 1 }
            default:
                if c < 0x80 {
                    out.append(c)
                } else {
                    guard let (scalar, length) = decodeScalar(at: escape + 1) else { throw invalidUTF8(at: escape + 1) }
                    position = escape + 1 + length
                    // U+2028 and U+2029 after a backslash are line continuations.
                    if scalar.value != 0x2028 && scalar.value != 0x2029 {
                        JSONParser.appendUTF8(scalar, to: &out)
                    }
                }
            }
        }
    }

    /// Reads the 4 hex digits after `\u` (position is just past the `u`), pairing surrogates.
    mutating func readUnicodeEscape(escapeStart: Int) throws(JSONSyntaxError) -> Unicode.Scalar {
        let first = try readHex4(escapeStart: escapeStart)
        if first >= 0xD800 && first <= 0xDBFF {
            if position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                let save = position
                position += 2
                let second = try readHex4(escapeStart: save)
                if second >= 0xDC00 && second <= 0xDFFF {
                    return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
                }
            }
            throw error("lone surrogate \\u\(JSONParser.hex4(first)) in a string", at: escapeStart)
        }
        if first >= 0xDC00 && first <= 0xDFFF {
            throw error("lone surrogate \\u\(JSONParser.hex4(first)) in a string", at: escapeStart)
        }
        return Unicode.Scalar(first)!
    }

    mutating func readHex4(escapeStart: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for i in 0..<4 {
            guard position + i < bytes.count, let h = JSONParser.hexValue(bytes[position + i]) else {
                throw error("invalid \\u escape: expected 4 hexadecimal digits", at: escapeStart)
            }
            value = value * 16 + UInt32(h)
        }
        position += 4
        return value
    }

    // MARK: Numbers

    static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    mutating func parseNumber() throws(JSONSyntaxError) -> Double {
        let start = position
        var negative = false
        if bytes[position] == UInt8(ascii: "-") || bytes[position] == UInt8(ascii: "+") {
            negative = bytes[position] == UInt8(ascii: "-")
            position += 1
        }
        let sign: Double = negative ? -1 : 1
        guard position < bytes.count else { throw error("expected a digit after '\(negative ? "-" : "+")'") }
        let first = bytes[position]
        if JSONParser.isIdentifierStartASCII(first) {
            let wordStart = position
            let word = readWord()
            switch word {
            case "Infinity" where json5: return sign * .infinity
            case "NaN" where json5: return .nan
            case "Infinity", "NaN": throw error("\(word) is not allowed in JSON (only in JSON5)", at: start)
            default: throw error("expected a digit after '\(negative ? "-" : "+")'", at: wordStart)
            }
        }
        if json5, first == UInt8(ascii: "0"), position + 1 < bytes.count,
            bytes[position + 1] | 0x20 == UInt8(ascii: "x")
        {
            position += 2
            var value = 0.0
            let digitsStart = position
            while position < bytes.count, let h = JSONParser.hexValue(bytes[position]) {
                value = value * 16 + Double(h)
                position += 1
            }
            if position == digitsStart { throw error("expected a hexadecimal digit after '0x'") }
            return sign * value
        }
        // Up to 19 significant digits go into `mantissa`; `decimalExponent` scales it.
        var mantissa: UInt64 = 0
        var significant = 0
        var decimalExponent = 0
        var truncated = false
        var integerDigits = 0
        if first == UInt8(ascii: "0") {
            position += 1
            integerDigits = 1
            if position < bytes.count, JSONParser.isDigit(bytes[position]) {
                throw error("leading zeros are not allowed in numbers", at: start)
            }
        } else {
            while position < bytes.count, JSONParser.isDigit(bytes[position]) {
                if significant < 19 {
                    mantissa = mantissa * 10 + UInt64(bytes[position] - 0x30)
                    significant += 1
                } else {
                    truncated = true
                }
                integerDigits += 1
                position += 1
            }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            if integerDigits == 0 && !json5 { throw error("expected a digit after '-'", at: start + 1) }
            position += 1
            var fractionDigits = 0
            while position < bytes.count, JSONParser.isDigit(bytes[position]) {
                if significant < 19 {
                    mantissa = mantissa * 10 + UInt64(bytes[position] - 0x30)
                    if mantissa != 0 { significant += 1 }
                    decimalExponent -= 1
                } else {
                    truncated = true
                }
                fractionDigits += 1
                position += 1
            }
            if fractionDigits == 0 && (!json5 || integerDigits == 0) {
                throw error("expected a digit after the decimal point")
            }
        } else if integerDigits == 0 {
            throw error("expected a digit after '\(negative ? "-" : "+")'")
        }
        var exponent = 0
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            var exponentNegative = false
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") || bytes[position] == UInt8(ascii: "+") {
                exponentNegative = bytes[position] == UInt8(ascii: "-")
                position += 1
            }
            let exponentStart = position
            while position < bytes.count, JSONParser.isDigit(bytes[position]) {
                if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[position] - 0x30) }
                position += 1
            }
            if position == exponentStart { throw error("expected a digit in the exponent") }
            if exponentNegative { exponent = -exponent }
        }
        // Exact fast path (Clinger): a mantissa below 2^53 scaled by an exact power of ten.
        let scale = exponent + decimalExponent
        if !truncated, mantissa <= 1 << 53, abs(scale) <= 22 {
            let m = Double(mantissa)
            return sign * (scale < 0 ? m / JSONParser.powersOfTen[-scale] : m * JSONParser.powersOfTen[scale])
        }
        return sign * slowNumber(from: start, to: position)
    }

    /// Converts a number that needs correct rounding beyond the fast path, via a normalized text.
    func slowNumber(from start: Int, to end: Int) -> Double {
        var digits = ""
        var exponent = 0
        var fraction = 0
        var inFraction = false
        var i = start
        while i < end {
            let b = bytes[i]
            if JSONParser.isDigit(b) {
                digits.unicodeScalars.append(Unicode.Scalar(b))
                if inFraction { fraction += 1 }
            } else if b == UInt8(ascii: ".") {
                inFraction = true
            } else if b | 0x20 == UInt8(ascii: "e") {
                var negative = false
                i += 1
                if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                    negative = bytes[i] == UInt8(ascii: "-")
                    i += 1
                }
                while i < end {
                    if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[i] - 0x30) }
                    i += 1
                }
                if negative { exponent = -exponent }
                break
            }
            i += 1
        }
        if digits.isEmpty { digits = "0" }
        return Double(digits + "e" + String(exponent - fraction)) ?? .nan
    }

    // MARK: Blanks and comments

    mutating func skipWhitespace() throws(JSONSyntaxError) {
        while position < bytes.count {
            let b = bytes[position]
            switch b {
            case 0x20, 0x0A, 0x0D, 0x09:
                position += 1
            case UInt8(ascii: "/"):
                guard position + 1 < bytes.count else { return }
                let next = bytes[position + 1]
                guard next == UInt8(ascii: "/") || next == UInt8(ascii: "*") else { return }
                guard json5 else { throw error("comments are not allowed in JSON (only in JSON5)") }
                if next == UInt8(ascii: "/") {
                    position += 2
                    while position < bytes.count, bytes[position] != 0x0A, bytes[position] != 0x0D { position += 1 }
                } else {
                    let open = position
                    position += 2
                    while true {
                        guard position + 1 < bytes.count else { throw error("unterminated block comment", at: open) }
                        if bytes[position] == UInt8(ascii: "*") && bytes[position + 1] == UInt8(ascii: "/") {
                            position += 2
                            break
                        }
                        position += 1
                    }
                }
            case 0x0B where json5, 0x0C where json5:
                position += 1
            case 0x80... where json5:
                guard let (scalar, length) = decodeScalar(at: position) else { throw invalidUTF8(at: position) }
                guard scalar.value == 0xFEFF || scalar.value == 0x2028 || scalar.value == 0x2029
                    || scalar.properties.generalCategory == .spaceSeparator
                else { return }
                position += length
            default:
                return
            }
        }
    }

    // MARK: UTF-8

    /// Decodes one well-formed UTF-8 scalar at `offset`: nil for invalid bytes (overlong forms,
    /// surrogates, values above U+10FFFF, truncated sequences).
    func decodeScalar(at offset: Int) -> (Unicode.Scalar, Int)? {
        let b0 = bytes[offset]
        if b0 < 0x80 { return (Unicode.Scalar(b0), 1) }
        let length: Int
        var value: UInt32
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2; value = UInt32(b0 & 0x1F)
        case 0xE0: length = 3; value = UInt32(b0 & 0x0F); low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3; value = UInt32(b0 & 0x0F)
        case 0xED: length = 3; value = UInt32(b0 & 0x0F); high = 0x9F
        case 0xF0: length = 4; value = UInt32(b0 & 0x07); low = 0x90
        case 0xF1...0xF3: length = 4; value = UInt32(b0 & 0x07)
        case 0xF4: length = 4; value = UInt32(b0 & 0x07); high = 0x8F
        default: return nil
        }
        guard offset + length <= bytes.count else { return nil }
        for i in 1..<length {
            let b = bytes[offset + i]
            if i == 1 {
                guard b >= low && b <= high else { return nil }
            } else {
                guard b >= 0x80 && b <= 0xBF else { return nil }
            }
            value = value << 6 | UInt32(b & 0x3F)
        }
        guard let scalar = Unicode.Scalar(value) else { return nil }
        return (scalar, length)
    }

    static func appendUTF8(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        out.append(contentsOf: UTF8.encode(scalar)!)
    }

    // MARK: Character classes

    @inline(__always) static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    static func isIdentifierStartASCII(_ b: UInt8) -> Bool {
        (b | 0x20 >= UInt8(ascii: "a") && b | 0x20 <= UInt8(ascii: "z")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "$")
    }

    static func isIdentifierPartASCII(_ b: UInt8) -> Bool { isIdentifierStartASCII(b) || isDigit(b) }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
        s.isASCII ? isIdentifierStartASCII(UInt8(s.value)) : s.properties.isIDStart
    }

    static func isIdentifierPart(_ s: Unicode.Scalar) -> Bool {
        if s.isASCII { return isIdentifierPartASCII(UInt8(s.value)) }
        return s.properties.isIDContinue || s.value == 0x200C || s.value == 0x200D
    }

    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x61...0x66: Int(b - 0x61 + 10)
        case 0x41...0x46: Int(b - 0x41 + 10)
        default: nil
        }
    }

    static func hex4(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    static func hexScalar(_ v: UInt32) -> String { "U+" + hex4(v) }

    // MARK: Errors

    /// `character 'x'`, `character U+00A0`, or `end of input`, for messages.
    func describeCharacter(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of input" }
        guard let (scalar, _) = decodeScalar(at: offset) else {
            return "byte 0x\(String(bytes[offset], radix: 16, uppercase: true)) (invalid UTF-8)"
        }
        if scalar.value >= 0x21 && scalar.value < 0x7F { return "character '\(Character(scalar))'" }
        return "character \(JSONParser.hexScalar(scalar.value))"
    }

    /// The character after a backslash, for the invalid-escape message.
    func describeEscaped(at offset: Int) -> String {
        guard let (scalar, _) = decodeScalar(at: offset) else { return "?" }
        if scalar.value >= 0x21 && scalar.value < 0x7F { return String(Character(scalar)) }
        return JSONParser.hexScalar(scalar.value)
    }

    func locationText(_ offset: Int) -> String {
        let l = JSONDocument.location(ofByteOffset: offset, in: bytes)
        return "\(l.line), column \(l.column)"
    }

    func error(_ message: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(
            file: file, location: JSONDocument.location(ofByteOffset: offset ?? position, in: bytes), message: message)
    }

    func invalidUTF8(at offset: Int) -> JSONSyntaxError {
        error("invalid UTF-8 byte 0x\(String(bytes[offset], radix: 16, uppercase: true))", at: offset)
    }

    func unclosed(_ kind: String, at open: Int) -> JSONSyntaxError {
        error("unexpected end of input: the \(kind) opened at line \(locationText(open)) is not closed")
    }
}
