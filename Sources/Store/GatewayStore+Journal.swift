internal import CSQLite

extension GatewayStore {
    /// The journal events matching `query`, in commit order. Device, trigger, layer, fence and
    /// type are read from each event's payload (the event JSON; "" where it lacks one).
    public func events(_ query: JournalQuery) throws -> [JournalEntry] {
        var conditions: [String] = []
        var bindings: [SQLiteValue] = []
        if let since = query.since {
            conditions.append("fix_time >= ?")
            bindings.append(.real(since))
        }
        for (field, value) in [(Self.PayloadField.device, query.device), (Self.PayloadField.trigger, query.trigger),
                               (Self.PayloadField.fence, query.fence)] {
            guard let value else { continue }
            conditions.append("\(Self.payloadField(field)) = ?")
            bindings.append(.text(value))
        }
        if let after = query.afterSequence {
            conditions.append("seq > ?")
            bindings.append(.integer(after))
        }
        let fields = [Self.PayloadField.device, Self.PayloadField.trigger, Self.PayloadField.layer,
                      Self.PayloadField.fence, Self.PayloadField.type].map { "coalesce(\(Self.payloadField($0)), '')" }
        var sql = "SELECT seq, id, \(fields.joined(separator: ", ")), fix_time, emitted_time, payload FROM journal"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY seq LIMIT ?"
        bindings.append(.integer(Int64(query.limit.map { max($0, 0) } ?? -1)))
        return try openConnection().query(sql, bindings) { row in
            JournalEntry(
                sequence: row.int64(0),
                event: JournalEvent(id: row.string(1), device: row.string(2), trigger: row.string(3),
                                    layer: row.string(4), fence: row.string(5), type: row.string(6),
                                    fixTime: row.double(7), emittedTime: row.double(8), payload: row.string(9)))
        }
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
    /// no event emitted after the cutoff is deleted.
    @discardableResult
    public func deleteEvents(emittedBefore cutoff: Double) throws -> Int {
        if options.readOnly { throw StoreError.readOnly(path: path) }
        let connection = try openConnection()
        // Kept per destination: rows its outbox table reads, and its stream's unsettled events.
        var sql = """
            DELETE FROM journal WHERE seq < coalesce(
                (SELECT seq FROM journal WHERE emitted_time >= ? ORDER BY seq LIMIT 1),
                (SELECT max(seq) + 1 FROM journal))
            """
        var bindings: [SQLiteValue] = [.real(cutoff)]
        for destination in OutboxDestination.allCases {
            sql += """

                AND seq NOT IN (SELECT journal_seq FROM \(destination.table) WHERE journal_seq IS NOT NULL)
                AND NOT ((outboxes & ?) != 0 AND seq > ?)
                """
            bindings += [.integer(destination.streamBit), .integer(streams[destination].settled)]
        }
        return try connection.transaction { try connection.run(sql, bindings) }
    }

    /// `journal.retentionDays`: deletes events emitted more than `days` days before `now`
    /// (seconds since 1970); returns how many.
    @discardableResult
    public func applyRetention(days: Double, now: Double) throws -> Int {
        try deleteEvents(emittedBefore: now - days * 86_400)
    }
}
