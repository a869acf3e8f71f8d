internal import CSQLite

/// A store misuse that is not a SQLite error.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store was closed; nothing more can be submitted.
    case closed(path: String)
    /// The store was opened read-only.
    case readOnly(path: String)
    /// The database file's schema is not the one this program uses.
    case schemaVersion(path: String, found: Int, expected: Int)

    public var description: String {
        switch self {
        case .closed(let path): "the store \(path) is closed"
        case .readOnly(let path): "the store \(path) was opened read-only"
        case .schemaVersion(let path, let found, let expected):
            "\(path): database schema version \(found), this geotrigger reads version \(expected)"
        }
    }
}
