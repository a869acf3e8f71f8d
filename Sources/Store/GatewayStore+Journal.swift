internal import CSQLite

extension GatewayStore {
    /// The journal events matching `query`, in commit order. Device, trigger, layer, fence and
    /// type are read from each event's payload (the event JSON; "" where it lacks one).
    public func events(_ query: JournalQuery) throws -> [JournalEntry] {
        let connection = try openConnection()
        var (sql, bindings) = try Self.rows(query, on: connection)
        let fields = [Self.PayloadField.device, Self.PayloadField.trigger, Self.PayloadField.layer,
                      Self.PayloadField.fence, Self.PayloadField.type].map { "coalesce(\(Self.payloadField($0)), '')" }
        sql = "SELECT seq, id, \(fields.joined(separator: ", ")), fix_time, emitted_time, payload FROM " + sql
        sql += " ORDER BY seq LIMIT ?"
        bindings.append(.integer(Int64(query.limit.map { max($0, 0) } ?? -1)))
        return try connection.query(sql, bindings) { row in
            JournalEntry(
                sequence: row.int64(0),
                event: JournalEvent(id: row.string(1), device: row.string(2), trigger: row.string(3),
                                    layer: row.string(4), fence: row.string(5), type: row.string(6),
                                    fixTime: row.double(7), emittedTime: row.double(8), payload: row.string(9)))
        }
    }

    /// A page of the `events` query (docs/control-plane.md): the payloads, the event JSON as
    /// published, of the events matching `query` (its `limit` and `afterSequence` unused) in
    /// fix time order (then id), the first `offset` skipped, at most
    /// `limit`; `more` when further events match; `count`: how many match in all (so that a
    /// reader can ask for the newest ones).
    ///
    /// The read stops with an ``SQLiteError/isInterrupted`` error past `maxSteps` SQLite
    /// instructions (``SQLiteConnection/withStepBudget(_:_:)``): a client's wide window with
    /// filters that match little, or a large offset, costs at most that, never a scan of a
    /// journal of millions of events.
    public func eventPage(_ query: JournalQuery, offset: Int, limit: Int, maxSteps: Int) throws -> (payloads: [String], more: Bool, count: Int) {
        let connection = try openConnection()
        return try connection.withStepBudget(maxSteps) {
            let (rows, bindings) = try Self.rows(query, on: connection)
            let count = Int(try connection.scalarInt64("SELECT count(*) FROM " + rows, bindings) ?? 0)
            guard offset < count else { return ([], false, count) }
            let page = "SELECT payload FROM " + rows + " ORDER BY fix_time, id LIMIT ? OFFSET ?"
            let payloads = try connection.query(page, bindings + [.integer(Int64(limit)), .integer(Int64(offset))]) { $0.string(0) }
            return (payloads, offset + payloads.count < count, count)
        }
    }

    /// How far ahead of its emitted time an event's fix time may be and still be found from
    /// its sequence (seconds; `journal_fix_ahead` holds those further ahead: fixes from a clock
    /// ahead of the gateway's, which a gpsd feed keeps, docs/configuration.md "Inputs"). The
    /// index's condition in schema 10 says 60 too.
    static let fixAhead = 60.0
    /// `journal_fix_ahead`'s condition, as the queries must spell it for SQLite to use it.
    static let fixAheadCondition = "fix_time > emitted_time + 60"
    /// How far back emitted times may step in commit order (seconds): they are the wall clock
    /// when the event was decided and follow commit order but for a clock set back (by NTP,
    /// by hand). Searches by emitted time start this much earlier.
    static let emittedDisorder = 600.0

