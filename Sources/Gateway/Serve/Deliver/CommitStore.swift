import Store

/// What ``EventCommitter`` needs of the database, and all it uses of it: one transaction per
/// group commit, run as a job on the store's serial queue (or right on the caller's thread when
/// that queue is idle). In `serve` it is the ``GatewayStore``; tests give the committer a fake
/// that refuses commits on command (busy, full), so every failure path runs in-process, with
/// no broker and no fault hook in the shipped binary (docs/architecture.md "Commit and outbox").
///
/// An actor, so that ``commit(_:)`` runs isolated to the store: the committer calls it without
/// a hop from a job that ``perform(_:)`` or ``performHereIfIdle(_:)`` runs.
package protocol CommitStore: Actor {
    /// The database file (named in the `database` warning).
    nonisolated var path: String { get }
    /// `gateway.durability`: with `.normal` a commit does not wait for a sync, so the network
    /// thread may commit its own bursts (``EventCommitter/commitBurst()``).
    nonisolated var durability: StoreDurability { get }
    /// Commits `batch` in one transaction and returns what it did; when it throws (busy, disk
    /// full, I/O error) nothing of the batch is stored.
    func commit(_ batch: StoreBatch) throws -> StoreReceipt
    /// Runs `job` isolated to the store, after the jobs queued before it.
    nonisolated func perform(_ job: @escaping @Sendable (isolated Self) -> Void)
    /// Runs `job` isolated to the store right on the caller's thread when no job is queued or
    /// running, else queues it as ``perform(_:)`` does; true when it ran here.
    @discardableResult
    nonisolated func performHereIfIdle(_ job: @escaping @Sendable (isolated Self) -> Void) -> Bool
}

extension GatewayStore: CommitStore {
    package nonisolated var durability: StoreDurability { options.durability }
}
