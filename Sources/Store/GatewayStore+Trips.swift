internal import CSQLite

/// Trips (docs/trips.md): each open trip, with the request it was accepted from, when it was
/// accepted and the progress fields a restart resumes from (`TripProgress.Committed`, about 20
/// bytes); and each settled one until the broker's retained copy of its request is known to be
/// cleared. A trip's progress is committed in the same transaction as its events
/// (``TripChange/progress(id:created:state:)`` in the ``StoreBatch`` that carries them), so a
/// restart neither loses nor repeats one.
extension GatewayStore {
    /// Migration step 8: one row per trip.
    static let tripsMigration = SQLiteMigration(version: 8, summary: "trips", sql: """
        CREATE TABLE trip (
            id TEXT PRIMARY KEY NOT NULL,
            payload BLOB NOT NULL,
            device TEXT NOT NULL,
            created_time REAL NOT NULL,
            progress BLOB,
            settled_time REAL
        ) WITHOUT ROWID;
        """)

    /// Every stored trip (open and settled), open ones first, each by creation time then id.
    public func trips() throws -> [TripRow] {
        try openConnection().query(
            "SELECT id, payload, device, created_time, progress, settled_time FROM trip ORDER BY settled_time IS NOT NULL, created_time, id",
            []
        ) { row in
            TripRow(
                id: row.string(0), payload: row.bytes(1), device: row.string(2), created: row.double(3),
                progress: row.isNull(4) ? nil : row.bytes(4), settled: row.isNull(5) ? nil : row.double(5))
        }
    }

    /// The creation time of each of `ids` whose stored trip is settled (absent: open or no row).
    public func settledTrips(_ ids: [String]) throws -> [String: Double] {
        let connection = try openConnection()
        var settled: [String: Double] = [:]
        for id in ids {
            try connection.forEachRow("SELECT created_time FROM trip WHERE id = ? AND settled_time IS NOT NULL", [.text(id)]) {
                settled[id] = $0.double(0)
            }
        }
        return settled
    }

    /// Deletes trips settled before `cutoff` (seconds since 1970); returns how many.
    @discardableResult
    public func purgeSettledTrips(before cutoff: Double) throws -> Int {
        try openConnection().run("DELETE FROM trip WHERE settled_time IS NOT NULL AND settled_time < ?", [.real(cutoff)])
    }

    /// Applies a batch's trip changes in order (inside the batch's transaction).
    func writeTrips(_ changes: [TripChange], on connection: SQLiteConnection) throws {
        for change in changes {
            switch change {
            case .open(let row):
                try connection.run(
                    "INSERT OR REPLACE INTO trip (id, payload, device, created_time, progress, settled_time) VALUES (?, ?, ?, ?, ?, NULL)",
                    [.text(row.id), .blob(row.payload), .text(row.device), .real(row.created), SQLiteValue(row.progress)])
            case .progress(let id, let created, let state):
                // Only the version it belongs to, while open: a replacement or a cancel committed
                // before it stays as it is.
                try connection.run(
                    "UPDATE trip SET progress = ? WHERE id = ? AND created_time = ? AND settled_time IS NULL",
                    [.blob(state), .text(id), .real(created)])
            case .settle(let id, let created, let state, let settled):
                try connection.run(
                    "UPDATE trip SET progress = ?, settled_time = ? WHERE id = ? AND created_time = ? AND settled_time IS NULL",
                    [.blob(state), .real(settled), .text(id), .real(created)])
            case .remove(let id, let onlySettled):
                try connection.run(
                    onlySettled ? "DELETE FROM trip WHERE id = ? AND settled_time IS NOT NULL" : "DELETE FROM trip WHERE id = ?",
                    [.text(id)])
            }
        }
    }
}

/// One trip as stored.
public struct TripRow: Sendable, Equatable {
    /// The TRIP_ID level of `PREFIX/trips/TRIP_ID`.
    public var id: String
    /// The request as published (a retained copy of it is recognised by its bytes).
    public var payload: [UInt8]
    public var device: String
    /// When the gateway accepted it (wall clock, whole milliseconds): a trip id used again is
    /// another trip, whose events get other ids.
    public var created: Double
    /// The committed progress (`TripProgress.Committed`'s encoding); nil before the first commit.
    public var progress: [UInt8]?
    /// When it ended (arrived or missed; wall clock); nil while open.
    public var settled: Double?

    public init(id: String, payload: [UInt8], device: String, created: Double, progress: [UInt8]? = nil, settled: Double? = nil) {
        self.id = id
        self.payload = payload
        self.device = device
        self.created = created
        self.progress = progress
        self.settled = settled
    }
}

/// A change to the stored trips, committed with a ``StoreBatch``.
public enum TripChange: Sendable, Equatable {
    /// Stores an open trip (replacing whatever the id held).
    case open(TripRow)
    /// The committed progress of the open trip `id` created at `created`.
    case progress(id: String, created: Double, state: [UInt8])
    /// The trip `id` created at `created` ended (arrived or missed) at wall time `settled`.
    case settle(id: String, created: Double, state: [UInt8], settled: Double)
    /// Deletes the id's row (`onlySettled`: only if it is settled).
    case remove(String, onlySettled: Bool)
}
