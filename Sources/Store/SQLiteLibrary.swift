internal import CSQLite

/// The SQLite library the gateway is linked against.
public enum SQLiteLibrary {
    /// The library version, such as "3.40.1".
    public static var version: String { String(cString: sqlite3_libversion()) }
}
