/// A recursive-descent parser for the Arcade subset (JavaScript-like precedence:
/// `||` < `&&` < `==` `!=` < `<` `<=` `>` `>=` < `+` `-` < `*` `/` `%` < unary < member, index,
/// call). Statements are separated by `;` or a line break. Keywords, like all identifiers, are
/// case-insensitive.
///
/// Bounded: brackets, parentheses, unary operators and blocks nest at most
/// ``ArcadeLimits/maximumNesting`` deep, and the expression tree at most
/// ``ArcadeLimits/maximumTreeDepth`` deep (a long `a + b + c ...` chain), so a hostile expression
/// is refused here instead of exhausting the stack later.
struct ArcadeParser {
    let source: ArcadeSource
    private var tokens: [ArcadeToken]
    private var index = 0
    private var nesting = 0

    init(source: ArcadeSource, range: Range<Int>) throws(ArcadeError) {
        self.source = source
        var lexer = ArcadeLexer(source: source, range: range)
        tokens = try lexer.tokenize()
    }

    // MARK: Tokens

    private var current: ArcadeToken { tokens[index] }
    private var currentPosition: ArcadePosition { source.position(current.offset) }

    private func peekKind(_ ahead: Int) -> ArcadeTokenKind {
        tokens[min(index + ahead, tokens.count - 1)].kind
    }

