/// A small, tolerant XML scanner for GPX: start tags with their attributes (either quote
/// style), end tags and text, with namespace prefixes dropped from names. Comments,
/// processing instructions and declarations are skipped; CDATA is passed on as text. It does
/// not check that tags nest: the GPX reader only needs the events in order.
struct XMLScanner {
    enum Event {
        /// `<name a="1">` (or `<name/>`, which is followed by an `.end`).
        case start(name: String, attributes: [(name: String, value: String)])
        case end(name: String)
        /// Text between tags, with entities decoded.
        case text(String)
    }

    private let bytes: [UInt8]
    private let file: String
    private var position = 0
    private var line = 1
    private var countedUpTo = 0

    init(_ bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
    }

    /// The 1-based line of byte `offset` (counted on from the last call; from the start again
    /// if `offset` is before it).
    mutating func lineNumber(at offset: Int) -> Int {
        if offset < countedUpTo {
            line = 1
            countedUpTo = 0
        }
        while countedUpTo < offset, countedUpTo < bytes.count {
            if bytes[countedUpTo] == 0x0A { line += 1 }
            countedUpTo += 1
        }
        return line
    }

    /// Calls `body` with every event and the line it starts on.
    mutating func scan(_ body: (Event, Int) throws(TrackError) -> Void) throws(TrackError) {
        let n = bytes.count
        while position < n {
            let start = position
            if bytes[position] != UInt8(ascii: "<") {
                while position < n, bytes[position] != UInt8(ascii: "<") { position += 1 }
                try body(.text(try decodeEntities(start..<position)), lineNumber(at: start))
                continue
            }
            if has("<!--") {
                position = try skip(past: "-->", what: "comment", from: start)
            } else if has("<![CDATA[") {
                let end = try skip(past: "]]>", what: "CDATA section", from: start)
                try body(.text(String(decoding: bytes[(start + 9)..<(end - 3)], as: UTF8.self)), lineNumber(at: start))
                position = end
            } else if has("<?") {
                position = try skip(past: "?>", what: "processing instruction", from: start)
            } else if has("<!") {
                position = try skip(past: ">", what: "declaration", from: start)
            } else if has("</") {
                position += 2
                let name = readName()
                skipSpace()
                guard position < n, bytes[position] == UInt8(ascii: ">") else {
                    throw error(at: start, "expected '>' to close the end tag </\(name)")
                }
                position += 1
                try body(.end(name: localName(name)), lineNumber(at: start))
            } else {
                position += 1
                let name = readName()
                guard !name.isEmpty else { throw error(at: start, "expected an element name after '<'") }
                var attributes: [(name: String, value: String)] = []
                var selfClosing = false
                while true {
                    skipSpace()
                    guard position < n else { throw error(at: start, "the tag <\(name) is not closed with '>'") }
                    if bytes[position] == UInt8(ascii: ">") {
                        position += 1
                        break
                    }
                    if bytes[position] == UInt8(ascii: "/"), position + 1 < n, bytes[position + 1] == UInt8(ascii: ">") {
                        position += 2
                        selfClosing = true
                        break
                    }
                    let attribute = readName()
                    guard !attribute.isEmpty else {
                        throw error(at: position, "expected an attribute name or '>' in <\(name)>")
                    }
                    skipSpace()
                    guard position < n, bytes[position] == UInt8(ascii: "=") else {
                        throw error(at: position, "expected '=' after attribute \(attribute) in <\(name)>")
                    }
                    position += 1
                    skipSpace()
                    guard position < n, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'")
                    else { throw error(at: position, "expected a quoted value for attribute \(attribute) in <\(name)>") }
                    let quote = bytes[position]
                    position += 1
                    let valueStart = position
                    while position < n, bytes[position] != quote { position += 1 }
                    guard position < n else {
                        throw error(at: valueStart, "the value of attribute \(attribute) in <\(name)> is not closed")
                    }
                    attributes.append((localName(attribute), try decodeEntities(valueStart..<position)))
                    position += 1
                }
                let line = lineNumber(at: start)
                try body(.start(name: localName(name), attributes: attributes), line)
                if selfClosing { try body(.end(name: localName(name)), line) }
            }
        }
    }

    private func has(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return prefix.withUTF8Buffer { p in
            (0..<count).allSatisfy { bytes[position + $0] == p[$0] }
        }
    }

    /// The offset just past the next `terminator`, or an error naming the unterminated construct.
    private mutating func skip(past terminator: StaticString, what: String, from start: Int) throws(TrackError) -> Int {
        let t = terminator.withUTF8Buffer { Array($0) }
        var i = position
        while i + t.count <= bytes.count {
            if bytes[i] == t[0], bytes[i..<(i + t.count)].elementsEqual(t) { return i + t.count }
            i += 1
        }
        throw error(at: start, "this \(what) is never closed (expected '\(String(decoding: t, as: UTF8.self))')")
    }

    private mutating func readName() -> String {
        let start = position
        while position < bytes.count {
            let b = bytes[position]
            if TextLines.isSpace(b) || b == UInt8(ascii: ">") || b == UInt8(ascii: "/") || b == UInt8(ascii: "=")
                || b == UInt8(ascii: "<")
            {
                break
            }
            position += 1
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func skipSpace() {
        while position < bytes.count, TextLines.isSpace(bytes[position]) { position += 1 }
    }

    private func localName(_ name: String) -> String {
        guard let colon = name.lastIndex(of: ":") else { return name }
        return String(name[name.index(after: colon)...])
    }

    /// The text of `range` with `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;` and `&#…;` decoded.
    private mutating func decodeEntities(_ range: Range<Int>) throws(TrackError) -> String {
        guard bytes[range].contains(UInt8(ascii: "&")) else { return String(decoding: bytes[range], as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var i = range.lowerBound
        while i < range.upperBound {
            guard bytes[i] == UInt8(ascii: "&") else {
                out.append(bytes[i])
                i += 1
                continue
            }
            guard let semicolon = bytes[i..<range.upperBound].firstIndex(of: UInt8(ascii: ";")), semicolon - i <= 10 else {
                throw error(at: i, "expected an entity such as &amp; (a bare '&' must be written &amp;)")
            }
            let entity = String(decoding: bytes[(i + 1)..<semicolon], as: UTF8.self)
            var scalar: Unicode.Scalar?
            switch entity {
            case "amp": scalar = "&"
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default:
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init)
                }
            }
            guard let scalar else { throw error(at: i, "unknown entity &\(entity);") }
            out.append(contentsOf: Array(String(Character(scalar)).utf8))
            i = semicolon + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func error(at offset: Int, _ message: String) -> TrackError {
        TrackError(file: file, line: lineNumber(at: offset), message: message)
    }
}
