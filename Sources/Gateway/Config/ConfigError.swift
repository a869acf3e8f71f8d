import GeotriggerCore

/// A mistake in a config file: where it is (file, line, column), the key path, and what was expected.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var location: SourceLocation?
    /// The key path as people write it: `triggers[0].rule`.
    public var path: String
    public var message: String

    public init(file: String, location: SourceLocation?, path: String, message: String) {
        self.file = file
        self.location = location
        self.path = path
        self.message = message
    }

    /// `geotrigger.json5:12:5: broker.port: expected a whole number from 1 to 65535, found "x"`
    public var description: String {
        let place = location.map { "\(file):\($0.line):\($0.column)" } ?? file
        return path == "$" ? "\(place): \(message)" : "\(place): \(path): \(message)"
    }
}

/// Several config errors, all reported at once.
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [ConfigError]
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
