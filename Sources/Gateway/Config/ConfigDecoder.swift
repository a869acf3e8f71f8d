import GeotriggerCore

/// Reads typed values out of a parsed config, collecting every problem with its key path
/// instead of stopping at the first one; unknown keys are problems too.
struct ConfigDecoder {
    struct Problem {
        var path: [JSONPathComponent]
        var message: String
    }

    private(set) var problems: [Problem] = []

    mutating func report(_ path: [JSONPathComponent], _ message: String) {
        problems.append(Problem(path: path, message: message))
    }

    /// The object at `path`, reporting keys outside `allowed` and a value of another type.
    mutating func object(_ value: JSONValue, at path: [JSONPathComponent], allowed: Set<String>) -> JSONObject? {
        guard case .object(let object) = value else {
            report(path, "expected an object, found \(value.typeName)")
            return nil
        }
        for key in object.keys where !allowed.contains(key) {
            let known = allowed.sorted().joined(separator: ", ")
            report(path + [.key(key)], "unknown key (known keys here: \(known))")
        }
        return object
    }

    mutating func string(_ object: JSONObject, _ key: String, at path: [JSONPathComponent], nullable: Bool = false) -> String?? {
        switch object[key] {
        case nil: return nil
        case .null? where nullable: return .some(nil)
        case .string(let s)?: return .some(s)
        case let other?:
            report(path + [.key(key)], "expected a string\(nullable ? " or null" : ""), found \(other.typeName)")
            return nil
        }
    }

    mutating func number(
        _ object: JSONObject, _ key: String, at path: [JSONPathComponent], range: ClosedRange<Double>,
        whole: Bool = false
    ) -> Double? {
        guard let value = object[key] else { return nil }
        let what = whole ? "a whole number" : "a number"
        let bounds = range.upperBound == .infinity ? "\(what) >= \(format(range.lowerBound))"
            : "\(what) from \(format(range.lowerBound)) to \(format(range.upperBound))"
        guard case .number(let n) = value, n.isFinite, range.contains(n), !whole || n == n.rounded() else {
            report(path + [.key(key)], "expected \(bounds), found \(describe(value))")
            return nil
        }
        return n
    }

    mutating func integer(_ object: JSONObject, _ key: String, at path: [JSONPathComponent], range: ClosedRange<Int>) -> Int? {
        number(object, key, at: path, range: Double(range.lowerBound)...Double(range.upperBound), whole: true).map { Int($0) }
    }

    mutating func bool(_ object: JSONObject, _ key: String, at path: [JSONPathComponent]) -> Bool? {
        guard let value = object[key] else { return nil }
        guard case .bool(let b) = value else {
            report(path + [.key(key)], "expected true or false, found \(describe(value))")
            return nil
        }
        return b
    }

    mutating func choice<E: RawRepresentable & CaseIterable>(
        _ object: JSONObject, _ key: String, at path: [JSONPathComponent], as type: E.Type
    ) -> E? where E.RawValue == String {
        guard let value = object[key] else { return nil }
        guard case .string(let s) = value, let e = E(rawValue: s) else {
            let options = E.allCases.map(\.rawValue).joined(separator: ", ")
            report(path + [.key(key)], "expected one of \(options), found \(describe(value))")
            return nil
        }
        return e
    }

    /// The value as a short text for messages: strings quoted, others by their JSON form or type.
    func describe(_ value: JSONValue) -> String {
        switch value {
        case .string, .number, .bool, .null: value.serialized()
        default: value.typeName
        }
    }

    private func format(_ n: Double) -> String { JSONValue.number(n).serialized() }
}
