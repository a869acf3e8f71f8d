internal import CSQLite

/// The parameters of one statement execution, set in order (1, 2, ...) by a closure passed to
/// ``SQLiteConnection/run(_:binding:)``.
///
/// Text and blobs are copied once into the connection's ``SQLiteArena`` and bound without a
/// copy of SQLite's own (`SQLITE_STATIC`): no allocation per value, which the group commit's
/// multi-row inserts would otherwise make hundreds of times per statement. The arena is
/// reused only after the statement ran and its bindings were cleared.
public struct SQLiteParameters: ~Copyable {
    let statement: SQLiteStatement
    let arena: SQLiteArena
    private(set) var index: Int32 = 1
    /// The first failing bind, reported after the closure returns.
    private(set) var failure: (code: Int32, index: Int32)?
    /// What is left of the arena block being filled.
    private var free = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    init(statement: SQLiteStatement, arena: SQLiteArena) {
        self.statement = statement
        self.arena = arena
    }

    private mutating func record(_ code: Int32) {
        if code != SQLITE_OK, failure == nil { failure = (code, index) }
        index += 1
    }

    /// Binds an integer.
    public mutating func integer(_ value: Int64) { record(sqlite3_bind_int64(statement.handle, index, value)) }

    /// Binds a floating-point number.
    public mutating func real(_ value: Double) { record(sqlite3_bind_double(statement.handle, index, value)) }

    /// Binds SQL NULL.
    public mutating func null() { record(sqlite3_bind_null(statement.handle, index)) }

    /// Binds UTF-8 text.
    public mutating func text(_ value: String) {
        let code = value.utf8.withContiguousStorageIfAvailable { utf8 in
            bindText(UnsafeRawBufferPointer(utf8))
        } ?? {
            var value = value
            return value.withUTF8 { bindText(UnsafeRawBufferPointer($0)) }
        }()
        record(code)
    }

    private mutating func bindText(_ utf8: UnsafeRawBufferPointer) -> Int32 {
        sqlite3_bind_text(statement.handle, index, copy(utf8).assumingMemoryBound(to: CChar.self), Int32(utf8.count), nil)
    }

    /// A copy of `bytes` in the arena, valid until the statement is reset (never a null
    /// pointer, which would bind NULL).
    private mutating func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        let count = bytes.count
        if count > SQLiteArena.blockSize {
            let space = arena.space(for: count)
            space.copyMemory(from: bytes)
            return UnsafeRawPointer(space.baseAddress!)
        }
        if count > free.count || free.baseAddress == nil { free = arena.space(for: count) }
        let destination = free.baseAddress!
        if count > 0 { destination.copyMemory(from: bytes.baseAddress!, byteCount: count) }
        free = UnsafeMutableRawBufferPointer(rebasing: free[count...])
        return UnsafeRawPointer(destination)
    }

    /// Binds a blob (an empty one stays an empty blob, never NULL: its pointer is the arena's,
    /// not null, which also spares SQLite the allocation `sqlite3_bind_zeroblob` makes per row).
    public mutating func blob(_ value: [UInt8]) {
        let code = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob(statement.handle, index, copy(bytes), Int32(bytes.count), nil)
        }
        record(code)
    }
}
