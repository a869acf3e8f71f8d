internal import CSQLite

/// One step of a database schema: the SQL that takes `PRAGMA user_version` from
/// `version - 1` to `version`. Steps run in order, each in its own transaction.
public struct SQLiteMigration: Sendable {
    /// The schema version this step produces (1, 2, ...).
    public var version: Int
    /// What the step does, for error messages.
    public var summary: String
    /// The step itself, run inside a transaction.
    public var apply: @Sendable (SQLiteConnection) throws -> Void

    public init(version: Int, summary: String, apply: @escaping @Sendable (SQLiteConnection) throws -> Void) {
        self.version = version
        self.summary = summary
        self.apply = apply
    }

    /// A step that executes `sql` (one or more statements).
    public init(version: Int, summary: String, sql: String) {
        self.init(version: version, summary: summary) { connection in try connection.execute(sql) }
    }
}
