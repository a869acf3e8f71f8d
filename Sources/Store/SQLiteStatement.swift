internal import CSQLite

/// One prepared statement, owned by the connection's cache and finalized with it.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private let database: OpaquePointer

    init(database: OpaquePointer, sql: String) throws(SQLiteError) {
        var handle: OpaquePointer?
        try check(sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil),
                  database, sql)
        guard let handle else {
            // Only whitespace or a comment: SQLite returns OK and no statement.
            throw SQLiteError(code: SQLITE_MISUSE, message: "no SQL statement in the text", context: sql)
        }
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `values` to parameters 1...n, replacing earlier bindings.
    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(code: SQLITE_RANGE,
                              message: "\(values.count) values bound, the statement has \(expected) parameters",
                              context: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    private func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let code: Int32
        switch value {
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            code = sqlite3_bind_double(handle, index, real)
        case .text(let text):
            var text = text
            code = text.withUTF8 { utf8 in
                utf8.withMemoryRebound(to: CChar.self) { chars in
                    if let base = chars.baseAddress {
                        geotrigger_sqlite3_bind_text_copy(handle, index, base, Int32(chars.count))
                    } else {
                        geotrigger_sqlite3_bind_text_copy(handle, index, "", 0)
                    }
                }
            }
        case .blob(let bytes) where bytes.isEmpty:
            code = sqlite3_bind_zeroblob(handle, index, 0)  // a pointer-less empty blob would bind NULL
        case .blob(let bytes):
            code = bytes.withUnsafeBytes { raw in
                geotrigger_sqlite3_bind_blob_copy(handle, index, raw.baseAddress, Int32(raw.count))
            }
        case .null:
            code = sqlite3_bind_null(handle, index)
        }
        try check(code, database, "bind parameter \(index) of \(sql)")
    }

    /// Steps once: true with a row to read, false when done.
    func step() throws(SQLiteError) -> Bool {
        try check(sqlite3_step(handle), database, sql) == SQLITE_ROW
    }

    /// Makes the statement ready for its next use and releases its bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}
