/// A compiled expression node: computes a value in a frame.
typealias ArcadeEvaluator = @Sendable (inout ArcadeFrame, ArcadeContext) throws(ArcadeError) -> ArcadeValue
/// A compiled statement: runs in a frame; returns true when it executed `return`.
typealias ArcadeExecutor = @Sendable (inout ArcadeFrame, ArcadeContext) throws(ArcadeError) -> Bool

/// Turns the parsed program into a tree of closures, once: names are resolved to slots,
/// member names folded, functions bound and checked for their argument count, so evaluating
/// does no lookup by name except the profile variable and attribute names themselves.
///
/// Script variables are script-wide (a `var` inside an `if` block is visible after it, as
/// with JavaScript's `var`); a variable must be declared (textually) before it is used.
struct ArcadeCompiler {
    let source: ArcadeSource
    private var slots: [String: Int] = [:]
    private(set) var profileVariables: [String] = []

    init(source: ArcadeSource) {
        self.source = source
    }

    var localCount: Int { slots.count }

    func location(_ position: ArcadePosition) -> ArcadeLocation {
        ArcadeLocation(line: source.isMultiline ? position.line : nil, column: position.column)
    }

    func error(_ message: String, at position: ArcadePosition) -> ArcadeError {
        source.error(message, at: position)
    }

    // MARK: Program and statements

