#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A built-in function: its name as documented, how many arguments it takes, and how it
/// builds its evaluator from its compiled arguments (which it may evaluate lazily).
struct ArcadeFunction: Sendable {
    var name: String
    var arity: ClosedRange<Int>
    /// A further rule on the argument count ("expects an odd number ..."), nil when it holds.
    var countRule: (@Sendable (Int) -> String?)?
    var build: @Sendable ([ArcadeEvaluator], ArcadeLocation) -> ArcadeEvaluator

    func arityMessage(found: Int) -> String {
        let expected =
            if arity.lowerBound == arity.upperBound {
                "\(arity.lowerBound) argument\(arity.lowerBound == 1 ? "" : "s")"
            } else if arity.upperBound == Int.max {
                "at least \(arity.lowerBound) arguments"
            } else {
                "\(arity.lowerBound) to \(arity.upperBound) arguments"
            }
        return "\(name) expects \(expected), found \(found)"
    }
}

/// The functions of the subset, looked up case-insensitively at compile time.
///
/// - `IIf(condition, a, b)`: `a` if the condition is truthy, else `b`; only the chosen value is
///   evaluated (choice: the reference evaluates both; lazy evaluation gives the same result
///   without the other branch's errors).
/// - `When(c1, v1, c2, v2, ..., default)`: the value of the first truthy condition, else the
///   default; conditions are evaluated in order, values only when chosen.
/// - `Decode(value, m1, r1, m2, r2, ..., default)`: the result of the first match equal (`==`)
///   to the value, else the default.
/// - `Concatenate(array?, separator?, format?)`: the array's elements as text (each through
///   `Text(element, format)` when a format is given) joined by the separator. When the first
///   argument is not an array, every argument is written as text one after the other, as the
///   reference's `Concatenate($feature.CITY, ", ", $feature.STATE)` example does
///   (`Concatenate('a', 1, true)` is `a1true`); no argument gives empty text.
/// - `Upper(text)`, `Lower(text)`: the implicit text of the value in upper or lower case.
/// - `Round(value, places?)`: rounded half away from zero to `places` decimals (0 by default;
///   negative places round to tens, hundreds...).
/// - `Text(value, format?)`: the implicit text, or a number or date formatted by the pattern
///   (``ArcadeNumberFormat/format(_:pattern:)``, ``ArcadeDateFormat``); a format is ignored for
///   other types.
/// - `DefaultValue(value, default)`: the default when the value is empty (`null` or `''`).
///   `DefaultValue(container, keys, default)`: follows a key or array of keys (text for
///   dictionaries, numbers for arrays) and gives the default when a step is missing or the
///   value found is empty.
/// - `IsEmpty(value)`: true for `null` and `''`, false for everything else (an empty array too).
/// - `Count(value)`: the elements of an array, characters of a text or entries of a
///   dictionary; `null` counts 0 (choice, so a missing attribute does not stop a message);
///   other types are an error.
enum ArcadeFunctions {
    static let all: [ArcadeFunction] = [
        ArcadeFunction(name: "IIf", arity: 3...3, countRule: nil) { arguments, location in
            let (condition, whenTrue, whenFalse) = (arguments[0], arguments[1], arguments[2])
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                return try condition(&frame, context).isTruthy ? try whenTrue(&frame, context) : try whenFalse(&frame, context)
            }
        },
        ArcadeFunction(
            name: "When", arity: 3...Int.max,
            countRule: { $0 % 2 == 1 ? nil : "expects condition, value pairs and a default value (an odd number of arguments)" }
        ) { arguments, location in
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                var i = 0
                while i + 1 < arguments.count {
                    if try arguments[i](&frame, context).isTruthy { return try arguments[i + 1](&frame, context) }
                    i += 2
                }
                return try arguments[arguments.count - 1](&frame, context)
            }
        },
        ArcadeFunction(
            name: "Decode", arity: 2...Int.max,
            countRule: { $0 % 2 == 0 ? nil : "expects a value, match, result pairs and a default value (an even number of arguments)" }
        ) { arguments, location in
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let value = try arguments[0](&frame, context)
                var i = 1
                while i + 1 < arguments.count {
                    let match = try arguments[i](&frame, context)
                    if try ArcadeOperators.equals(value, match, &frame, location) { return try arguments[i + 1](&frame, context) }
                    i += 2
                }
                return try arguments[arguments.count - 1](&frame, context)
            }
        },
        ArcadeFunction(name: "Concatenate", arity: 0...Int.max, countRule: nil) { arguments, location in
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                guard !arguments.isEmpty else { return .string("") }
                let first = try arguments[0](&frame, context)
                var out = ""
                guard case .array(let elements) = first, arguments.count <= 3 else {
                    try ArcadeOperators.appendText(first, to: &out, &frame, location)
                    for argument in arguments.dropFirst() {
                        try ArcadeOperators.appendText(try argument(&frame, context), to: &out, &frame, location)
                        try frame.checkText(out, location)
                    }
                    try frame.checkText(out, location)
                    return .string(out)
                }
                let separator = arguments.count > 1 ? try ArcadeOperators.text(try arguments[1](&frame, context), &frame, location) : ""
                let format = arguments.count > 2 ? try ArcadeOperators.text(try arguments[2](&frame, context), &frame, location) : nil
                try frame.step(location, count: elements.count)
                for (i, element) in elements.enumerated() {
                    if i > 0 { out += separator }
                    if let format {
                        out += try ArcadeFunctions.text(element, format: format, &frame, location)
                    } else {
                        try ArcadeOperators.appendText(element, to: &out, &frame, location)
                    }
                    try frame.checkText(out, location)
                }
                return .string(out)
            }
        },
        ArcadeFunction(name: "Upper", arity: 1...1, countRule: nil) { arguments, location in
            let value = arguments[0]
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let text = try ArcadeOperators.text(try value(&frame, context), &frame, location).uppercased()
                try frame.checkText(text, location)
                return .string(text)
            }
        },
        ArcadeFunction(name: "Lower", arity: 1...1, countRule: nil) { arguments, location in
            let value = arguments[0]
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let text = try ArcadeOperators.text(try value(&frame, context), &frame, location).lowercased()
                try frame.checkText(text, location)
                return .string(text)
            }
        },
        ArcadeFunction(name: "Round", arity: 1...2, countRule: nil) { arguments, location in
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let value = try arguments[0](&frame, context).numberValue
                let places = arguments.count > 1 ? try arguments[1](&frame, context).numberValue : 0
                return .number(ArcadeFunctions.round(value, places: places))
            }
        },
        ArcadeFunction(name: "Text", arity: 1...2, countRule: nil) { arguments, location in
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                let value = try arguments[0](&frame, context)
                let text: String
                if arguments.count > 1 {
                    let format = try ArcadeOperators.text(try arguments[1](&frame, context), &frame, location)
                    text = try ArcadeFunctions.text(value, format: format, &frame, location)
                } else {
                    text = try ArcadeOperators.text(value, &frame, location)
                }
                try frame.checkText(text, location)
                return .string(text)
            }
        },
        ArcadeFunction(name: "DefaultValue", arity: 2...3, countRule: nil) { arguments, location in
            if arguments.count == 2 {
                let (value, fallback) = (arguments[0], arguments[1])
                return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                    try frame.step(location)
                    let found = try value(&frame, context)
                    return ArcadeFunctions.isEmpty(found) ? try fallback(&frame, context) : found
                }
            }
            let (container, keys, fallback) = (arguments[0], arguments[1], arguments[2])
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                var current = try container(&frame, context)
                let keyValue = try keys(&frame, context)
                let path: [ArcadeValue]
                if case .array(let list) = keyValue { path = list } else { path = [keyValue] }
                try frame.step(location, count: path.count)
                for key in path {
                    switch (current, key) {
                    case (.dictionary(let dictionary), _):
                        guard let next = dictionary[try ArcadeOperators.text(key, &frame, location)] else {
                            return try fallback(&frame, context)
                        }
                        current = next
                    case (.array(let elements), .number(let n)) where n == n.rounded() && abs(n) < 1e15:
                        let i = n < 0 ? Int(n) + elements.count : Int(n)
                        guard elements.indices.contains(i) else { return try fallback(&frame, context) }
                        current = elements[i]
                    default:
                        return try fallback(&frame, context)
                    }
                }
                return ArcadeFunctions.isEmpty(current) ? try fallback(&frame, context) : current
            }
        },
        ArcadeFunction(name: "IsEmpty", arity: 1...1, countRule: nil) { arguments, location in
            let value = arguments[0]
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                return .bool(ArcadeFunctions.isEmpty(try value(&frame, context)))
            }
        },
        ArcadeFunction(name: "Count", arity: 1...1, countRule: nil) { arguments, location in
            let value = arguments[0]
            return { (frame: inout ArcadeFrame, context: ArcadeContext) throws(ArcadeError) -> ArcadeValue in
                try frame.step(location)
                switch try value(&frame, context) {
                case .array(let elements): return .number(Double(elements.count))
                case .string(let text): return .number(Double(text.count))
                case .dictionary(let dictionary): return .number(Double(dictionary.count))
                case .null: return .number(0)
                case let other: throw location.error("Count expects an Array, Text or Dictionary, found \(other.typeNameWithArticle)")
                }
            }
        },
    ]

    /// By lower-cased name.
    static let table: [String: ArcadeFunction] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.name.lowercased(), $0) })

    /// The documented names, for error messages.
    static let names: [String] = all.map(\.name)

    static func isEmpty(_ value: ArcadeValue) -> Bool {
        switch value {
        case .null: true
        case .string(let s): s.isEmpty
        default: false
        }
    }

    static func round(_ value: Double, places: Double) -> Double {
        guard value.isFinite, places.isFinite else { return value }
        let digits = Int(max(-15, min(15, places.rounded())))
        let scale = pow(10, Double(abs(digits)))
        if digits >= 0 {
            let result = (value * scale).rounded(.toNearestOrAwayFromZero) / scale
            return result.isFinite ? result : value
        }
        return (value / scale).rounded(.toNearestOrAwayFromZero) * scale
    }

    /// `Text(value, format)`.
    static func text(
        _ value: ArcadeValue, format: String, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) -> String {
        switch value {
        case .number(let n): ArcadeNumberFormat.format(n, pattern: format)
        case .date(let seconds): ArcadeDateFormat.format(seconds, pattern: format)
        default: try ArcadeOperators.text(value, &frame, location)
        }
    }
}
