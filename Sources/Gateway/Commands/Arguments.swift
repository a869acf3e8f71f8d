/// A small command-line reader: `--name value`, `--name=value`, flags and positionals.
///
/// Commands declare what they accept; anything else is a ``UsageError`` naming it.
package struct Arguments {
    private(set) var options: [String: String] = [:]
    private(set) var flags: Set<String> = []
    /// Every value of each option that may be given more than once (those in `repeated`), in order.
    private(set) var repeatedValues: [String: [String]] = [:]
    private(set) var positionals: [String] = []

    /// Reads `arguments`; `valued` names options that take a value, `flags` those that do not,
    /// `repeated` the valued options that may be given more than once (read with ``all(_:)``).
    package init(_ arguments: [String], valued: Set<String>, repeated: Set<String> = [], flags allowedFlags: Set<String>) throws(UsageError) {
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            guard arg.hasPrefix("--"), arg.count > 2 else {
                positionals.append(arg)
                continue
            }
            var name = String(arg.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if valued.contains(name) || repeated.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard i < arguments.count else { throw UsageError("--\(name) needs a value") }
                    value = arguments[i]
                    i += 1
                }
                options[name] = value
                if repeated.contains(name) { repeatedValues[name, default: []].append(value) }
            } else if allowedFlags.contains(name), inlineValue == nil {
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    package func has(_ flag: String) -> Bool { flags.contains(flag) }

    package subscript(option: String) -> String? { options[option] }

    /// Every value of a `repeated` option, in the order given (the subscript gives the last).
    package func all(_ option: String) -> [String] { repeatedValues[option] ?? [] }

    /// The value of `option` as a number, if given; a ``UsageError`` if it is not one.
    package func number(_ option: String) throws(UsageError) -> Double? {
        guard let text = options[option] else { return nil }
        guard let value = Double(text), value.isFinite else {
            throw UsageError("--\(option) expects a number, got '\(text)'")
        }
        return value
    }

    /// The value of `option` as a whole number in `range`, if given; a ``UsageError`` otherwise
    /// (so that `--devices 1e300` is a usage error, not a trap converting it to an Int).
    func integer(_ option: String, range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let value = try number(option) else { return nil }
        guard value == value.rounded(), value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
            throw UsageError("--\(option) expects a whole number from \(range.lowerBound) to \(range.upperBound), got '\(options[option]!)'")
        }
        return Int(value)
    }
}
