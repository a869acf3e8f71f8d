internal import CSQLite

/// Expected arrivals (dispatchers' deadlines, `PREFIX/expect/ID`): each open expectation, and
/// each settled one until the broker's retained copy of it is known to be cleared. A result is
/// committed in the same transaction as its settling (``ExpectationChange/settle(_:)`` in the
/// ``StoreBatch`` that also carries the result's outbox message), so a restart neither loses
/// nor repeats a decision.
extension GatewayStore {
    /// Migration step 6: one row per expectation.
    static let expectationsMigration = SQLiteMigration(version: 6, summary: "expected arrivals", sql: """
        CREATE TABLE expectation (
            id TEXT PRIMARY KEY NOT NULL,
            payload BLOB NOT NULL,
            device TEXT NOT NULL,
            layer TEXT NOT NULL,
            fence TEXT NOT NULL,
            by_time REAL NOT NULL,
            received_time REAL NOT NULL,
            result TEXT,
            result_id TEXT,
            result_time REAL,
            settled_time REAL
        ) WITHOUT ROWID;
        """)

    /// Every stored expectation (open and settled), by id.
    public func expectations() throws -> [ExpectationRow] {
        try openConnection().query("SELECT \(Self.expectationColumns) FROM expectation ORDER BY id", [], Self.expectationRow)
    }

    /// The stored expectations a start keeps, bounded: at most `openLimit` open ones, those
    /// accepted first (by `received`, then id: the ones a live gateway at that cap would have
    /// accepted), and at most `settledLimit` settled ones; with how many of each were left out.
    /// Only what is returned is read.
    public func expectations(openLimit: Int, settledLimit: Int) throws -> (rows: [ExpectationRow], openLeftOut: Int, settledLeftOut: Int) {
        let connection = try openConnection()
        let open = try connection.query(
            "SELECT \(Self.expectationColumns) FROM expectation WHERE result IS NULL ORDER BY received_time, id LIMIT ?",
            [.integer(Int64(max(0, openLimit)))], Self.expectationRow)
        let settled = try connection.query(
            "SELECT \(Self.expectationColumns) FROM expectation WHERE result IS NOT NULL ORDER BY id LIMIT ?",
            [.integer(Int64(max(0, settledLimit)))], Self.expectationRow)
        var openCount = 0, settledCount = 0
        try connection.forEachRow("SELECT COUNT(*) FILTER (WHERE result IS NULL), COUNT(*) FILTER (WHERE result IS NOT NULL) FROM expectation") {
            openCount = $0.int(0)
            settledCount = $0.int(1)
        }
        return (open + settled, max(0, openCount - open.count), max(0, settledCount - settled.count))
    }

    private static let expectationColumns =
        "id, payload, device, layer, fence, by_time, received_time, result, result_id, result_time, settled_time"

    private static func expectationRow(_ row: SQLiteRow) -> ExpectationRow {
        ExpectationRow(
            id: row.string(0), payload: row.bytes(1), device: row.string(2), layer: row.string(3), fence: row.string(4),
            by: row.double(5), received: row.double(6), result: row.optionalString(7), resultID: row.optionalString(8),
            resultTime: row.isNull(9) ? nil : row.double(9), settled: row.isNull(10) ? nil : row.double(10))
    }

    /// The result id stored for each of `ids` (nil: open or no row).
    public func expectationResults(_ ids: [String]) throws -> [String: String] {
        let connection = try openConnection()
        var results: [String: String] = [:]
        for id in ids {
            try connection.forEachRow("SELECT result_id FROM expectation WHERE id = ? AND result_id IS NOT NULL", [.text(id)]) {
                results[id] = $0.string(0)
            }
        }
        return results
    }

    /// Deletes settled expectations settled before `cutoff` (seconds since 1970); returns how many.
    @discardableResult
    public func purgeSettledExpectations(before cutoff: Double) throws -> Int {
        try openConnection().run("DELETE FROM expectation WHERE result IS NOT NULL AND settled_time < ?", [.real(cutoff)])
    }

    /// Applies a batch's expectation changes in order (inside the batch's transaction).
    func writeExpectations(_ changes: [ExpectationChange], on connection: SQLiteConnection) throws {
        for change in changes {
            switch change {
            case .open(let row):
                try connection.run(
                    """
                    INSERT OR REPLACE INTO expectation
                    (id, payload, device, layer, fence, by_time, received_time, result, result_id, result_time, settled_time)
                    VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)
                    """,
                    [.text(row.id), .blob(row.payload), .text(row.device), .text(row.layer), .text(row.fence),
                     .real(row.by), .real(row.received)])
            case .settle(let row):
                // Only the version that was decided, and only once: a replacement committed
                // before it (another payload) or an earlier decision stays.
                try connection.run(
                    """
                    INSERT INTO expectation
                    (id, payload, device, layer, fence, by_time, received_time, result, result_id, result_time, settled_time)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET result = excluded.result, result_id = excluded.result_id,
                        result_time = excluded.result_time, settled_time = excluded.settled_time
                    WHERE expectation.payload = excluded.payload AND expectation.result IS NULL
                    """,
                    [.text(row.id), .blob(row.payload), .text(row.device), .text(row.layer), .text(row.fence),
                     .real(row.by), .real(row.received), SQLiteValue(row.result), SQLiteValue(row.resultID),
                     SQLiteValue(row.resultTime), SQLiteValue(row.settled)])
            case .remove(let id, let onlySettled):
                try connection.run(
                    onlySettled ? "DELETE FROM expectation WHERE id = ? AND result IS NOT NULL" : "DELETE FROM expectation WHERE id = ?",
                    [.text(id)])
            }
        }
    }
}

/// One expectation as stored: the payload it was accepted from, what it asks, and its result
/// once decided.
public struct ExpectationRow: Sendable, Equatable {
    /// The ID level of `PREFIX/expect/ID`.
    public var id: String
    /// The payload as published (a retained copy of it is recognised by its bytes).
    public var payload: [UInt8]
    public var device: String
    public var layer: String
    public var fence: String
    /// The deadline, seconds since 1970.
    public var by: Double
    /// When the gateway accepted it (wall clock).
    public var received: Double
    /// `arrived` or `missed`; nil while open.
    public var result: String?
    /// The result message's id.
    public var resultID: String?
    /// The arrival's fix time, or `by` for a miss.
    public var resultTime: Double?
    /// When it was decided (wall clock).
    public var settled: Double?

    public init(id: String, payload: [UInt8], device: String, layer: String, fence: String, by: Double, received: Double,
                result: String? = nil, resultID: String? = nil, resultTime: Double? = nil, settled: Double? = nil) {
        self.id = id
        self.payload = payload
        self.device = device
        self.layer = layer
        self.fence = fence
        self.by = by
        self.received = received
        self.result = result
        self.resultID = resultID
        self.resultTime = resultTime
        self.settled = settled
    }
}

/// A change to the stored expectations, committed with a ``StoreBatch``.
public enum ExpectationChange: Sendable, Equatable {
    /// Stores an open expectation (replacing whatever the id held).
    case open(ExpectationRow)
    /// Records a decision for the row's id, if that id still holds the same payload, open.
    case settle(ExpectationRow)
    /// Deletes the id's row (`onlySettled`: only if it is settled).
    case remove(String, onlySettled: Bool)
}
