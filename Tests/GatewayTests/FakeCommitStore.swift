import Dispatch
import Store
import Synchronization

@testable import Gateway

/// A ``CommitStore`` that takes or refuses commits on command, for ``EventCommitter``'s
/// failure paths in-process: no SQLite, no broker, no process. Its jobs run one at a time on a
/// serial queue of its own, as ``GatewayStore``'s do; every commit asked for is recorded with
/// its answer and when it came.
actor FakeCommitStore: CommitStore {
    /// What the next commits get.
    enum Answer: Sendable {
        /// Taken: the outbox messages are numbered in order.
        case take
        /// `SQLITE_BUSY`: another connection held the lock beyond the busy timeout.
        case busy
        /// `SQLITE_FULL`: the disk (or `max_page_count`) is full.
        case full
    }

    struct Attempt: Sendable {
        var batch: StoreBatch
        var answer: Answer
        /// Monotonic clock.
        var time: Double
    }

    static let busyError = SQLiteError(code: 5, message: "database is locked", context: "BEGIN IMMEDIATE")
    static let fullError = SQLiteError(code: 13, message: "database or disk is full", context: "INSERT INTO journal")

    nonisolated let path: String
    nonisolated let durability: StoreDurability
    private nonisolated let executor = QueueExecutor()
    private nonisolated let answers: Mutex<Answer>
    private nonisolated let recorded = Mutex<[Attempt]>([])
    private var sequence: Int64 = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(path: String = "/var/lib/geotrigger/fake.db", durability: StoreDurability = .normal, answer: Answer = .take) {
        self.path = path
        self.durability = durability
        answers = Mutex(answer)
    }

    /// The answer to the commits from now on.
    nonisolated func answer(_ answer: Answer) { answers.withLock { $0 = answer } }

    /// Every commit asked for, in order.
    nonisolated var attempts: [Attempt] { recorded.withLock { $0 } }
    /// The batches taken, in order.
    nonisolated var committed: [StoreBatch] { attempts.filter { $0.answer == .take }.map(\.batch) }

    func commit(_ batch: StoreBatch) throws -> StoreReceipt {
        let answer = answers.withLock { $0 }
        recorded.withLock { $0.append(Attempt(batch: batch, answer: answer, time: MonotonicClock.now())) }
        switch answer {
        case .busy: throw Self.busyError
        case .full: throw Self.fullError
        case .take:
            let rows = batch.outbox.map { message in
                sequence += 1
                return OutboxRow(sequence: sequence, message: message)
            }
            return StoreReceipt(transaction: recorded.withLock { $0.count }, outbox: rows)
        }
    }

    nonisolated func perform(_ job: @escaping @Sendable (isolated FakeCommitStore) -> Void) {
        executor.queue.async { self.assumeIsolated { job($0) } }
    }

    /// Never here: the job goes to the queue (the network thread's own commits are
    /// `ServeTests.Committer`'s, against the real store).
    @discardableResult
    nonisolated func performHereIfIdle(_ job: @escaping @Sendable (isolated FakeCommitStore) -> Void) -> Bool {
        perform(job)
        return false
    }

    /// Returns once the jobs queued before it have run (it runs on the store's queue, behind them).
    func drain() {}
}

/// A serial executor on one dispatch queue, for ``FakeCommitStore``.
final class QueueExecutor: SerialExecutor {
    let queue = DispatchQueue(label: "fake-commit-store")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    func checkIsolated() { dispatchPrecondition(condition: .onQueue(queue)) }
}

/// A ``CommittedOutbox`` that records what the committer hands it.
final class RecordingOutbox: CommittedOutbox {
    private struct Record {
        var fresh: [String] = []
        var volatile: [String] = []
        var committedFromMemory: [Set<String>] = []
        var deliveredFromMemory: Set<String> = []
    }

    private let record = Mutex(Record())

    /// Event ids of the rows delivered fresh, in order.
    var fresh: [String] { record.withLock { $0.fresh } }
    /// Event ids published from memory, in order.
    var volatile: [String] { record.withLock { $0.volatile } }
    /// What each ``committedFromMemory(_:)`` said.
    var committedFromMemoryCalls: [Set<String>] { record.withLock { $0.committedFromMemory } }

    /// The broker acknowledged these events published from memory.
    func acknowledgeFromMemory(_ events: Set<String>) { record.withLock { $0.deliveredFromMemory.formUnion(events) } }

    func deliverFresh(rows: [OutboxRow]) { record.withLock { $0.fresh += rows.map(\.message.eventID) } }
    func publishVolatile(_ messages: [OutboxMessage]) { record.withLock { $0.volatile += messages.map(\.eventID) } }
    var deliveredFromMemory: Set<String> { record.withLock { $0.deliveredFromMemory } }
    func committedFromMemory(_ events: Set<String>) { record.withLock { $0.committedFromMemory.append(events) } }
}
