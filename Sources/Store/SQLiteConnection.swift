internal import CSQLite

/// One open SQLite database connection.
///
/// Not `Sendable`: a connection is used by one isolation domain at a time (the store's serial
/// executor). Opening sets WAL mode (unless read-only), `synchronous` and a busy timeout.
/// Statements are prepared once per SQL text and kept in a cache until the connection closes.
public final class SQLiteConnection {
    /// `PRAGMA synchronous`: NORMAL survives a process kill in WAL mode, FULL also power loss.
    public enum Synchronous: String, Sendable {
        case off = "OFF"
        case normal = "NORMAL"
        case full = "FULL"
    }

    /// How a connection is opened.
    public struct Options: Sendable {
        /// Open without write access (no WAL switch, no migrations possible).
        public var readOnly: Bool
        /// Create the file when missing (ignored when read-only).
        public var create: Bool
        /// `PRAGMA synchronous`.
        public var synchronous: Synchronous
        /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
        public var busyTimeoutMilliseconds: Int
        /// `PRAGMA page_size` of a database this connection creates (a power of two, 512 to
        /// 65,536); nil for SQLite's default (4,096). An existing database keeps its own.
        public var pageSize: Int?

        public init(readOnly: Bool = false, create: Bool = true, synchronous: Synchronous = .normal,
                    busyTimeoutMilliseconds: Int = 5000, pageSize: Int? = nil) {
            self.readOnly = readOnly
            self.create = create
            self.synchronous = synchronous
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.pageSize = pageSize
        }
    }

