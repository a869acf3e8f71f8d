internal import CSQLite
import Dispatch
import Synchronization

/// The serial executor of a ``GatewayStore``: one dispatch serial queue, so blocking SQLite
/// calls run on libdispatch's thread and never on Swift's cooperative pool, and jobs run one
/// at a time in the order they were enqueued.
final class StoreExecutor: SerialExecutor {
    private let queue: DispatchQueue
    /// Jobs queued or running on `queue`.
    private let jobs = Atomic<Int>(0)

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        async { job.runSynchronously(on: executor) }
    }

    /// Whether no job is queued or running (a moment's answer).
    var isIdle: Bool { jobs.load(ordering: .acquiring) == 0 }

    /// Runs `body` on the queue after the jobs queued before it.
    func async(_ body: @escaping @Sendable () -> Void) {
        jobs.add(1, ordering: .acquiringAndReleasing)
        queue.async {
            body()
            self.jobs.subtract(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Runs `body` on the queue after the jobs queued before it, and waits for it: on the
    /// caller's thread (libdispatch runs a `sync` block there when the queue is free).
    func sync<Result>(_ body: () throws -> Result) rethrows -> Result {
        jobs.add(1, ordering: .acquiringAndReleasing)
        defer { jobs.subtract(1, ordering: .acquiringAndReleasing) }
        return try queue.sync(execute: body)
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
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
