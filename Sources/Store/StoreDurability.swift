internal import CSQLite

/// `gateway.durability`: how far a commit is made durable before submitters resume.
public enum StoreDurability: String, Sendable, CaseIterable {
    /// `synchronous=NORMAL` in WAL: a commit survives a process kill (`kill -9`), and the last
    /// commits may be lost on power loss (the database stays consistent).
    case normal
    /// `synchronous=FULL`: the WAL is synced at every commit; a commit survives power loss.
    case full

    var synchronous: SQLiteConnection.Synchronous { self == .full ? .full : .normal }
}
