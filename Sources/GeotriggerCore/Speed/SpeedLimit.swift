/// A speed limit as configured (docs/trips.md "Speed limits"; the trigger key `speedLimit` in
/// docs/configuration.md "Trigger keys"): a fixed number of m/s, or the name of a fence property
/// each fence gives its own limit in.
///
/// A property is read as OpenStreetMap's `maxspeed` writes it (``metresPerSecond(property:)``):
/// - A JSON number: km/h.
/// - A string: a decimal number (`50`, `12.5`), optionally a space, then a unit: none, `km/h`,
///   `kmh`, `kph` or `km/hr` (km/h); `mph`; `knots`, `knot`, `kn` or `kt` (nautical miles per
///   hour). Units are matched without regard to case; spaces around the whole are ignored.
/// - Anything else (`"none"`, `"walk"`, `"RU:urban"`, `"50;30"`, zero, a negative number, an
///   unknown unit, no value): no limit.
public enum SpeedLimit: Sendable, Hashable {
    /// A limit in m/s (> 0), the same in every fence.
    case fixed(Double)
    /// `{"property": NAME}`: each fence's limit is its property `NAME`; a fence without a
    /// readable value there has none.
    case property(String)

    /// What a configured value must be, as error messages say it.
    public static let expected = "expected a speed in m/s > 0 or {\"property\": NAME}"

    /// Reads a configured value: a number of m/s > 0, or `{"property": NAME}` with a non-empty
    /// name. Otherwise nil, and what is wrong (``expected``, then what was found).
    public static func parse(_ value: JSONValue) -> (limit: SpeedLimit?, problem: String?) {
        switch value {
        case .number(let n) where n.isFinite && n > 0:
            return (.fixed(n), nil)
        case .object(let object):
            let keys = object.keys
            guard keys == ["property"] else {
                let found = keys.isEmpty ? "an empty object" : "an object with " + keys.map { "\"\($0)\"" }.joined(separator: ", ")
                return (nil, "\(expected), found \(found)")
            }
            guard case .string(let name)? = object["property"], !name.isEmpty else {
                return (nil, "\(expected): property must be a property name, found \(object["property"].map(TriggerOptions.describe) ?? "nothing")")
            }
            return (.property(name), nil)
        default:
            return (nil, "\(expected), found \(TriggerOptions.describe(value))")
        }
    }

    /// The limit in m/s in `fence`: the fixed one, or the fence's property when it is readable
    /// (nil: no limit in that fence).
    public func metresPerSecond(in fence: Fence) -> Double? {
        switch self {
        case .fixed(let limit): limit
        case .property(let name): SpeedLimit.metresPerSecond(property: fence.property(name))
        }
    }

    /// Metres per second of one km/h, mph and knot.
    static let kilometresPerHour = 1000.0 / 3600
    static let milesPerHour = 0.447_04
    static let knots = 1852.0 / 3600

    /// The limit in m/s that `value` (a fence property) gives, if it is readable.
    public static func metresPerSecond(property value: JSONValue?) -> Double? {
        switch value {
        case .number(let n)?: return positive(n).map { $0 * kilometresPerHour }
        case .string(let s)?: return metresPerSecond(parsing: s)
        default: return nil
        }
    }

    /// The limit in m/s that `text` (a number and an optional unit) gives, if it is readable.
    public static func metresPerSecond(parsing text: String) -> Double? {
        let scalars = Array(text.unicodeScalars)
        var start = 0, end = scalars.count
        while start < end, scalars[start].properties.isWhitespace { start += 1 }
        while end > start, scalars[end - 1].properties.isWhitespace { end -= 1 }
        var i = start
        var digits = 0
        while i < end, ("0"..."9").contains(scalars[i]) {
            i += 1
            digits += 1
        }
        if i < end, scalars[i] == "." {
            i += 1
            var fraction = 0
            while i < end, ("0"..."9").contains(scalars[i]) {
                i += 1
                fraction += 1
            }
            guard fraction > 0 else { return nil }
        }
        guard digits > 0, let number = Double(String(String.UnicodeScalarView(scalars[start..<i]))), let n = positive(number)
        else { return nil }
        while i < end, scalars[i] == " " { i += 1 }
        let unit = String(String.UnicodeScalarView(scalars[i..<end])).lowercased()
        switch unit {
        case "", "km/h", "kmh", "kph", "km/hr": return n * kilometresPerHour
        case "mph": return n * milesPerHour
        case "knots", "knot", "kn", "kt": return n * knots
        default: return nil
        }
    }

    private static func positive(_ n: Double) -> Double? { n.isFinite && n > 0 ? n : nil }
}
