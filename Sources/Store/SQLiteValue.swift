internal import CSQLite

/// A value bound to or read from SQL: the five SQLite storage classes.
public enum SQLiteValue: Sendable, Equatable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// `.text`, or `.null` for nil.
    public init(_ text: String?) { self = text.map { .text($0) } ?? .null }
    /// `.integer`, or `.null` for nil.
    public init(_ integer: Int64?) { self = integer.map { .integer($0) } ?? .null }
    /// `.integer` from an `Int`.
    public init(_ integer: Int) { self = .integer(Int64(integer)) }
    /// `.real`, or `.null` for nil.
    public init(_ real: Double?) { self = real.map { .real($0) } ?? .null }
    /// `.blob`, or `.null` for nil.
    public init(_ bytes: [UInt8]?) { self = bytes.map { .blob($0) } ?? .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByNilLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
}
