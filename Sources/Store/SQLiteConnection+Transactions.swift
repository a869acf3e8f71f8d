internal import CSQLite

extension SQLiteConnection {
    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back
    /// when it (or the commit) throws, and the error rethrown.
    ///
    /// IMMEDIATE takes the write lock at the start, so a busy database fails at BEGIN (after
    /// the busy timeout) rather than in the middle of the work.
    @discardableResult
    public func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            rollbackIfOpen()
            throw error
        }
    }

    /// Rolls back the open transaction, if SQLite has not already done so itself.
    func rollbackIfOpen() {
        guard isInTransaction else { return }
        // A failing ROLLBACK leaves nothing better to do: SQLite then rolls back on close.
        _ = try? run("ROLLBACK")
    }
}
