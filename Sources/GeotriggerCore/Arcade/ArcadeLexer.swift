/// A line and column in an expression's source, both from 1; columns count Unicode scalars.
struct ArcadePosition: Sendable, Equatable {
    var line: Int
    var column: Int
}

/// The source of one expression as Unicode scalars, with the start of every line, so any
/// offset maps to a line and column for error messages.
struct ArcadeSource {
    let scalars: [Unicode.Scalar]
    let lineStarts: [Int]
    let isMultiline: Bool

    init(_ text: String) {
        let all = Array(text.unicodeScalars)
        var starts = [0]
        for (i, s) in all.enumerated() where s == "\n" { starts.append(i + 1) }
        scalars = all
        lineStarts = starts
        // A trailing newline does not make a one-line expression multi-line.
        isMultiline = starts.dropFirst().contains { $0 < all.count }
    }

    func position(_ offset: Int) -> ArcadePosition {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
        }
        return ArcadePosition(line: low + 1, column: offset - lineStarts[low] + 1)
    }

    func error(_ message: String, at position: ArcadePosition) -> ArcadeError {
        ArcadeError(message, line: isMultiline ? position.line : nil, column: position.column)
    }

    func error(_ message: String, offset: Int) -> ArcadeError {
        error(message, at: position(offset))
    }
}

/// Punctuation and operators.
enum ArcadeSymbol: String, Sendable {
    case openParen = "(", closeParen = ")", openBracket = "[", closeBracket = "]"
    case openBrace = "{", closeBrace = "}", comma = ",", colon = ":", semicolon = ";", dot = "."
    case plus = "+", minus = "-", star = "*", slash = "/", percent = "%", bang = "!"
    case equal = "==", notEqual = "!=", less = "<", lessEqual = "<=", greater = ">", greaterEqual = ">="
    case and = "&&", or = "||", assign = "=", plusAssign = "+=", minusAssign = "-="
    case starAssign = "*=", slashAssign = "/="
}

/// One piece of a template literal: literal text, or the source range of a `${...}`.
enum ArcadeTemplatePiece: Equatable {
    case text(String)
    case code(Range<Int>)
}

enum ArcadeTokenKind: Equatable {
    case number(Double)
    case string(String)
    case template([ArcadeTemplatePiece])
    /// An identifier or keyword, as spelled.
    case identifier(String)
    /// `$name`, the name as spelled without the `$`.
    case profileVariable(String)
    case symbol(ArcadeSymbol)
    case end
}

struct ArcadeToken {
    var kind: ArcadeTokenKind
    var offset: Int
    /// A line break (or a comment holding one) comes between this token and the previous one.
    var newlineBefore: Bool
}

/// Splits a range of the source into tokens, skipping white space and `//`, `/* */` comments.
struct ArcadeLexer {
    let source: ArcadeSource
    private var index: Int
    private let end: Int

    init(source: ArcadeSource, range: Range<Int>) {
        self.source = source
        self.index = range.lowerBound
        self.end = range.upperBound
    }