    private mutating func advance() -> ArcadeToken {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    private func isSymbol(_ symbol: ArcadeSymbol) -> Bool {
        current.kind == .symbol(symbol)
    }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let name) = current.kind { return name.lowercased() == word }
        return false
    }

    private mutating func accept(_ symbol: ArcadeSymbol) -> Bool {
        guard isSymbol(symbol) else { return false }
        _ = advance()
        return true
    }

    private mutating func expect(_ symbol: ArcadeSymbol) throws(ArcadeError) {
        guard accept(symbol) else { throw error("expected '\(symbol.rawValue)'") }
    }

    /// An error at the current token: "expected ')', found 'x'".
    private func error(_ expected: String) -> ArcadeError {
        source.error("\(expected), found \(describe(current))", offset: current.offset)
    }

    private func describe(_ token: ArcadeToken) -> String {
        switch token.kind {
        case .number: "a number"
        case .string: "a text literal"
        case .template: "a template literal"
        case .identifier(let name): "'\(name)'"
        case .profileVariable(let name): "'$\(name)'"
        case .symbol(let symbol): "'\(symbol.rawValue)'"
        case .end: "the end of the expression"
        }
    }

    private mutating func enter() throws(ArcadeError) {
        nesting += 1
        if nesting > ArcadeLimits.maximumNesting {
            throw source.error(
                "expression nested more than \(ArcadeLimits.maximumNesting) levels deep", offset: current.offset)
        }
    }

    private func checked(_ node: ArcadeNode) throws(ArcadeError) -> ArcadeNode {
        if node.depth > ArcadeLimits.maximumTreeDepth {
            throw source.error(
                "expression too complex (more than \(ArcadeLimits.maximumTreeDepth) nested operations)",
                at: node.position)
        }
        return node
    }

    // MARK: Statements

    /// The whole program: statements up to the end.
    mutating func parseProgram() throws(ArcadeError) -> [ArcadeStatement] {
        let statements = try parseStatements(inBlock: false)
        guard current.kind == .end else { throw error("expected a statement") }
        return statements
    }

    /// Parses only an expression filling the range (a template literal's `${...}`).
    mutating func parseLoneExpression() throws(ArcadeError) -> ArcadeNode {
        let node = try parseExpression()
        guard current.kind == .end else { throw error("expected '}' closing '${'") }
        return node
    }

    private mutating func parseStatements(inBlock: Bool) throws(ArcadeError) -> [ArcadeStatement] {
        var statements: [ArcadeStatement] = []
        while true {
            while accept(.semicolon) {}
            if current.kind == .end || (inBlock && isSymbol(.closeBrace)) { return statements }
            statements.append(try parseStatement())
            // Statements end with ';', a line break, a '}' or the end; a block needs nothing after it.
            let afterBlock = index > 0 && tokens[index - 1].kind == .symbol(.closeBrace)
            if isSymbol(.semicolon) || isSymbol(.closeBrace) || current.kind == .end || current.newlineBefore || afterBlock {
                continue
            }
            throw error("expected ';' or a line break")
        }
    }

    private mutating func parseBlockOrStatement() throws(ArcadeError) -> [ArcadeStatement] {
        try enter()
        defer { nesting -= 1 }
        if isSymbol(.openBrace), !startsDictionary() {
            _ = advance()
            let statements = try parseStatements(inBlock: true)
            try expect(.closeBrace)
            return statements
        }
        return [try parseStatement()]
    }

    /// `{` starts a dictionary literal rather than a block when `}` or `key :` follows.
    private func startsDictionary() -> Bool {
        guard isSymbol(.openBrace) else { return false }
        switch peekKind(1) {
        case .string, .identifier: return peekKind(2) == .symbol(.colon)
        default: return false
        }
    }

    private mutating func parseStatement() throws(ArcadeError) -> ArcadeStatement {
        let position = currentPosition
        if case .identifier(let word) = current.kind {
            switch word.lowercased() {
            case "var": return try parseDeclarations()
            case "if":
                _ = advance()
                try expect(.openParen)
                let condition = try parseExpression()
                try expect(.closeParen)
                let then = try parseBlockOrStatement()
                var otherwise: [ArcadeStatement] = []
                if isKeyword("else") {
                    _ = advance()
                    otherwise = try parseBlockOrStatement()
                }
                return .ifElse(condition: condition, then: then, otherwise: otherwise)
            case "return":
                _ = advance()
                // Unlike JavaScript, a line break after `return` does not end it: `return` followed
                // by a dictionary on the next line returns the dictionary, not null.
                if isSymbol(.semicolon) || isSymbol(.closeBrace) || current.kind == .end {
                    return .return(nil, position: position)
                }
                return .return(try parseExpression(), position: position)
            case "for", "while", "do", "break", "continue":
                throw source.error("'\(word)': loops are not supported in geotrigger expressions", at: position)
            case "function":
                throw source.error("user functions are not supported in geotrigger expressions", at: position)
            case "import", "export":
                throw source.error("'\(word)' is not supported in geotrigger expressions", at: position)
            case "else":
                throw source.error("'else' without 'if'", at: position)
            default: break
            }
        }
        if isSymbol(.openBrace), !startsDictionary() {
            let statements = try parseBlockOrStatement()
            // A bare block runs its statements in place (variables are script-wide).
            return .ifElse(condition: ArcadeNode(.literal(.bool(true)), at: position), then: statements, otherwise: [])
        }
        let expression = try parseExpression()
        let assignment: ArcadeBinaryOperator??
        switch current.kind {
        case .symbol(.assign): assignment = .some(nil)
        case .symbol(.plusAssign): assignment = .some(.add)
        case .symbol(.minusAssign): assignment = .some(.subtract)
        case .symbol(.starAssign): assignment = .some(.multiply)
        case .symbol(.slashAssign): assignment = .some(.divide)
        default: assignment = nil
        }
        guard let op = assignment else { return .expression(expression) }
        let operatorPosition = currentPosition
        _ = advance()
        let target = try assignmentTarget(expression, operatorPosition: operatorPosition)
        let value = try parseExpression()
        return .assign(target: target, operator: op, value: value, position: operatorPosition)
    }

    private mutating func parseDeclarations() throws(ArcadeError) -> ArcadeStatement {
        var declarations: [ArcadeStatement] = []
        let position = currentPosition
        _ = advance()  // var
        repeat {
            let namePosition = currentPosition
            guard case .identifier(let name) = current.kind else { throw error("expected a variable name after 'var'") }
            if ArcadeParser.reservedWords.contains(name.lowercased()) {
                throw source.error("'\(name)' is a keyword, not a variable name", at: namePosition)
            }
            _ = advance()
            var initializer: ArcadeNode?
            if accept(.assign) { initializer = try parseExpression() }
            declarations.append(.declare(name: name.lowercased(), spelled: name, position: namePosition, initializer: initializer))
        } while accept(.comma)
        if declarations.count == 1 { return declarations[0] }
        return .ifElse(condition: ArcadeNode(.literal(.bool(true)), at: position), then: declarations, otherwise: [])
    }

    static let reservedWords: Set<String> = [
        "var", "if", "else", "return", "true", "false", "null", "for", "while", "do", "break",
        "continue", "function", "import", "export", "in",
    ]

    private func assignmentTarget(_ node: ArcadeNode, operatorPosition: ArcadePosition) throws(ArcadeError) -> ArcadeAssignmentTarget {
        var path: [ArcadeAssignmentTarget.Step] = []
        var node = node
        while true {
            switch node.kind {
            case .variable(let spelled):
                return ArcadeAssignmentTarget(
                    name: spelled.lowercased(), spelled: spelled, position: node.position, path: path.reversed())
            case .member(let base, let name):
                path.append(.member(name, node.position))
                node = base
            case .index(let base, let key):
                path.append(.index(key, node.position))
                node = base
            case .profile(let name):
                throw source.error("'$\(name)' is read-only", at: node.position)
            default:
                throw source.error("cannot assign to this expression", at: operatorPosition)
            }
        }
    }

    // MARK: Expressions

    mutating func parseExpression() throws(ArcadeError) -> ArcadeNode {
        try enter()
        defer { nesting -= 1 }
        return try parseOr()
    }

    private mutating func parseOr() throws(ArcadeError) -> ArcadeNode {
        var left = try parseAnd()
        while isSymbol(.or) {
            let position = currentPosition
            _ = advance()
            let right = try parseAnd()
            left = try checked(ArcadeNode(.or(left, right), at: position, children: [left, right]))
        }
        return left
    }

    private mutating func parseAnd() throws(ArcadeError) -> ArcadeNode {
        var left = try parseEquality()
        while isSymbol(.and) {
            let position = currentPosition
            _ = advance()
            let right = try parseEquality()
            left = try checked(ArcadeNode(.and(left, right), at: position, children: [left, right]))
        }
        return left
    }

    private mutating func parseBinary(
        _ operators: [ArcadeSymbol: ArcadeBinaryOperator],
        operand: (inout ArcadeParser) throws(ArcadeError) -> ArcadeNode
    ) throws(ArcadeError) -> ArcadeNode {
        var left = try operand(&self)
        while case .symbol(let symbol) = current.kind, let op = operators[symbol] {
            let position = currentPosition
            _ = advance()
            let right = try operand(&self)
            left = try checked(ArcadeNode(.binary(op, left, right), at: position, children: [left, right]))
        }
        return left
    }

    private mutating func parseEquality() throws(ArcadeError) -> ArcadeNode {
        try parseBinary([.equal: .equal, .notEqual: .notEqual]) { (p: inout ArcadeParser) throws(ArcadeError) in
            try p.parseRelational()
        }
    }

    private mutating func parseRelational() throws(ArcadeError) -> ArcadeNode {
        try parseBinary([.less: .less, .lessEqual: .lessEqual, .greater: .greater, .greaterEqual: .greaterEqual]) {
            (p: inout ArcadeParser) throws(ArcadeError) in try p.parseAdditive()
        }
    }

    private mutating func parseAdditive() throws(ArcadeError) -> ArcadeNode {
        try parseBinary([.plus: .add, .minus: .subtract]) { (p: inout ArcadeParser) throws(ArcadeError) in
            try p.parseMultiplicative()
        }
    }

    private mutating func parseMultiplicative() throws(ArcadeError) -> ArcadeNode {
        try parseBinary([.star: .multiply, .slash: .divide, .percent: .modulo]) {
            (p: inout ArcadeParser) throws(ArcadeError) in try p.parseUnary()
        }
    }

    private mutating func parseUnary() throws(ArcadeError) -> ArcadeNode {
        let op: ArcadeUnaryOperator
        switch current.kind {
        case .symbol(.minus): op = .negate
        case .symbol(.plus): op = .plus
        case .symbol(.bang): op = .not
        default: return try parsePostfix()
        }
        let position = currentPosition
        _ = advance()
        try enter()
        defer { nesting -= 1 }
        let operand = try parseUnary()
        return try checked(ArcadeNode(.unary(op, operand), at: position, children: [operand]))
    }

    private mutating func parsePostfix() throws(ArcadeError) -> ArcadeNode {
        var node = try parsePrimary()
        while true {
            let position = currentPosition
            if accept(.dot) {
                guard case .identifier(let name) = current.kind else { throw error("expected a name after '.'") }
                _ = advance()
                node = try checked(ArcadeNode(.member(node, name), at: position, children: [node]))
            } else if isSymbol(.openBracket) {
                _ = advance()
                let key = try parseExpression()
                try expect(.closeBracket)
                node = try checked(ArcadeNode(.index(node, key), at: position, children: [node, key]))
            } else if isSymbol(.openParen) {
                throw source.error("only functions can be called", at: position)
            } else {
                return node
            }
        }
    }

    private mutating func parsePrimary() throws(ArcadeError) -> ArcadeNode {
        let position = currentPosition
        let token = current
        switch token.kind {
        case .number(let n):
            _ = advance()
            return ArcadeNode(.literal(.number(n)), at: position)
        case .string(let s):
            _ = advance()
            return ArcadeNode(.literal(.string(s)), at: position)
        case .template(let pieces):
            _ = advance()
            var parts: [ArcadeNode.TemplatePart] = []
            var children: [ArcadeNode] = []
            for piece in pieces {
                switch piece {
                case .text(let text): parts.append(.text(text))
                case .code(let range):
                    try enter()
                    defer { nesting -= 1 }
                    var inner = try ArcadeParser(source: source, range: range)
                    inner.nesting = nesting
                    let node = try inner.parseLoneExpression()
                    parts.append(.expression(node))
                    children.append(node)
                }
            }
            return try checked(ArcadeNode(.template(parts), at: position, children: children))
        case .profileVariable(let name):
            _ = advance()
            return ArcadeNode(.profile(name.lowercased()), at: position)
        case .identifier(let name):
            _ = advance()
            switch name.lowercased() {
            case "true": return ArcadeNode(.literal(.bool(true)), at: position)
            case "false": return ArcadeNode(.literal(.bool(false)), at: position)
            case "null": return ArcadeNode(.literal(.null), at: position)
            case let word where ArcadeParser.reservedWords.contains(word):
                throw source.error("expected an expression, found '\(name)'", at: position)
            default: break
            }
            if isSymbol(.openParen) {
                _ = advance()
                var arguments: [ArcadeNode] = []
                if !isSymbol(.closeParen) {
                    repeat {
                        if isSymbol(.closeParen) { break }
                        arguments.append(try parseExpression())
                    } while accept(.comma)
                }
                try expect(.closeParen)
                return try checked(ArcadeNode(.call(name, arguments), at: position, children: arguments))
            }
            return ArcadeNode(.variable(name), at: position)
        case .symbol(.openParen):
            _ = advance()
            let node = try parseExpression()
            try expect(.closeParen)
            return node
        case .symbol(.openBracket):
            _ = advance()
            try enter()
            defer { nesting -= 1 }
            var elements: [ArcadeNode] = []
            while !isSymbol(.closeBracket) {
                elements.append(try parseExpression())
                if !accept(.comma) { break }
            }
            try expect(.closeBracket)
            return try checked(ArcadeNode(.array(elements), at: position, children: elements))
        case .symbol(.openBrace):
            _ = advance()
            try enter()
            defer { nesting -= 1 }
            var entries: [(key: String, value: ArcadeNode)] = []
            while !isSymbol(.closeBrace) {
                let key: String
                switch current.kind {
                case .string(let s): key = s
                case .identifier(let s): key = s
                default: throw error("expected a key (text) in the dictionary")
                }
                _ = advance()
                try expect(.colon)
                entries.append((key: key, value: try parseExpression()))
                if !accept(.comma) { break }
            }
            try expect(.closeBrace)
            return try checked(ArcadeNode(.dictionary(entries), at: position, children: entries.map(\.value)))
        default:
            throw error("expected an expression")
        }
    }
}