    /// The first sequence from which every journal row (in commit order) was emitted at or
    /// after `time`, as far as emitted times follow commit order; nil when the newest row was
    /// emitted before it (or there is none). A bisection over sequences: a few dozen reads of
    /// one row each, however long the journal, with no index on the emitted time (each index
    /// costs every group commit its pages).
    static func firstSequence(emittedFrom time: Double, on connection: SQLiteConnection) throws -> Int64? {
        guard var low = try connection.scalarInt64("SELECT min(seq) FROM journal"),
              var high = try connection.scalarInt64("SELECT max(seq) FROM journal") else { return nil }
        // Whether the first row at or after sequence `bound` was emitted at or after `time`.
        func from(_ bound: Int64) throws -> Bool {
            try connection.query("SELECT emitted_time >= ? FROM journal WHERE seq >= ? ORDER BY seq LIMIT 1",
                                 [.real(time), .integer(bound)]) { $0.int64(0) != 0 }.first ?? true
        }
        guard try from(high) else { return nil }
        while low < high {
            let middle = low + (high - low) / 2
            if try from(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// The rows `query` reads, as the text after `FROM`, and its bindings: the journal with
    /// `query`'s filters. With `since` (fix times at or after it), not the whole journal: an
    /// event's fix time is at most its emitted time plus ``fixAhead`` unless
    /// `journal_fix_ahead` holds it, so the others are among the rows from the first sequence
    /// emitted at or after `since` less ``fixAhead`` and ``emittedDisorder`` on.
    static func rows(_ query: JournalQuery, on connection: SQLiteConnection) throws -> (sql: String, bindings: [SQLiteValue]) {
        let (filter, bindings) = Self.filter(query)
        guard let since = query.since else { return ("journal" + filter, bindings) }
        let start = try firstSequence(emittedFrom: since - fixAhead - emittedDisorder, on: connection) ?? Int64.max
        let conditions = " AND " + filter.dropFirst(" WHERE ".count)  // `since`'s at least
        return ("(SELECT * FROM journal WHERE seq >= ?\(conditions) UNION ALL "
                + "SELECT * FROM journal WHERE \(fixAheadCondition) AND seq < ?\(conditions))",
                [.integer(start)] + bindings + [.integer(start)] + bindings)
    }

    /// The WHERE clause of `query`'s filters (empty without any) and its bindings. The lists
    /// are bound as one JSON array each (`json_each`), so that a statement's text, and the
    /// connection's cache of prepared statements, does not grow with their lengths.
    private static func filter(_ query: JournalQuery) -> (sql: String, bindings: [SQLiteValue]) {
        var conditions: [String] = []
        var bindings: [SQLiteValue] = []
        if let since = query.since {
            conditions.append("fix_time >= ?")
            bindings.append(.real(since))
        }
        if let until = query.until {
            conditions.append("fix_time < ?")
            bindings.append(.real(until))
        }
        for (field, value) in [(PayloadField.device, query.device), (PayloadField.trigger, query.trigger),
                               (PayloadField.fence, query.fence)] {
            guard let value else { continue }
            conditions.append("\(payloadField(field)) = ?")
            bindings.append(.text(value))
        }
        for (field, values) in [(PayloadField.device, query.devices), (PayloadField.type, query.types)] {
            guard let values else { continue }
            conditions.append("\(payloadField(field)) IN (SELECT value FROM json_each(?))")
            bindings.append(.text(jsonArray(values)))
        }
        if let after = query.afterSequence {
            conditions.append("seq > ?")
            bindings.append(.integer(after))
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), bindings)
    }

    /// `strings` as a JSON array's text.
    static func jsonArray(_ strings: [String]) -> String {
        var text = "["
        for (n, string) in strings.enumerated() {
            if n > 0 { text += "," }
            text += "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        }
        return text + "]"
    }

    /// The SQL reading `path` from a journal row's payload: NULL where the payload lacks it or
    /// is not JSON (which would make `json_extract` fail the whole query).
    static func payloadField(_ path: String) -> String {
        "CASE WHEN json_valid(payload) THEN json_extract(payload, '\(path)') END"
    }

    /// Where the event JSON (the MQTT event schema) holds the fields a ``JournalEvent`` names.
    enum PayloadField {
        static let device = "$.device"
        static let trigger = "$.trigger"
        static let layer = "$.fence.layer"
        static let fence = "$.fence.id"
        static let type = "$.type"
    }

    /// How many events the journal holds.
    public func journalCount() throws -> Int {
        Int(try openConnection().scalarInt64("SELECT count(*) FROM journal") ?? 0)
    }

    /// Deletes journal events emitted before `cutoff` (seconds since 1970), except those an
    /// outbox still reads its payload from or a stream still waits for; returns how many.
    ///
    /// The cut is the first event in commit order emitted at or after `cutoff`: everything
    /// committed before it goes. Emitted times follow commit order (monitors on different
    /// shards may differ by milliseconds within one group commit), so an event emitted just
    /// before the cutoff but committed after that first one stays until the next pass, and
    /// no event emitted after the cutoff is deleted. The newest event always stays, however old:
    /// new rows are numbered on from it after a restart (``nextJournalSequence``), so its
    /// sequence is never given again.
    @discardableResult
    public func deleteEvents(emittedBefore cutoff: Double) throws -> Int {
        if options.readOnly { throw StoreError.readOnly(path: path) }
        let connection = try openConnection()
        // Kept per destination: rows its outbox table reads, and its stream's unsettled events.
        let delivered = deliveredCondition()
        let sql = """
            DELETE FROM journal WHERE seq < coalesce(
                (SELECT seq FROM journal WHERE emitted_time >= ? ORDER BY seq LIMIT 1),
                (SELECT max(seq) FROM journal))
            AND \(delivered.sql)
            """
        return try connection.transaction { try connection.run(sql, [.real(cutoff)] + delivered.bindings) }
    }

    /// The condition (with its bindings) that a journal row is delivered: no outbox table row
    /// reads its payload, and no stream it is marked for still waits for it (sequence above
    /// the stream's settled one), and, once the gateway folds states, it is folded into `device_state` (``foldJournal(batch:transactions:)``).
    /// Such rows are the only ones retention deletes.
    private func deliveredCondition() -> (sql: String, bindings: [SQLiteValue]) {
        // Without a fold installed (a command, a test of the store) no state waits for events.
        var conditions = stateFold == nil ? [] : ["seq <= ?"]
        var bindings: [SQLiteValue] = stateFold == nil ? [] : [.integer(foldedJournalSequence)]
        for destination in OutboxDestination.allCases {
            conditions.append("seq NOT IN (SELECT journal_seq FROM \(destination.table) WHERE journal_seq IS NOT NULL)")
            conditions.append("NOT ((outboxes & ?) != 0 AND seq > ?)")
            bindings += [.integer(destination.streamBit), .integer(streams[destination].settled)]
        }
        return (conditions.joined(separator: " AND "), bindings)
    }

    /// One step of `journal.maxRows`: deletes the delivered events among the next `limit` rows
    /// in commit order after sequence `after` whose sequence is more than `maxRows` behind the
    /// newest event's; returns how many it deleted, and the sequence to resume after (nil once
    /// every row past the budget has been looked at).
    ///
    /// The budget is counted in sequence numbers, which read two B-tree ends instead of
    /// counting millions of rows: the journal keeps the newest `maxRows` sequences, plus the
    /// older rows an outbox still has to send. (A database from before schema 10 may have
    /// numbers without a row, so the journal can then hold a few rows less than `maxRows`.) One step
    /// looks at `limit` rows at most, so a commit waits for one short step, never the whole trim:
    /// see ``trimJournal(toRows:batch:)``.
    public func trimJournalStep(toRows maxRows: Int, after: Int64, limit: Int) throws -> (removed: Int, resumeAfter: Int64?) {
        executor.checkIsolated()
        if options.readOnly { throw StoreError.readOnly(path: path) }
        let connection = try openConnection()
        guard let newest = try connection.scalarInt64("SELECT max(seq) FROM journal") else { return (0, nil) }
        // Rows up to this sequence are past the budget; the newest always stays (see
        // ``deleteEvents(emittedBefore:)``), even with a budget of 0.
        let cut = newest - Int64(max(maxRows, 1))
        let from = max(after, 0)
        guard cut > from else { return (0, nil) }
        let end = try connection.scalarInt64(
            "SELECT seq FROM journal WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT 1 OFFSET ?",
            [.integer(from), .integer(cut), .integer(Int64(max(limit, 1) - 1))]) ?? cut
        let delivered = deliveredCondition()
        let removed = try connection.transaction {
            try connection.run("DELETE FROM journal WHERE seq > ? AND seq <= ? AND \(delivered.sql)",
                               [.integer(from), .integer(end)] + delivered.bindings)
        }
        if removed > 0 { checkpointer?.request(frames: connection.framesInWAL) }
        return (removed, end < cut ? end : nil)
    }

    /// `journal.maxRows`: deletes the oldest delivered events until the journal holds the
    /// newest `maxRows` (and older events only while an outbox still has to send them);
    /// returns how many it deleted. Works in steps of `batch` rows, each a job of its own on
    /// the store's queue, so commits go on between them (``trimJournalStep(toRows:after:limit:)``);
    /// stops early, between two steps, once `proceed` says no (a shutdown).
    @discardableResult
    public nonisolated func trimJournal(toRows maxRows: Int, batch: Int = 10_000,
                                        while proceed: @Sendable () -> Bool = { true }) async throws -> Int {
        var removed = 0
        var after: Int64 = 0
        while proceed() {
            let step = try await trimJournalStep(toRows: maxRows, after: after, limit: batch)
            removed += step.removed
            guard let next = step.resumeAfter else { return removed }
            after = next
        }
        return removed
    }

    /// `journal.retentionDays`: deletes events emitted more than `days` days before `now`
    /// (seconds since 1970); returns how many.
    @discardableResult
    public func applyRetention(days: Double, now: Double) throws -> Int {
        try deleteEvents(emittedBefore: now - days * 86_400)
    }
}