    private var scalars: [Unicode.Scalar] { source.scalars }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        index + ahead < end ? scalars[index + ahead] : nil
    }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
        s == "_" || ("a"..."z").contains(s) || ("A"..."Z").contains(s) || (s.value > 0x7F && s.properties.isAlphabetic)
    }

    static func isIdentifierPart(_ s: Unicode.Scalar) -> Bool {
        isIdentifierStart(s) || ("0"..."9").contains(s)
    }

    mutating func tokenize() throws(ArcadeError) -> [ArcadeToken] {
        var tokens: [ArcadeToken] = []
        while true {
            let newline = try skipTrivia()
            let start = index
            guard let c = peek() else {
                tokens.append(ArcadeToken(kind: .end, offset: end, newlineBefore: newline))
                return tokens
            }
            let kind: ArcadeTokenKind
            if ("0"..."9").contains(c) || (c == "." && peek(1).map { ("0"..."9").contains($0) } == true) {
                kind = try number()
            } else if c == "\"" || c == "'" {
                kind = .string(try string(quote: c))
            } else if c == "`" {
                kind = .template(try template())
            } else if c == "$", let next = peek(1), ArcadeLexer.isIdentifierStart(next) {
                index += 1
                kind = .profileVariable(identifier())
            } else if ArcadeLexer.isIdentifierStart(c) {
                kind = .identifier(identifier())
            } else {
                kind = .symbol(try symbol())
            }
            tokens.append(ArcadeToken(kind: kind, offset: start, newlineBefore: newline))
        }
    }

    /// Skips white space and comments; tells whether a line break was among them.
    private mutating func skipTrivia() throws(ArcadeError) -> Bool {
        var newline = false
        while let c = peek() {
            switch c {
            case "\n", "\r", "\u{2028}", "\u{2029}":
                newline = true
                index += 1
            case " ", "\t", "\u{0B}", "\u{0C}", "\u{A0}", "\u{FEFF}":
                index += 1
            case "/" where peek(1) == "/":
                while let d = peek(), d != "\n" { index += 1 }
            case "/" where peek(1) == "*":
                let start = index
                index += 2
                while true {
                    guard let d = peek() else { throw source.error("unterminated comment", offset: start) }
                    if d == "*", peek(1) == "/" {
                        index += 2
                        break
                    }
                    if d == "\n" { newline = true }
                    index += 1
                }
            default:
                return newline
            }
        }
        return newline
    }

    private mutating func identifier() -> String {
        var text = String.UnicodeScalarView()
        while let c = peek(), ArcadeLexer.isIdentifierPart(c) {
            text.append(c)
            index += 1
        }
        return String(text)
    }

    private mutating func number() throws(ArcadeError) -> ArcadeTokenKind {
        let start = index
        var text = ""
        func digits(_ lexer: inout ArcadeLexer, _ text: inout String) {
            while let c = lexer.peek(), ("0"..."9").contains(c) {
                text.unicodeScalars.append(c)
                lexer.index += 1
            }
        }
        digits(&self, &text)
        if peek() == ".", let next = peek(1), ("0"..."9").contains(next) || text.isEmpty == false {
            text += "."
            index += 1
            digits(&self, &text)
        }
        if let e = peek(), e == "e" || e == "E" {
            var ahead = 1
            if let sign = peek(1), sign == "+" || sign == "-" { ahead = 2 }
            if let d = peek(ahead), ("0"..."9").contains(d) {
                for _ in 0..<ahead {
                    text.unicodeScalars.append(peek()!)
                    index += 1
                }
                digits(&self, &text)
            }
        }
        if let c = peek(), ArcadeLexer.isIdentifierStart(c) {
            throw source.error("unexpected '\(c)' after number", offset: index)
        }
        if text.hasSuffix(".") { text += "0" }
        guard let value = Double(text) else { throw source.error("invalid number '\(text)'", offset: start) }
        return .number(value)
    }

    /// Reads one escape after a backslash (the backslash already consumed).
    private mutating func escape(into text: inout String.UnicodeScalarView) throws(ArcadeError) {
        let at = index - 1
        guard let c = peek() else { throw source.error("unterminated text literal", offset: at) }
        index += 1
        switch c {
        case "n": text.append("\n")
        case "t": text.append("\t")
        case "r": text.append("\r")
        case "b": text.append("\u{08}")
        case "f": text.append("\u{0C}")
        case "v": text.append("\u{0B}")
        case "0": text.append("\u{0}")
        case "u":
            var hex = ""
            if peek() == "{" {
                index += 1
                while let d = peek(), d != "}", hex.count < 8 {
                    hex.unicodeScalars.append(d)
                    index += 1
                }
                guard peek() == "}" else { throw source.error("invalid \\u{...} escape", offset: at) }
                index += 1
            } else {
                for _ in 0..<4 {
                    guard let d = peek() else { break }
                    hex.unicodeScalars.append(d)
                    index += 1
                }
            }
            guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                throw source.error("invalid \\u escape", offset: at)
            }
            text.append(scalar)
        case "\n": break  // a line continuation
        default: text.append(c)
        }
    }

    private mutating func string(quote: Unicode.Scalar) throws(ArcadeError) -> String {
        let start = index
        index += 1
        var text = String.UnicodeScalarView()
        while true {
            guard let c = peek(), c != "\n" else { throw source.error("unterminated text literal", offset: start) }
            index += 1
            if c == quote { return String(text) }
            if c == "\\" { try escape(into: &text) } else { text.append(c) }
        }
    }

    private mutating func template() throws(ArcadeError) -> [ArcadeTemplatePiece] {
        let start = index
        index += 1
        var pieces: [ArcadeTemplatePiece] = []
        var text = String.UnicodeScalarView()
        while true {
            guard let c = peek() else { throw source.error("unterminated template literal", offset: start) }
            index += 1
            switch c {
            case "`":
                if !text.isEmpty { pieces.append(.text(String(text))) }
                return pieces
            case "\\":
                try escape(into: &text)
            case "$" where peek() == "{":
                if !text.isEmpty { pieces.append(.text(String(text))) }
                text = String.UnicodeScalarView()
                index += 1
                let codeStart = index
                try skipBalancedCode(openedAt: index - 2)
                pieces.append(.code(codeStart..<(index - 1)))
            default:
                text.append(c)
            }
        }
    }

    /// Moves past the `}` closing a `${`, stepping over nested braces, strings and templates.
    private mutating func skipBalancedCode(openedAt: Int) throws(ArcadeError) {
        var depth = 0
        while let c = peek() {
            switch c {
            case "{": depth += 1; index += 1
            case "}":
                index += 1
                if depth == 0 { return }
                depth -= 1
            case "\"", "'": _ = try string(quote: c)
            case "`": _ = try template()
            default: index += 1
            }
        }
        throw source.error("unterminated '${' in template literal", offset: openedAt)
    }

    private mutating func symbol() throws(ArcadeError) -> ArcadeSymbol {
        guard let c = peek() else { throw source.error("unexpected end", offset: index) }
        if let next = peek(1) {
            var pair = String(Character(c))
            pair.unicodeScalars.append(next)
            if let symbol = ArcadeSymbol(rawValue: pair) {
                index += 2
                return symbol
            }
        }
        if let symbol = ArcadeSymbol(rawValue: String(Character(c))) {
            index += 1
            return symbol
        }
        if c == "&" || c == "|" {
            throw source.error("unexpected '\(c)' (logical operators are '&&' and '||')", offset: index)
        }
        throw source.error("unexpected character '\(c)'", offset: index)
    }
}
