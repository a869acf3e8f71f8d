internal import CSQLite

/// A failed SQLite call: the extended result code, SQLite's message and the SQL or C call.
///
/// Every C return code in the Store module goes through ``check(_:_:_:)``, so an unknown code
/// is kept as it came rather than mapped to something else.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code (such as 13 `SQLITE_FULL`, 2067 `SQLITE_CONSTRAINT_UNIQUE`).
    public var code: Int32
    /// `sqlite3_errmsg` of the connection at the time (or `sqlite3_errstr` without one).
    public var message: String
    /// The SQL statement, or the C call (`sqlite3_open_v2 FILE`), that failed.
    public var context: String

    public init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    /// The primary result code: the low 8 bits of ``code``.
    public var primaryCode: Int32 { code & 0xFF }

    /// SQLite's fixed English text for the code (`database or disk is full`).
    public var codeDescription: String { String(cString: sqlite3_errstr(code)) }

    /// The database or the disk is full (`SQLITE_FULL`, also what `max_page_count` gives).
    public var isFull: Bool { primaryCode == SQLITE_FULL }
    /// Another connection holds the lock beyond the busy timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }
    /// A constraint (unique, not null, check) was violated.
    public var isConstraint: Bool { primaryCode == SQLITE_CONSTRAINT }
    /// A disk I/O error (`SQLITE_IOERR`).
    public var isIOError: Bool { primaryCode == SQLITE_IOERR }
    /// A statement was stopped before its end (`SQLITE_INTERRUPT`: ``SQLiteConnection/withStepBudget(_:_:)``).
    public var isInterrupted: Bool { primaryCode == SQLITE_INTERRUPT }
    /// The database cannot be written: read-only file or connection.
    public var isReadOnly: Bool { primaryCode == SQLITE_READONLY }

    public var description: String {
        var text = "SQLite error \(code) (\(codeDescription))"
        if message != codeDescription { text += ": \(message)" }
        return text + " [\(context)]"
    }
}

/// Turns a SQLite return code into success or a ``SQLiteError``.
///
/// `SQLITE_OK`, `SQLITE_ROW` and `SQLITE_DONE` are success (the caller reads which one it was
/// from the return value); any other code, known or not, throws with `database`'s message.
@discardableResult
func check(_ code: Int32, _ database: OpaquePointer?, _ context: @autoclosure () -> String) throws(SQLiteError) -> Int32 {
    switch code {
    case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
        return code
    default:
        let message: String
        if let database, let text = sqlite3_errmsg(database) {
            message = String(cString: text)
        } else {
            message = String(cString: sqlite3_errstr(code))
        }
        throw SQLiteError(code: code, message: message, context: context())
    }
}
