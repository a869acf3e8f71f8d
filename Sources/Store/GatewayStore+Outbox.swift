internal import CSQLite

extension GatewayStore {
    /// Up to `limit` messages of `destination`'s outbox with a sequence above `sequence`, in
    /// order (pass the last sequence handed to the broker to get the next ones).
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

    /// How many messages `destination`'s outbox holds.
    public func outboxCount(_ destination: OutboxDestination) -> Int { queued[destination] }

    /// How many messages each outbox holds.
    public var outboxCounts: OutboxCounts { queued }
}
