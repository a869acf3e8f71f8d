internal import CSQLite
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The serial executor of a ``GatewayStore``: one dispatch serial queue, so blocking SQLite
/// calls run on libdispatch's thread and never on Swift's cooperative pool, and jobs run one
/// at a time in the order they were enqueued.
final class StoreExecutor: SerialExecutor {
    private let queue: DispatchQueue
    /// The executor's busy state, one word so that claiming it is one decision: the jobs queued
    /// or running on `queue` (the low bits), whether a caller runs isolated on its own thread
    /// (``claimed``, see ``runHereIfIdle(_:)``) and whether a job on the queue waits for that
    /// caller (``waiting``).
    private let state = Atomic<Int>(0)
    private static let claimed = 1 << 62
    private static let waiting = 1 << 61
    /// The job that found the executor claimed waits on it; the claimant signals it.
    private let released = DispatchSemaphore(value: 0)
    /// The claimant's `pthread_self()` while it runs (0 otherwise), for ``checkIsolated()``.
    private let claimant = Atomic<UInt>(0)

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        async { job.runSynchronously(on: executor) }
    }

    /// Whether no job is queued or running and no caller runs here (a moment's answer).
    var isIdle: Bool { state.load(ordering: .acquiring) == 0 }

    /// Runs `body` on the queue after the jobs queued before it.
    func async(_ body: @escaping @Sendable () -> Void) {
        state.add(1, ordering: .acquiringAndReleasing)
        queue.async {
            self.waitForClaimant()
            body()
            self.state.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Runs `body` right here, on the caller's thread, as the executor's one job, when no job
    /// is queued or running: the check and the claim are one compare-and-exchange, so a job
    /// queued from then on waits for `body` (it starts on the queue and waits there until
    /// `body` returns), never the caller for it. Returns false without running `body` when the
    /// executor is busy. `body` must not wait for a job of this executor.
    func runHereIfIdle(_ body: () throws -> Void) rethrows -> Bool {
        guard state.compareExchange(expected: 0, desired: Self.claimed, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        claimant.store(UInt(pthread_self()), ordering: .relaxed)
        defer {
            claimant.store(0, ordering: .relaxed)
            let before = state.bitwiseAnd(~(Self.claimed | Self.waiting), ordering: .acquiringAndReleasing).oldValue
            if before & Self.waiting != 0 { released.signal() }
        }
        try body()
        return true
    }

    /// At the start of every job on the queue: waits while a caller of ``runHereIfIdle(_:)``
    /// runs. Only the queue's first job can get here during a claim (the others are behind
    /// it), and no new claim begins while it is counted.
    private func waitForClaimant() {
        var current = state.load(ordering: .acquiring)
        while current & Self.claimed != 0 {
            let (exchanged, original) = state.compareExchange(
                expected: current, desired: current | Self.waiting, ordering: .acquiringAndReleasing)
            if exchanged {
                released.wait()
                return
            }
            current = original
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        if claimant.load(ordering: .relaxed) == UInt(pthread_self()) { return }
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// Runs `body` on the queue and returns its result (used before the actor exists).
    func run<Result>(_ body: @escaping @Sendable () throws -> sending Result) async throws -> sending Result {
        try await withCheckedThrowingContinuation { continuation in
            async {
                do {
                    continuation.resume(returning: try body())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
