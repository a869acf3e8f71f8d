/// Which grammar ``JSONReader`` accepts.
public enum JSONDialect: Sendable, Equatable {
    /// RFC 8259, strictly: no comments, no trailing commas, double-quoted strings only.
    case json
    /// JSON5 (json5.org): comments, trailing commas, identifier keys, single-quoted strings,
    /// hexadecimal numbers, leading or trailing decimal points, `+`, `Infinity`, `NaN`, line continuations.
    case json5
}
