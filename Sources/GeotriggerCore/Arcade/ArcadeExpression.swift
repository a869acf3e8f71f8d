/// An Arcade expression of the geotrigger subset, parsed and compiled once, evaluated per
/// event (`message`) or per update (`filter`, `where`).
///
/// The subset: number, text (single or double quotes, escapes, template literals with
/// `${...}`), boolean and `null` literals; profile variables (`$fencefeature`,
/// `$feedfeature`, `$fencenotificationtype`, `$locationupdate`) with member and bracket
/// access; arithmetic `+ - * / %`, unary `-` `+` `!`, comparisons, `&&` `||` (short-circuit);
/// `var` declarations, assignment (`=`, `+=`, `-=`, `*=`, `/=`, also to `d.key`, `d["key"]`,
/// `list[i]`), `return`, `if`/`else`; array and dictionary literals; and the functions of
/// ``ArcadeFunctions``. No loops and no user functions. Identifiers, keywords, function and
/// attribute names are case-insensitive. Statements end with `;` or a line break (a line break
/// right after `return` does not end it). A script without `return` gives the value of the last
/// expression statement it ran (`null` if none).
///
/// Every evaluation is bounded by ``ArcadeLimits``: it ends with a value or an ``ArcadeError``,
/// never hangs. Safe to share between threads.
public struct ArcadeExpression: Sendable {
    public let source: String
    /// The profile variables the expression reads, lower-case without `$`, in order of first
    /// use: lets a checker refuse `$fencefeature` in a `filter`, say.
    public let variables: [String]
    private let evaluator: ArcadeEvaluator
    private let localCount: Int

    /// Parses and compiles; throws the first syntax or name error with its column (and line,
    /// for a multi-line expression).
    public init(_ source: String) throws(ArcadeError) {
        guard source.utf8.count <= ArcadeLimits.maximumSourceLength else {
            throw ArcadeError("expression longer than \(ArcadeLimits.maximumSourceLength) bytes")
        }
        let text = ArcadeSource(source)
        var parser = try ArcadeParser(source: text, range: 0..<text.scalars.count)
        let program = try parser.parseProgram()
        var compiler = ArcadeCompiler(source: text)
        evaluator = try compiler.compileProgram(program)
        localCount = compiler.localCount
        variables = compiler.profileVariables
        self.source = source
    }

    /// Evaluates with the given profile variables.
    public func evaluate(_ context: ArcadeContext) throws(ArcadeError) -> ArcadeValue {
        var frame = ArcadeFrame(localCount: localCount)
        return try evaluator(&frame, context)
    }

    /// Evaluates as a condition (`filter`, `where`): the truthiness of the result.
    public func evaluateCondition(_ context: ArcadeContext) throws(ArcadeError) -> Bool {
        try evaluate(context).isTruthy
    }
}
