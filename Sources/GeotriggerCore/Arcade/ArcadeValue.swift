/// A value of the Arcade subset: what an expression computes and what profile variables hold.
///
/// Numbers are `Double` (Arcade has one number type). A date is seconds since 1970-01-01 UTC;
/// where Arcade casts a date to a number (arithmetic, `Number`) it uses epoch milliseconds, as
/// the Arcade reference does, so `date2 - date1` is a difference in milliseconds.
public enum ArcadeValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    /// Seconds since 1970-01-01 UTC.
    case date(Double)
    case array([ArcadeValue])
    case dictionary(ArcadeDictionary)

    /// The Arcade type name, for error messages ("expected a Dictionary, found a Number").
    public var typeName: String {
        switch self {
        case .null: "Null"
        case .bool: "Boolean"
        case .number: "Number"
        case .string: "Text"
        case .date: "Date"
        case .array: "Array"
        case .dictionary: "Dictionary"
        }
    }

    /// The type name with its article ("a Number", "an Array", "null"), for error messages.
    public var typeNameWithArticle: String {
        switch self {
        case .null: "null"
        case .array: "an Array"
        default: "a \(typeName)"
        }
    }

    /// Arcade's implicit boolean cast, used by `if`, `!`, `&&`, `||`, `IIf` and `When`.
    ///
    /// Choice (the reference casts explicitly with `Boolean()`, which treats every text other
    /// than "true" as false; for conditions we follow the JavaScript-style truthiness that
    /// Arcade's implicit casting uses): `null` is false; a boolean is itself; a number is true
    /// unless it is 0 or NaN; a text is true unless it is empty; a date, an array and a
    /// dictionary are true.
    public var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let b): b
        case .number(let n): n != 0 && !n.isNaN
        case .string(let s): !s.isEmpty
        case .date, .array, .dictionary: true
        }
    }

    /// Arcade's `Number()` cast: a boolean is 1 or 0, `null` is 0, a text is parsed as a
    /// decimal number (empty or blank text is 0, anything else unparsable is NaN), a date is
    /// its epoch milliseconds, an array or dictionary is NaN.
    public var numberValue: Double {
        switch self {
        case .null: 0
        case .bool(let b): b ? 1 : 0
        case .number(let n): n
        case .string(let s): ArcadeValue.parseNumber(s)
        case .date(let seconds): seconds * 1000
        case .array, .dictionary: .nan
        }
    }

    static func parseNumber(_ text: Substring) -> Double {
        let trimmed = text.drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        var end = trimmed.endIndex
        while end > trimmed.startIndex {
            let before = trimmed.index(before: end)
            guard " \t\n\r".contains(trimmed[before]) else { break }
            end = before
        }
        let body = trimmed[trimmed.startIndex..<end]
        if body.isEmpty { return 0 }
        // Only plain decimal notation: Swift's parser would also take "nan", "inf" and hex.
        for scalar in body.unicodeScalars {
            switch scalar {
            case "0"..."9", ".", "e", "E", "+", "-": continue
            default: return .nan
            }
        }
        return Double(body) ?? .nan
    }

    static func parseNumber(_ text: String) -> Double { parseNumber(text[...]) }
}
