internal import CSQLite

/// The outbox an event waits in until its broker acknowledged it (`delivery` picks them).
public enum OutboxDestination: String, Sendable, CaseIterable, Hashable {
    /// The main broker (`broker`).
    case local
    /// The upstream broker (`remote`).
    case remote

    /// The table holding this outbox.
    var table: String { "outbox_\(rawValue)" }

    /// Its bit in a journal row's `outboxes`.
    var streamBit: Int64 { self == .local ? 1 : 2 }
}