    /// The whole program. A lone expression (or lone `return`) compiles to that expression.
    mutating func compileProgram(_ statements: [ArcadeStatement]) throws(ArcadeError) -> ArcadeEvaluator {
        if statements.count == 1 {
            switch statements[0] {
            case .expression(let node): return try compile(node)
            case .return(let node?, _): return try compile(node)
            default: break
            }
        }
        let executors = try compile(statements)
        return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
            for executor in executors where try executor(&frame, context) { return frame.returnValue }
            return frame.lastValue
        }
    }

    mutating func compile(_ statements: [ArcadeStatement]) throws(ArcadeError) -> [ArcadeExecutor] {
        var executors: [ArcadeExecutor] = []
        for statement in statements { executors.append(try compile(statement)) }
        return executors
    }

    mutating func compile(_ statement: ArcadeStatement) throws(ArcadeError) -> ArcadeExecutor {
        switch statement {
        case .declare(let name, _, _, let initializer):
            let value = try initializer.map { (node) throws(ArcadeError) in try compile(node) }
            let slot = slots[name] ?? slots.count
            slots[name] = slot
            guard let value else {
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                    frame.locals[slot] = .null
                    return false
                }
            }
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                frame.locals[slot] = try value(&frame, context)
                return false
            }
        case .assign(let target, let op, let valueNode, let position):
            return try compileAssignment(target, op, valueNode, at: position)
        case .expression(let node):
            let evaluator = try compile(node)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                frame.lastValue = try evaluator(&frame, context)
                return false
            }
        case .ifElse(let conditionNode, let thenStatements, let otherwiseStatements):
            let condition = try compile(conditionNode)
            let then = try compile(thenStatements)
            let otherwise = try compile(otherwiseStatements)
            let location = location(conditionNode.position)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                try frame.step(location)
                let branch = try condition(&frame, context).isTruthy ? then : otherwise
                for executor in branch where try executor(&frame, context) { return true }
                return false
            }
        case .return(let node, _):
            guard let node else {
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                    frame.returnValue = .null
                    return true
                }
            }
            let value = try compile(node)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
                frame.returnValue = try value(&frame, context)
                return true
            }
        }
    }

    private enum CompiledStep {
        case member(String, ArcadeLocation)
        case index(ArcadeEvaluator, ArcadeLocation)
    }

    private enum ResolvedStep {
        case key(String, ArcadeLocation)
        case index(ArcadeValue, ArcadeLocation)
    }

    private mutating func compileAssignment(
        _ target: ArcadeAssignmentTarget, _ op: ArcadeBinaryOperator?, _ valueNode: ArcadeNode,
        at position: ArcadePosition
    ) throws(ArcadeError) -> ArcadeExecutor {
        guard let slot = slots[target.name] else {
            throw error("unknown variable '\(target.spelled)' (declare it with 'var')", at: target.position)
        }
        var steps: [CompiledStep] = []
        for step in target.path {
            switch step {
            case .member(let name, let p): steps.append(.member(name, location(p)))
            case .index(let node, let p): steps.append(.index(try compile(node), location(p)))
            }
        }
        let value = try compile(valueNode)
        let location = location(position)
        let path = steps
        return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> Bool in
            try frame.step(location)
            var resolved: [ResolvedStep] = []
            for step in path {
                switch step {
                case .member(let name, let l): resolved.append(.key(name, l))
                case .index(let key, let l): resolved.append(.index(try key(&frame, context), l))
                }
            }
            var newValue = try value(&frame, context)
            // Take the variable out of the frame so it is modified in place, not copied.
            var container = frame.locals[slot]
            frame.locals[slot] = .null
            defer { frame.locals[slot] = container }
            if let op {
                let old = try ArcadeCompiler.read(container, path: resolved[...], &frame)
                newValue = try ArcadeOperators.apply(op, old, newValue, frame: &frame, location)
            }
            if !resolved.isEmpty { try frame.chargeContents(of: newValue, location) }
            try ArcadeCompiler.write(newValue, into: &container, path: resolved[...], &frame)
            frame.lastValue = newValue
            return false
        }
    }

    private static func read(
        _ value: ArcadeValue, path: ArraySlice<ResolvedStep>, _ frame: inout ArcadeFrame
    ) throws(ArcadeError) -> ArcadeValue {
        var current = value
        for step in path {
            switch step {
            case .key(let name, let l): current = try ArcadeAccess.member(current, folded: name.lowercased(), spelled: name, l)
            case .index(let key, let l): current = try ArcadeAccess.index(current, key, &frame, l)
            }
        }
        return current
    }

    private static func write(
        _ newValue: ArcadeValue, into container: inout ArcadeValue, path: ArraySlice<ResolvedStep>,
        _ frame: inout ArcadeFrame
    ) throws(ArcadeError) {
        guard let step = path.first else {
            container = newValue
            return
        }
        let rest = path.dropFirst()
        switch (container, step) {
        case (.dictionary(var dictionary), .key(let key, let l)):
            // Writing looks through the keys: charge large dictionaries for it.
            try frame.step(l, count: dictionary.count >> 4)
            container = .null
            var child = dictionary[key] ?? .null
            dictionary[key] = .null
            try write(newValue, into: &child, path: rest, &frame)
            dictionary[key] = child
            container = .dictionary(dictionary)
        case (.dictionary(var dictionary), .index(let keyValue, let l)):
            let key = try ArcadeOperators.text(keyValue, &frame, l)
            try frame.step(l, count: dictionary.count >> 4)
            container = .null
            var child = dictionary[key] ?? .null
            dictionary[key] = .null
            try write(newValue, into: &child, path: rest, &frame)
            dictionary[key] = child
            container = .dictionary(dictionary)
        case (.array(var elements), .index(let keyValue, let l)):
            guard case .number(let n) = keyValue, n == n.rounded(), abs(n) < 1e9 else {
                throw l.error("an Array index must be a whole number, found \(keyValue.typeNameWithArticle)")
            }
            var i = Int(n)
            if i < 0 { i += elements.count }
            guard i >= 0, i <= elements.count else {
                throw l.error("index \(Int(n)) is out of range for an Array of \(elements.count) elements")
            }
            container = .null
            if i == elements.count {
                var child = ArcadeValue.null
                try write(newValue, into: &child, path: rest, &frame)
                elements.append(child)
            } else {
                var child = elements[i]
                elements[i] = .null
                try write(newValue, into: &child, path: rest, &frame)
                elements[i] = child
            }
            container = .array(elements)
        case (_, .key(let key, let l)):
            throw l.error("cannot set '\(key)' on \(container.typeNameWithArticle)")
        case (_, .index(_, let l)):
            throw l.error("cannot set an element of \(container.typeNameWithArticle)")
        }
    }

    // MARK: Expressions

    mutating func compile(_ node: ArcadeNode) throws(ArcadeError) -> ArcadeEvaluator {
        let location = location(node.position)
        switch node.kind {
        case .literal(let value):
            return { (_: inout ArcadeFrame, _: ArcadeContext) throws(ArcadeError) -> ArcadeValue in value }

        case .variable(let spelled):
            guard let slot = slots[spelled.lowercased()] else {
                throw error("unknown variable '\(spelled)'", at: node.position)
            }
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in frame.locals[slot] }

        case .profile(let name):
            noteProfile(name)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in context[folded: name] }

        case .member(let base, let name):
            let folded = name.lowercased()
            if case .profile(let variable) = base.kind {
                noteProfile(variable)
                if variable == "locationupdate" || variable == "feedfeature" {
                    // `$locationupdate.FIELD`: read the update's field, no dictionary at all.
                    let feed = variable == "feedfeature"
                    let field = ArcadeUpdateField(folded: folded, feed: feed)
                    return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                        try frame.step(location)
                        if let value = context.read(field, feed: feed) { return value }
                        return try ArcadeAccess.member(context[folded: variable], folded: folded, spelled: name, location)
                    }
                }
                // `$feature.FIELD`, the most common form: one closure, no copy of the feature.
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    for entry in context.variables where entry.name == variable {
                        if case .dictionary(let dictionary) = entry.value {
                            return dictionary[folded: folded] ?? .null
                        }
                        return try ArcadeAccess.member(entry.value, folded: folded, spelled: name, location)
                    }
                    return .null
                }
            }
            let baseEvaluator = try compile(base)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                return try ArcadeAccess.member(try baseEvaluator(&frame, context), folded: folded, spelled: name, location)
            }

        case .index(let base, let key):
            let baseEvaluator = try compile(base)
            let keyEvaluator = try compile(key)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let container = try baseEvaluator(&frame, context)
                return try ArcadeAccess.index(container, try keyEvaluator(&frame, context), &frame, location)
            }

        case .array(let elementNodes):
            var elements: [ArcadeEvaluator] = []
            for element in elementNodes { elements.append(try compile(element)) }
            let evaluators = elements
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location, count: 1 + evaluators.count)
                var values: [ArcadeValue] = []
                values.reserveCapacity(evaluators.count)
                for evaluator in evaluators {
                    let value = try evaluator(&frame, context)
                    try frame.chargeContents(of: value, location)
                    values.append(value)
                }
                return .array(values)
            }

        case .dictionary(let entryNodes):
            var entries: [(key: String, value: ArcadeEvaluator)] = []
            for entry in entryNodes { entries.append((key: entry.key, value: try compile(entry.value))) }
            let evaluators = entries
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location, count: 1 + evaluators.count)
                var dictionary = ArcadeDictionary()
                for entry in evaluators {
                    let value = try entry.value(&frame, context)
                    try frame.chargeContents(of: value, location)
                    dictionary[entry.key] = value
                }
                return .dictionary(dictionary)
            }

        case .template(let parts):
            enum Piece {
                case text(String)
                case value(ArcadeEvaluator)
            }
            var pieces: [Piece] = []
            for part in parts {
                switch part {
                case .text(let text): pieces.append(.text(text))
                case .expression(let node): pieces.append(.value(try compile(node)))
                }
            }
            let compiled = pieces
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                var out = ""
                for piece in compiled {
                    switch piece {
                    case .text(let text): out += text
                    case .value(let evaluator):
                        try ArcadeOperators.appendText(try evaluator(&frame, context), to: &out, &frame, location)
                    }
                    try frame.checkText(out, location)
                }
                return .string(out)
            }

        case .call(let name, let argumentNodes):
            guard let function = ArcadeFunctions.table[name.lowercased()] else {
                throw error(
                    "unknown function '\(name)' (supported: \(ArcadeFunctions.names.joined(separator: ", ")))",
                    at: node.position)
            }
            guard function.arity.contains(argumentNodes.count) else {
                throw error(function.arityMessage(found: argumentNodes.count), at: node.position)
            }
            if let rule = function.countRule, let message = rule(argumentNodes.count) {
                throw error("\(function.name) \(message)", at: node.position)
            }
            var arguments: [ArcadeEvaluator] = []
            for argument in argumentNodes { arguments.append(try compile(argument)) }
            return function.build(arguments, location)

        case .unary(let op, let operandNode):
            let operand = try compile(operandNode)
            switch op {
            case .negate:
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    return .number(-(try operand(&frame, context).numberValue))
                }
            case .plus:
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    return .number(try operand(&frame, context).numberValue)
                }
            case .not:
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    return .bool(!(try operand(&frame, context).isTruthy))
                }
            }

        case .binary(let op, let leftNode, let rightNode):
            let left = try compile(leftNode)
            // A comparison with a number literal (`$locationupdate.speed < 5`), the usual filter.
            if case .literal(.number(let constant)) = rightNode.kind,
                [.less, .lessEqual, .greater, .greaterEqual].contains(op)
            {
                let right = ArcadeValue.number(constant)
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    let value = try left(&frame, context)
                    if case .number(let n) = value { return .bool(ArcadeOperators.order(op, n, constant)) }
                    return .bool(ArcadeOperators.compare(op, value, right))
                }
            }
            let right = try compile(rightNode)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let a = try left(&frame, context)
                let b = try right(&frame, context)
                return try ArcadeOperators.apply(op, a, b, frame: &frame, location)
            }

        case .and(let leftNode, let rightNode):
            let left = try compile(leftNode)
            let right = try compile(rightNode)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                guard try left(&frame, context).isTruthy else { return .bool(false) }
                return .bool(try right(&frame, context).isTruthy)
            }

        case .or(let leftNode, let rightNode):
            let left = try compile(leftNode)
            let right = try compile(rightNode)
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                if try left(&frame, context).isTruthy { return .bool(true) }
                return .bool(try right(&frame, context).isTruthy)
            }
        }
    }

    private mutating func noteProfile(_ name: String) {
        if !profileVariables.contains(name) { profileVariables.append(name) }
    }
}
