internal import CSQLite

/// The current row of a running statement, valid only inside the closure it is handed to.
///
/// Columns are read by index (0 based) as the type the caller expects; SQLite converts
/// between storage classes as documented for `sqlite3_column_*` (NULL reads as 0, "" or []).
public struct SQLiteRow {
    let statement: OpaquePointer

    init(statement: OpaquePointer) { self.statement = statement }

    /// How many columns the row has.
    public var columnCount: Int { Int(sqlite3_column_count(statement)) }

    /// Whether column `index` is SQL NULL.
    public func isNull(_ index: Int) -> Bool {
        sqlite3_column_type(statement, Int32(index)) == SQLITE_NULL
    }

    /// Column `index` as a 64-bit integer.
    public func int64(_ index: Int) -> Int64 { sqlite3_column_int64(statement, Int32(index)) }

    /// Column `index` as an `Int`.
    public func int(_ index: Int) -> Int { Int(sqlite3_column_int64(statement, Int32(index))) }

    /// Column `index` as a double.
    public func double(_ index: Int) -> Double { sqlite3_column_double(statement, Int32(index)) }

    /// Column `index` as UTF-8 text ("" for NULL).
    public func string(_ index: Int) -> String {
        guard let text = sqlite3_column_text(statement, Int32(index)) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// Column `index` as text, or nil when it is NULL.
    public func optionalString(_ index: Int) -> String? { isNull(index) ? nil : string(index) }

    /// Column `index` as bytes ([] for NULL or an empty blob).
    public func bytes(_ index: Int) -> [UInt8] {
        guard let pointer = sqlite3_column_blob(statement, Int32(index)) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, Int32(index)))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Column `index` in its own storage class.
    public func value(_ index: Int) -> SQLiteValue {
        switch sqlite3_column_type(statement, Int32(index)) {
        case SQLITE_INTEGER: .integer(int64(index))
        case SQLITE_FLOAT: .real(double(index))
        case SQLITE_TEXT: .text(string(index))
        case SQLITE_BLOB: .blob(bytes(index))
        default: .null
        }
    }
}
