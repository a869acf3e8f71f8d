/// A parse, compile or evaluation error of an Arcade expression, with where it happened.
///
/// `line` is set only for expressions of more than one line, so a one-line `message` reads
/// `column 14: expected ')'` and a script reads `line 3, column 5: ...`. Columns count
/// characters (Unicode scalars) from 1. Callers prefix the trigger and key.
public struct ArcadeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var line: Int?
    public var column: Int?

    public init(_ message: String, line: Int? = nil, column: Int? = nil) {
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        switch (line, column) {
        case (let line?, let column?): "line \(line), column \(column): \(message)"
        case (let line?, nil): "line \(line): \(message)"
        case (nil, let column?): "column \(column): \(message)"
        case (nil, nil): message
        }
    }
}
