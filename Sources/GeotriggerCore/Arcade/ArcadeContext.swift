/// The profile variables an expression is evaluated with, named without the `$`
/// (`fencefeature`, `feedfeature`, `fencenotificationtype`, `locationupdate`).
///
/// Names are case-insensitive. A variable the context does not hold reads as `null`, so an
/// expression never crashes on a missing profile variable (`ArcadeExpression.variables` tells
/// a checker which ones an expression uses).
public struct ArcadeContext: Sendable {
    /// Lower-cased name and value; a handful at most, so a linear scan beats hashing.
    var variables: [(name: String, value: ArcadeValue)]

    public init(_ variables: [String: ArcadeValue] = [:]) {
        self.variables = variables.map { (name: $0.key.lowercased(), value: $0.value) }
    }

    /// Builds a context from names already lower-case (the engine's hot path).
    init(lowercasedVariables: [(name: String, value: ArcadeValue)]) {
        self.variables = lowercasedVariables
    }

    /// The value of a profile variable, `null` when absent.
    public subscript(name: String) -> ArcadeValue {
        self[folded: name.lowercased()]
    }

    subscript(folded name: String) -> ArcadeValue {
        for entry in variables where entry.name == name { return entry.value }
        return .null
    }
}
