import Dispatch
import Synchronization

/// Copies the write-ahead log back into the database file on its own connection and thread,
/// so the group commit never waits for a checkpoint (SQLite's automatic checkpoint runs inside
/// the commit that crosses `wal_autocheckpoint` pages and, with `synchronous=NORMAL`, is the
/// only place that commit would sync the disk).
///
/// The store offers a checkpoint after each commit; one starts only once the WAL holds
/// ``pages`` frames or its oldest frame not yet copied is ``maxAge`` old, at most one runs at a
/// time, and a new one starts no sooner than ``interval`` after the previous one started. A
/// checkpoint copies each page once however often commits wrote it, so on an SD card few of
/// them mean few writes (docs/configuration.md "Durability"); the WAL itself is as durable as the database
/// file. Checkpoints are PASSIVE: they never wait for the writer, copy what they can, and
/// leave the rest for the next one.
///
/// Under continuous writes a checkpoint beside the writer never finds the WAL fully copied, and
/// only a complete checkpoint lets the next transaction start the WAL again from its beginning:
/// so the writer checkpoints too, on the store's queue between two transactions, once the WAL
/// holds ``writerCheckpointPages`` (``GatewayStore``; SQLite's automatic checkpoint would run
/// inside the commit that crosses it, on whichever thread commits). Most frames are already
/// copied then, so it is short, and it completes, bounding the WAL (without it the WAL grew to
/// 64 MB in 3 s of `bench e2e` and throughput fell by a tenth).
public final class WALCheckpointer: Sendable {
    private struct State {
        var running = false
        var lastStart: ContinuousClock.Instant?
        /// When a commit first left frames that no checkpoint started since has seen.
        var uncopiedSince: ContinuousClock.Instant?
        var closed = false
        var checkpoints = 0
        var started = 0
    }

    /// Checkpoints start at most this often.
    static let interval: Duration = .milliseconds(200)
    /// The WAL's size at which the writer checkpoints (40 MB; SQLite's automatic checkpoint
    /// defaults to 1,000 pages). At 1,000 commits a second (36,000 updates/s in `bench e2e`) a
    /// WAL of 1,000 pages filled every eighth of a second, and each of those checkpoints took
    /// 4-7 ms for its two syncs, with every event behind it. Ten times the size made that ten
    /// times rarer: the event-weighted p99 of the wait for a commit to start fell from 4.6 to
    /// 1.4 ms there. The WAL may grow to 40 MB under such a load; the checkpoints beside the
    /// writer keep most of it copied.
    public static let writerCheckpointBytes = 40_960_000
    /// The WAL's size at which a checkpoint beside the writer starts (4 MiB).
    public static let checkpointBytes = 4 << 20
    /// A checkpoint starts at the latest this long after a commit left frames (seconds).
    public static let maxAge = 600.0

    /// ``checkpointPages`` and ``maxAge`` of this store (tests make them small).
    let pages: Int
    let maxAge: Duration

    private let queue = DispatchQueue(label: "geotrigger.store.checkpoint", qos: .utility)
    /// Used only on `queue`; nil once closed.
    private nonisolated(unsafe) var connection: SQLiteConnection?
    private let state = Mutex(State())

    init(path: String, synchronous: SQLiteConnection.Synchronous, pages: Int, maxAge: Double) throws(SQLiteError) {
        self.pages = pages
        self.maxAge = .milliseconds(Int64(maxAge * 1000))
        connection = try SQLiteConnection(
            path: path, options: SQLiteConnection.Options(readOnly: false, create: false, synchronous: synchronous))
    }

    /// Checkpoints that ran to the end (counting those that could not copy every frame).
    var checkpoints: Int { state.withLock { $0.checkpoints } }
    /// Checkpoints started (decided within the commit that offered them).
    var started: Int { state.withLock { $0.started } }

    /// A commit left `frames` frames in the WAL: starts a checkpoint when they reach ``pages``
    /// or the oldest uncopied one is ``maxAge`` old (judged at this commit: an idle store keeps
    /// its WAL until the next commit or its close), unless one is running or the last started
    /// less than ``interval`` ago.
    func request(frames: Int) {
        let start: Bool = state.withLock { s in
            let now = ContinuousClock.now
            guard !s.closed, !s.running, frames > 0 else { return false }
            let since = s.uncopiedSince ?? now
            s.uncopiedSince = since
            guard frames >= pages || now - since >= maxAge else { return false }
            if let last = s.lastStart, now - last < WALCheckpointer.interval { return false }
            s.running = true
            s.lastStart = now
            s.uncopiedSince = nil
            s.started += 1
            return true
        }
        guard start else { return }
        queue.async { [self] in
            // Failures (SQLITE_BUSY, I/O) leave the frames for the next checkpoint or the backstop.
            _ = try? connection?.execute("PRAGMA wal_checkpoint(PASSIVE)")
            state.withLock { s in
                s.running = false
                s.checkpoints += 1
            }
        }
    }

    /// Stops taking requests, waits for a running checkpoint to end and closes the connection
    /// (before the writer's, so that the writer, closing last, checkpoints and removes the WAL).
    func close() {
        state.withLock { $0.closed = true }
        queue.sync { connection = nil }
    }
}
