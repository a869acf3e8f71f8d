internal import CSQLite
import Dispatch

/// The gateway's durable state in one SQLite file (WAL): per-device monitor state, the event
/// journal, and one outbox per destination.
///
/// An actor on its own serial executor (a dispatch queue), so the one connection is only used
/// there and blocking SQLite calls never run on the cooperative pool. ``commit(_:)`` writes one
/// ``StoreBatch`` in one transaction and returns its ``StoreReceipt``; a batch is atomic, so an
/// event and the state change that caused it are both stored or neither. (The group commit,
/// which gathers what many monitors produce into one batch, is the gateway's `EventCommitter`.)
///
/// Call ``close()`` when done: it closes the connection on the store's queue.
public actor GatewayStore {
    /// How the store is opened (`gateway.durability`, `outbox.cap`).
    public struct Options: Sendable, Equatable {
        public var durability: StoreDurability
        /// `outbox.cap`: the most messages one outbox holds; beyond it the oldest are dropped.
        public var outboxCap: Int
        public var busyTimeoutMilliseconds: Int
        /// Read only (the `events` command): no migrations, no writes.
        public var readOnly: Bool
        /// The WAL's size, in pages, at which the writer checkpoints; nil for
        /// ``WALCheckpointer/writerCheckpointBytes`` in the database's pages (tests make it small).
        public var writerCheckpointPages: Int?
        /// The WAL's size, in pages, at which a checkpoint beside the writer starts (nil for
        /// ``WALCheckpointer/checkpointBytes`` in the database's pages), and the age in seconds
        /// of the oldest uncopied frame at which one starts anyway (``WALCheckpointer``).
        public var checkpointPages: Int?
        public var checkpointAge: Double
        /// The page size of a database this store creates (an existing one keeps its own).
        public var pageSize: Int

        public init(durability: StoreDurability = .normal, outboxCap: Int = 1_000_000,
                    busyTimeoutMilliseconds: Int = 5000, readOnly: Bool = false,
                    writerCheckpointPages: Int? = nil, checkpointPages: Int? = nil,
                    checkpointAge: Double = WALCheckpointer.maxAge, pageSize: Int = GatewayStore.pageSize) {
            self.checkpointPages = checkpointPages
            self.checkpointAge = checkpointAge
            self.durability = durability
            self.outboxCap = outboxCap
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.readOnly = readOnly
            self.writerCheckpointPages = writerCheckpointPages
            self.pageSize = pageSize
        }
    }

    /// The page size of a new database: 2 KiB, not SQLite's 4 KiB. A commit writes every page
    /// it changes whole into the WAL, and the group commit's few events change a few pages
    /// each (their journal rows, the journal's index, each device's state row, the header and
    /// sequence pages): on an SD card, where every byte counts (docs/operations.md "Deploying on a Raspberry Pi"), smaller
    /// pages write less. Measured with `bench endurance --fleet driving` (1,000 devices, 16
    /// events/s): 7.1 KB per event with 4 KiB pages, 4.8 with 2 KiB, 4.2 with 1 KiB; but 1 KiB
    /// pages hold one event row (about 0.6 KiB) each, so the journal's file grows by half, and
    /// cost a commit at full rate 20-60 % more CPU (`bench store`), where 2 KiB cost about 5 %.
    public static let pageSize = 2048

    /// What opening produces on the store's queue, handed to the actor.
    struct Opened {
        var connection: SQLiteConnection
        var outboxCounts: OutboxCounts
        var streams: OutboxStreams
        var nextJournalSequence: Int64
        var foldedJournalSequence: Int64
        var checkpointer: WALCheckpointer?
        /// ``Options/writerCheckpointPages`` resolved for the database's page size.
        var writerCheckpointPages: Int
    }

    /// The database file.
    public nonisolated let path: String
    public nonisolated let options: Options
    nonisolated let executor: StoreExecutor
    var connection: SQLiteConnection?
    /// Checkpoints the WAL beside the writer (nil when read-only).
    let checkpointer: WALCheckpointer?
    /// Messages in each outbox table, kept in step with every committed insert, drop and delete.
    var queued: OutboxCounts
    /// Each destination's stream on the journal, kept in step with every commit.
    var streams: OutboxStreams
    /// The sequence the next journal row gets: one more than the newest ever given, kept in
    /// step with every commit. The journal's `seq` is a plain rowid (schema 9), which SQLite
    /// would number from the newest row still there; numbering rows here instead, from the
    /// newest sequence the journal, `journal_start` and the streams hold at the start, and
    /// retention never deleting the newest row, a sequence is never used twice (outbox rows,
    /// the streams' settled positions and `events` readers rely on that).
    var nextJournalSequence: Int64
    /// The journal's events up to this sequence are in `device_state` (``foldJournal(batch:transactions:)``).
    var foldedJournalSequence: Int64
    /// How states take events, once the gateway installed it (``setStateFold(_:)``).
    var stateFold: StateFold?
    /// A fold is queued on the store's queue.
    var foldQueued = false
    /// WAL checkpoints run beside the writer since opening (0 when read-only).
    public nonisolated var checkpointCount: Int { checkpointer?.checkpoints ?? 0 }
    /// WAL checkpoints started beside the writer since opening.
    public nonisolated var checkpointsStarted: Int { checkpointer?.started ?? 0 }
    /// Counters since opening.
    public internal(set) var statistics = StoreStatistics()
    /// A writer checkpoint is queued on the store's queue.
    var writerCheckpointQueued = false
    /// The WAL's size, in pages, at which the writer checkpoints.
    public nonisolated let writerCheckpointPages: Int

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Opens (creating unless read-only) the store at `path` and brings its schema up to date.
    public init(path: String, options: Options = Options()) async throws {
        let executor = StoreExecutor(label: "geotrigger.store")
        let opened = try await executor.run { try GatewayStore.open(path: path, options: options) }
        self.path = path
        self.options = options
        self.executor = executor
        self.connection = opened.connection
        self.queued = opened.outboxCounts
        self.streams = opened.streams
        self.nextJournalSequence = opened.nextJournalSequence
        self.foldedJournalSequence = opened.foldedJournalSequence
        self.checkpointer = opened.checkpointer
        self.writerCheckpointPages = opened.writerCheckpointPages
    }

    private static func open(path: String, options: Options) throws -> Opened {
        let connection = try SQLiteConnection(
            path: path,
            options: SQLiteConnection.Options(readOnly: options.readOnly, create: !options.readOnly,
                                              synchronous: options.durability.synchronous,
                                              busyTimeoutMilliseconds: options.busyTimeoutMilliseconds,
                                              pageSize: options.pageSize))
        if options.readOnly {
            let version = try connection.userVersion()
            guard version == schemaVersion else {
                throw StoreError.schemaVersion(path: path, found: version, expected: schemaVersion)
            }
        } else if !journalRebuilds.isDisjoint(with: try connection.migrate(migrations)),
                  (try connection.scalarInt64("PRAGMA freelist_count") ?? 0) > 0 {
            // Versions 3, 5 and 9 rebuilt the journal, 10 dropped its index, and left pages
            // free: give them back once, so an upgraded file holds only what it uses. (The
            // pages of the index version 4 drops are few and reused by the next events.)
            try connection.execute("VACUUM")
        }
        var checkpointer: WALCheckpointer?
        let pageSize = max(Int(try connection.scalarInt64("PRAGMA page_size") ?? 4096), 512)
        if !options.readOnly {
            // Checkpoints run on their own connection, and the writer's finish them as jobs of
            // their own (``commit(_:)``), never inside a commit.
            connection.trackWALFrames()
            checkpointer = try WALCheckpointer(
                path: path, synchronous: options.durability.synchronous, pages: options.checkpointPages ?? WALCheckpointer.checkpointBytes / pageSize, maxAge: options.checkpointAge)
        }
        var counts = OutboxCounts()
        var streams = OutboxStreams(local: OutboxStream(settled: 0), remote: OutboxStream(settled: 0))
        // A reader (the `events` command and query) sends nothing: it skips what the outboxes'
        // senders start from.
        for destination in OutboxDestination.allCases where !options.readOnly {
            counts[destination] = Int(try connection.scalarInt64("SELECT count(*) FROM \(destination.table)") ?? 0)
            let settled = try connection.scalarInt64("SELECT settled FROM outbox_stream WHERE destination = ?",
                                                     [.text(destination.rawValue)]) ?? 0
            var stream = OutboxStream(settled: settled)
            try connection.forEachRow("SELECT seq FROM journal WHERE seq > ? AND (outboxes & ?) != 0 ORDER BY seq",
                                      [.integer(settled), .integer(destination.streamBit)]) { stream.append($0.int64(0)) }
            streams[destination] = stream
        }
        var newest: Int64 = 0
        var folded: Int64 = 0
        if !options.readOnly {
            newest = max(try connection.scalarInt64("SELECT max(seq) FROM journal") ?? 0,
                         try connection.scalarInt64("SELECT max(seq) FROM journal_start") ?? 0,
                         streams.local.settled, streams.remote.settled)
            folded = try connection.scalarInt64("SELECT seq FROM state_fold") ?? 0
        }
        return Opened(connection: connection, outboxCounts: counts, streams: streams, nextJournalSequence: newest + 1,
                      foldedJournalSequence: folded,
                      checkpointer: checkpointer,
                      writerCheckpointPages: options.writerCheckpointPages ?? WALCheckpointer.writerCheckpointBytes / pageSize)
    }

    /// The open connection, or ``StoreError/closed(path:)``.
    func openConnection() throws -> SQLiteConnection {
        guard let connection else { throw StoreError.closed(path: path) }
        return connection
    }

    /// Closes the connection. Later calls throw ``StoreError/closed(path:)``. Closing twice
    /// does nothing.
    public func close() {
        guard connection != nil else { return }
        checkpointer?.close()
        connection = nil
    }

    /// Runs `body` with the store's connection on the store's executor, between commits: for
    /// diagnostics and fault injection in tests (`PRAGMA max_page_count`).
    public func withConnection<Result: Sendable>(_ body: @Sendable (SQLiteConnection) throws -> Result) throws -> Result {
        executor.checkIsolated()
        return try body(try openConnection())
    }

    // MARK: Monitor state

    /// Every device's persisted monitor state (read once at start).
    public func deviceStates() throws -> [String: [UInt8]] {
        var states: [String: [UInt8]] = [:]
        try openConnection().forEachRow("SELECT device, state FROM device_state") { row in
            states[row.string(0)] = row.bytes(1)
        }
        return states
    }

    /// One device's persisted monitor state, if any.
    public func deviceState(_ device: String) throws -> [UInt8]? {
        try openConnection().query("SELECT state FROM device_state WHERE device = ?", [.text(device)]) {
            $0.bytes(0)
        }.first
    }
}
