/// A position in a text file: 1-based line, and 1-based column counted in characters.
public struct SourceLocation: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `LINE:COLUMN`, as compilers print it.
    public var description: String { "\(line):\(column)" }
}
