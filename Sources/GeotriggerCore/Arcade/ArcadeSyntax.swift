/// Binary operators, arithmetic and comparison (`&&` and `||` are separate: they
/// short-circuit).
enum ArcadeBinaryOperator: String, Sendable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", modulo = "%"
    case equal = "==", notEqual = "!=", less = "<", lessEqual = "<=", greater = ">", greaterEqual = ">="
}

enum ArcadeUnaryOperator: String, Sendable {
    case negate = "-", plus = "+", not = "!"
}

/// An expression as parsed, with where it starts and the depth of its tree (bounded, so
/// compiling and evaluating cannot exhaust the stack).
struct ArcadeNode {
    indirect enum Kind {
        case literal(ArcadeValue)
        /// A script variable, as spelled.
        case variable(String)
        /// A profile variable (`$name`), lower-cased, without the `$`.
        case profile(String)
        case array([ArcadeNode])
        case dictionary([(key: String, value: ArcadeNode)])
        case template([TemplatePart])
        /// `base.name`; the name as spelled.
        case member(ArcadeNode, String)
        case index(ArcadeNode, ArcadeNode)
        /// A function call; the name as spelled.
        case call(String, [ArcadeNode])
        case unary(ArcadeUnaryOperator, ArcadeNode)
        case binary(ArcadeBinaryOperator, ArcadeNode, ArcadeNode)
        case and(ArcadeNode, ArcadeNode)
        case or(ArcadeNode, ArcadeNode)
    }

    enum TemplatePart {
        case text(String)
        case expression(ArcadeNode)
    }

    var kind: Kind
    var position: ArcadePosition
    var depth: Int

    init(_ kind: Kind, at position: ArcadePosition, children: [ArcadeNode] = []) {
        self.kind = kind
        self.position = position
        self.depth = 1 + (children.map(\.depth).max() ?? 0)
    }
}

/// A statement as parsed.
indirect enum ArcadeStatement {
    case declare(name: String, spelled: String, position: ArcadePosition, initializer: ArcadeNode?)
    case assign(target: ArcadeAssignmentTarget, operator: ArcadeBinaryOperator?, value: ArcadeNode, position: ArcadePosition)
    case expression(ArcadeNode)
    case ifElse(condition: ArcadeNode, then: [ArcadeStatement], otherwise: [ArcadeStatement])
    case `return`(ArcadeNode?, position: ArcadePosition)
}

/// What an assignment writes to: a variable, or a member or element inside one
/// (`d.key = v`, `d["key"] = v`, `list[0] = v`).
struct ArcadeAssignmentTarget {
    enum Step {
        case member(String, ArcadePosition)
        case index(ArcadeNode, ArcadePosition)
    }

    var name: String
    var spelled: String
    var position: ArcadePosition
    var path: [Step]
}
