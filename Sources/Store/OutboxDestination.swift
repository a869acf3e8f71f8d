internal import CSQLite

/// The outbox an event waits in until its broker acknowledged it (`delivery` picks them).
public enum OutboxDestination: String, Sendable, CaseIterable, Hashable {
    /// The main broker (`broker`).
    case local
    /// The upstream broker (`remote`).
    case remote

    /// The table holding this outbox.
    var table: String { "outbox_\(rawValue)" }

    /// Appends one message; with `journal_seq` set, the payload is that journal row's (and the
    /// `payload` column is empty).
    var insertSQL: String {
        switch self {
        case .local: "INSERT INTO outbox_local (event_id, topic, payload, qos, journal_seq) VALUES (?, ?, ?, ?, ?)"
        case .remote: "INSERT INTO outbox_remote (event_id, topic, payload, qos, journal_seq) VALUES (?, ?, ?, ?, ?)"
        }
    }

    /// Removes one acknowledged message by its sequence.
    var deleteSQL: String {
        switch self {
        case .local: "DELETE FROM outbox_local WHERE seq = ?"
        case .remote: "DELETE FROM outbox_remote WHERE seq = ?"
        }
    }
}
