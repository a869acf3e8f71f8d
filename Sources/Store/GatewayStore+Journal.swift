internal import CSQLite

extension GatewayStore {
    /// The journal events matching `query`, in commit order.
    public func events(_ query: JournalQuery) throws -> [JournalEntry] {
        var conditions: [String] = []
        var bindings: [SQLiteValue] = []
        if let since = query.since {
            conditions.append("fix_time >= ?")
            bindings.append(.real(since))
        }
        if let device = query.device {
            conditions.append("device = ?")
            bindings.append(.text(device))
        }
        if let trigger = query.trigger {
            conditions.append("trigger_name = ?")
            bindings.append(.text(trigger))
        }
        if let fence = query.fence {
            conditions.append("fence = ?")
            bindings.append(.text(fence))
        }
        if let after = query.afterSequence {
            conditions.append("seq > ?")
            bindings.append(.integer(after))
        }
        var sql = "SELECT seq, id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload FROM journal"
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

    /// How many events the journal holds.
    public func journalCount() throws -> Int {
        Int(try openConnection().scalarInt64("SELECT count(*) FROM journal") ?? 0)
    }

    /// Deletes journal events emitted before `cutoff` (seconds since 1970), except those an
    /// outbox still reads its payload from; returns how many.
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
        return try connection.transaction {
            try connection.run("""
                DELETE FROM journal WHERE seq < coalesce(
                    (SELECT seq FROM journal WHERE emitted_time >= ? ORDER BY seq LIMIT 1),
                    (SELECT max(seq) + 1 FROM journal))
                AND seq NOT IN (SELECT journal_seq FROM outbox_local WHERE journal_seq IS NOT NULL)
                AND seq NOT IN (SELECT journal_seq FROM outbox_remote WHERE journal_seq IS NOT NULL)
                """, [.real(cutoff)])
        }
    }

    /// `journal.retentionDays`: deletes events emitted more than `days` days before `now`
    /// (seconds since 1970); returns how many.
    @discardableResult
    public func applyRetention(days: Double, now: Double) throws -> Int {
        try deleteEvents(emittedBefore: now - days * 86_400)
    }
}
