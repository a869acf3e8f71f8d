internal import CSQLite

extension SQLiteConnection {
    /// `PRAGMA user_version`: the schema version the migrations have reached.
    public func userVersion() throws -> Int {
        Int(try scalarInt64("PRAGMA user_version") ?? 0)
    }

    /// Brings the schema to the last of `migrations` (ordered by version 1, 2, ...): each step
    /// above the current `user_version` runs in its own transaction with the version bump, so
    /// a failing step leaves the database at the previous version. Returns the versions applied.
    ///
    /// A database whose version is newer than the last step is refused (an older program must
    /// not write a schema it does not know).
    @discardableResult
    public func migrate(_ migrations: [SQLiteMigration]) throws -> [Int] {
        for (offset, migration) in migrations.enumerated() where migration.version != offset + 1 {
            throw SQLiteError(code: SQLITE_MISUSE,
                              message: "migration '\(migration.summary)' has version \(migration.version), expected \(offset + 1)",
                              context: "migrate \(path)")
        }
        let target = migrations.count
        var applied: [Int] = []
        // Read inside a write transaction so two processes cannot both apply a step.
        while true {
            let step: Int? = try transaction {
                let current = try userVersion()
                if current > target {
                    throw SQLiteError(code: SQLITE_ERROR,
                                      message: "the database schema is version \(current), newer than this program's \(target)",
                                      context: "migrate \(path)")
                }
                guard current < target else { return nil }
                let migration = migrations[current]
                do {
                    try migration.apply(self)
                } catch var error as SQLiteError {
                    error.context = "migration \(migration.version) (\(migration.summary)) of \(path): " + error.context
                    throw error
                }
                try execute("PRAGMA user_version = \(migration.version)")
                return migration.version
            }
            guard let step else { return applied }
            applied.append(step)
        }
    }
}
