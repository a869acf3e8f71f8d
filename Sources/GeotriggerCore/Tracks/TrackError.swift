/// A track or route file that cannot be read: which file, where, and what was expected.
public struct TrackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file name as given to the reader.
    public var file: String
    /// The 1-based line, when the problem has one.
    public var line: Int?
    /// The 1-based column (in characters), when known.
    public var column: Int?
    /// What is wrong, naming the feature, element or field, e.g.
    /// `trkpt 3: expected a number in lat="north", found "north"`.
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// `FILE:LINE:COLUMN: message`, `FILE:LINE: message` or `FILE: message`.
    public var description: String {
        var out = file
        if let line {
            out += ":\(line)"
            if let column { out += ":\(column)" }
        }
        return out + ": " + message
    }
}
