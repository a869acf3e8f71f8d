/// The semantics of Arcade's operators and implicit text cast.
///
/// - `+`: when either operand is text, both are cast to text and concatenated (`null` is the
///   empty text, so `'a' + null` is `'a'`); otherwise both are cast to numbers
///   (``ArcadeValue/numberValue``) and added.
/// - `-` `*` `/` `%`: both cast to numbers; division by zero gives ±Infinity or NaN, `%` keeps
///   the sign of the dividend (as JavaScript).
/// - `==` `!=`: no casting: values of different types are not equal (`1 == '1'` is false);
///   text compares case-sensitively; dates by instant; arrays and dictionaries by content
///   (choice: Arcade compares them by identity, which a configuration cannot use
///   meaningfully); NaN equals nothing.
/// - `<` `<=` `>` `>=`: two texts compare by Unicode order, two dates by instant; if either
///   side is `null` the result is false (choice, SQL-like: a missing accuracy never passes
///   `$locationupdate.horizontalaccuracy < 50`, nor `> 50`); otherwise both are cast to
///   numbers, and NaN compares false.
enum ArcadeOperators {
    static func apply(
        _ op: ArcadeBinaryOperator, _ left: ArcadeValue, _ right: ArcadeValue,
        frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) -> ArcadeValue {
        switch op {
        case .add:
            if case .number(let a) = left, case .number(let b) = right { return .number(a + b) }
            if case .string = left { return .string(try concatenate(left, right, &frame, location)) }
            if case .string = right { return .string(try concatenate(left, right, &frame, location)) }
            return .number(left.numberValue + right.numberValue)
        case .subtract: return .number(left.numberValue - right.numberValue)
        case .multiply: return .number(left.numberValue * right.numberValue)
        case .divide: return .number(left.numberValue / right.numberValue)
        case .modulo: return .number(left.numberValue.truncatingRemainder(dividingBy: right.numberValue))
        case .equal: return .bool(try equals(left, right, &frame, location))
        case .notEqual: return .bool(!(try equals(left, right, &frame, location)))
        case .less, .lessEqual, .greater, .greaterEqual: return .bool(compare(op, left, right))
        }
    }

    private static func concatenate(
        _ left: ArcadeValue, _ right: ArcadeValue, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) -> String {
        var out = try text(left, &frame, location)
        try appendText(right, to: &out, &frame, location)
        try frame.checkText(out, location)
        return out
    }

    /// Ordering comparison, as described on the type.
    static func compare(_ op: ArcadeBinaryOperator, _ left: ArcadeValue, _ right: ArcadeValue) -> Bool {
        switch (left, right) {
        case (.number(let a), .number(let b)): return order(op, a, b)
        case (.string(let a), .string(let b)):
            switch op {
            case .less: return a < b
            case .lessEqual: return a <= b
            case .greater: return a > b
            default: return a >= b
            }
        case (.date(let a), .date(let b)): return order(op, a, b)
        case (.null, _), (_, .null): return false
        default: return order(op, left.numberValue, right.numberValue)
        }
    }

    @inline(__always)
    static func order(_ op: ArcadeBinaryOperator, _ a: Double, _ b: Double) -> Bool {
        switch op {
        case .less: a < b
        case .lessEqual: a <= b
        case .greater: a > b
        default: a >= b
        }
    }

    /// Equality without casting, charging a step per element compared inside containers.
    static func equals(
        _ left: ArcadeValue, _ right: ArcadeValue, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) -> Bool {
        switch (left, right) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.date(let a), .date(let b)): return a == b
        case (.array(let a), .array(let b)):
            guard a.count == b.count else { return false }
            try frame.step(location, count: a.count)
            for i in a.indices where !(try equals(a[i], b[i], &frame, location)) { return false }
            return true
        case (.dictionary(let a), .dictionary(let b)):
            guard a.count == b.count else { return false }
            try frame.step(location, count: a.count)
            for entry in a.entries {
                guard let other = b[entry.key], try equals(entry.value, other, &frame, location) else { return false }
            }
            return true
        default: return false
        }
    }

    /// The implicit text of a value (concatenation, `Text(value)`, `Upper`...): `null` is empty,
    /// booleans `true`/`false`, numbers as ``ArcadeNumberFormat/text(_:)``, dates ISO-8601 UTC,
    /// arrays and dictionaries as JSON (dates in them as ISO-8601 text).
    static func text(_ value: ArcadeValue, _ frame: inout ArcadeFrame, _ location: ArcadeLocation) throws(ArcadeError) -> String {
        switch value {
        case .string(let s): return s
        case .null: return ""
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return ArcadeNumberFormat.text(n)
        case .date(let seconds): return ArcadeDateFormat.iso8601(seconds)
        case .array, .dictionary:
            var out = ""
            try appendText(value, to: &out, &frame, location)
            return out
        }
    }

    /// Appends the implicit text of a value, checking the length limit as containers are written.
    static func appendText(
        _ value: ArcadeValue, to out: inout String, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) {
        switch value {
        case .array, .dictionary:
            try appendJSON(value, to: &out, &frame, location)
        default:
            out += try text(value, &frame, location)
        }
    }

    private static func appendJSON(
        _ value: ArcadeValue, to out: inout String, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) {
        switch value {
        case .array(let elements):
            try frame.step(location, count: elements.count)
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += "," }
                try appendJSON(element, to: &out, &frame, location)
                if out.utf8.count > ArcadeLimits.maximumTextLength { break }
            }
            out += "]"
        case .dictionary(let dictionary):
            try frame.step(location, count: dictionary.count)
            out += "{"
            for (i, entry) in dictionary.entries.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(entry.key, to: &out)
                out += ":"
                try appendJSON(entry.value, to: &out, &frame, location)
                if out.utf8.count > ArcadeLimits.maximumTextLength { break }
            }
            out += "}"
        case .date(let seconds):
            JSONValue.writeString(ArcadeDateFormat.iso8601(seconds), to: &out)
        case .number(let n) where !n.isFinite:
            out += "null"
        default:
            value.json.write(to: &out)
        }
        if out.utf8.count > ArcadeLimits.maximumTextLength {
            throw location.error("text longer than \(ArcadeLimits.maximumTextLength) bytes")
        }
    }
}
