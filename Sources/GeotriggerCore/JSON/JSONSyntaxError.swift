/// Text that is not valid JSON (or JSON5), with where the problem was found.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file name as given to the reader.
    public var file: String
    public var location: SourceLocation
    /// What is wrong, e.g. `expected ',' or '}' after object member`.
    public var message: String

    public init(file: String, location: SourceLocation, message: String) {
        self.file = file
        self.location = location
        self.message = message
    }

    /// `FILE:LINE:COLUMN: message`.
    public var description: String { "\(file):\(location.line):\(location.column): \(message)" }
}
