internal import CSQLite

extension GatewayStore {
    /// Up to `limit` messages of `destination`'s outbox table with a sequence above `sequence`,
    /// in order (pass the last sequence handed to the broker to get the next ones).
    public func outbox(_ destination: OutboxDestination, after sequence: Int64 = 0, limit: Int) throws -> [OutboxRow] {
        // An empty payload is the journal's payload of the event (see OutboxMessage.payloadInJournal).
        try openConnection().query(
            """
            SELECT o.seq, o.event_id, o.topic, coalesce(j.payload, o.payload), o.qos FROM \(destination.table) o
            LEFT JOIN journal j ON j.seq = o.journal_seq
            WHERE o.seq > ? ORDER BY o.seq LIMIT ?
            """,
            [.integer(sequence), .integer(Int64(max(limit, 0)))]
        ) { row in
            OutboxRow(sequence: row.int64(0),
                      message: OutboxMessage(destination: destination, eventID: row.string(1), topic: row.string(2),
                                             payload: row.bytes(3), qos: row.int(4)))
        }
    }

    /// Up to `limit` messages of `destination`'s stream on the journal with a journal sequence
    /// above `sequence` and above its settled one, in order: the events journaled with their
    /// messages for it (``OutboxSource/journal``).
    public func outboxStream(_ destination: OutboxDestination, after sequence: Int64 = 0, limit: Int) throws -> [OutboxRow] {
        try openConnection().query(
            "SELECT seq, id, topic, payload, qos FROM journal WHERE seq > ? AND (outboxes & ?) != 0 ORDER BY seq LIMIT ?",
            [.integer(max(sequence, streams[destination].settled)), .integer(destination.streamBit),
             .integer(Int64(max(limit, 0)))]
        ) { row in
            OutboxRow(sequence: row.int64(0), source: .journal,
                      message: OutboxMessage(destination: destination, eventID: row.string(1), topic: row.string(2),
                                             payload: row.bytes(3), qos: row.int(4), payloadInJournal: true))
        }
    }

    /// The journal sequence up to which `destination`'s stream is settled.
    public func settledStream(_ destination: OutboxDestination) -> Int64 { streams[destination].settled }

    /// How many messages wait for `destination` (its outbox table and its stream).
    public func outboxCount(_ destination: OutboxDestination) -> Int { queued[destination] + streams[destination].count }

    /// How many messages wait for each destination (its outbox table and its stream).
    public var outboxCounts: OutboxCounts {
        OutboxCounts(local: outboxCount(.local), remote: outboxCount(.remote))
    }
}