    /// The database file.
    public let path: String
    let database: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]
    /// The bytes of text and blobs bound by ``run(_:binding:)``.
    private let arena = SQLiteArena()
    private var arenaInUse = false

    /// How many statements were compiled since opening (a cached statement is compiled once).
    public private(set) var preparedStatementCount = 0
    /// Frames in the WAL after the last commit, once ``trackWALFrames()`` was called.
    private var walFrames: WALFrames?

    /// Where `sqlite3_wal_hook` leaves the WAL's frame count after each commit.
    private final class WALFrames {
        var count = 0
    }

    /// Process-wide settings made once, before the first connection initializes the library.
    private static let configureLibrary: Void = { _ = geotrigger_sqlite3_disable_memory_statistics() }()

    /// Opens (and by default creates) the database at `path`.
    public init(path: String, options: Options = Options()) throws(SQLiteError) {
        Self.configureLibrary
        var flags = SQLITE_OPEN_NOMUTEX
        if options.readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if options.create { flags |= SQLITE_OPEN_CREATE }
        }
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        do {
            try check(code, handle, "sqlite3_open_v2 \(path)")
        } catch {
            sqlite3_close_v2(handle)
            throw error
        }
        guard let handle else {
            throw SQLiteError(code: SQLITE_NOMEM, message: "no connection handle", context: "sqlite3_open_v2 \(path)")
        }
        self.database = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        try check(sqlite3_busy_timeout(handle, Int32(clamping: options.busyTimeoutMilliseconds)),
                  handle, "sqlite3_busy_timeout")
        if !options.readOnly {
            // Before the WAL switch, which writes a new file's first page: it sets the size then.
            if let pageSize = options.pageSize { try execute("PRAGMA page_size = \(pageSize)") }
            let mode = try firstText("PRAGMA journal_mode = WAL") ?? ""
            guard mode.lowercased() == "wal" else {
                throw SQLiteError(code: SQLITE_ERROR, message: "journal_mode is '\(mode)', WAL expected",
                                  context: "PRAGMA journal_mode = WAL on \(path)")
            }
        }
        try execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
        // A statement that may fail after changing some rows (a multi-row INSERT) keeps the
        // pages it changes in a statement journal, by default a temporary file: two writes
        // per page and statement. In memory it is a copy of those few pages, freed at the end
        // of each statement.
        try execute("PRAGMA temp_store = MEMORY")
    }

    deinit {
        statements.removeAll()  // finalize every statement before the connection closes
        sqlite3_close_v2(database)
    }

    /// Counts the frames in the WAL after each commit (``framesInWAL``) instead of letting a
    /// commit checkpoint: SQLite's automatic checkpoint is a WAL hook, which this one replaces.
    /// The caller checkpoints (`PRAGMA wal_checkpoint`) when it sees fit.
    func trackWALFrames() {
        let frames = WALFrames()
        walFrames = frames
        sqlite3_wal_hook(database, { context, _, _, pages in
            Unmanaged<WALFrames>.fromOpaque(context!).takeUnretainedValue().count = Int(pages)
            return SQLITE_OK
        }, Unmanaged.passUnretained(frames).toOpaque())
    }

    /// Frames in the WAL after the last commit (0 before ``trackWALFrames()`` or any commit).
    var framesInWAL: Int { walFrames?.count ?? 0 }

    /// Runs `body` with its statements stopped (an ``SQLiteError/isInterrupted`` error) once
    /// they have run about `steps` virtual machine instructions in all, so that a read asked
    /// by a client (the `events` query) costs a bounded time whatever it matches. SQLite counts
    /// in batches of 1,000 instructions.
    public func withStepBudget<Result>(_ steps: Int, _ body: () throws -> Result) throws -> Result {
        let left = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        left.initialize(to: max(steps / 1000, 1))
        defer {
            sqlite3_progress_handler(database, 0, nil, nil)
            left.deallocate()
        }
        sqlite3_progress_handler(database, 1000, { context in
            let left = context!.assumingMemoryBound(to: Int.self)
            left.pointee -= 1
            return left.pointee < 0 ? 1 : 0
        }, left)
        return try body()
    }

    /// Runs `sql`, which may hold several statements, without parameters and without caching.
    public func execute(_ sql: String) throws(SQLiteError) {
        try check(sqlite3_exec(database, sql, nil, nil, nil), database, sql)
    }

    /// Runs one statement with `bindings`, reading no rows; returns how many rows it changed.
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        while try statement.step() {}
        return changes
    }

    /// Runs one statement whose parameters `binding` sets (each one, in order), reading no rows;
    /// returns how many rows it changed. Text and blobs are bound without SQLite copying them
    /// (see ``SQLiteParameters``); `binding` must not run other statements.
    @discardableResult
    public func run(_ sql: String, binding: (inout SQLiteParameters) throws -> Void) throws -> Int {
        let statement = try cachedStatement(sql)
        precondition(!arenaInUse, "SQLiteConnection.run(_:binding:) inside another one's binding")
        arenaInUse = true
        defer {
            statement.reset()
            arena.reset()
            arenaInUse = false
        }
        var parameters = SQLiteParameters(statement: statement, arena: arena)
        try binding(&parameters)
        if let failure = parameters.failure {
            try check(failure.code, database, "bind parameter \(failure.index) of \(sql)")
        }
        let expected = Int(sqlite3_bind_parameter_count(statement.handle))
        guard Int(parameters.index) - 1 == expected else {
            throw SQLiteError(code: SQLITE_RANGE,
                              message: "\(parameters.index - 1) values bound, the statement has \(expected) parameters",
                              context: sql)
        }
        while try statement.step() {}
        return changes
    }

    /// Runs one statement with `bindings` and returns `row` applied to each result row.
    public func query<Row>(_ sql: String, _ bindings: [SQLiteValue] = [],
                           _ row: (SQLiteRow) throws -> Row) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(sql, bindings) { rows.append(try row($0)) }
        return rows
    }

    /// Runs one statement with `bindings`, handing each result row to `body`.
    public func forEachRow(_ sql: String, _ bindings: [SQLiteValue] = [],
                           _ body: (SQLiteRow) throws -> Void) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        let row = SQLiteRow(statement: statement.handle)
        while try statement.step() {
            try body(row)
        }
    }

    /// The first column of the first row as an integer, or nil without a row.
    public func scalarInt64(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int64? {
        try query(sql, bindings) { $0.isNull(0) ? nil : $0.int64(0) }.first ?? nil
    }

    /// The first column of the first row as text, or nil without a row.
    func firstText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return SQLiteRow(statement: statement.handle).optionalString(0)
    }

    /// Rows changed by the latest INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(database)) }

    /// The rowid of the latest successful INSERT.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(database) }

    /// How many prepared statements the cache holds.
    public var cachedStatementCount: Int { statements.count }

    /// Whether a transaction is open (SQLite may end one by itself after some errors, such as
    /// `SQLITE_FULL`).
    public var isInTransaction: Bool { sqlite3_get_autocommit(database) == 0 }

    func cachedStatement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        let statement = try SQLiteStatement(database: database, sql: sql)
        preparedStatementCount += 1
        statements[sql] = statement
        return statement
    }
}
