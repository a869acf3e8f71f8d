internal import CSQLite
import Dispatch

/// The serial executor of a ``GatewayStore``: one dispatch serial queue, so blocking SQLite
/// calls run on libdispatch's thread and never on Swift's cooperative pool, and jobs run one
/// at a time in the order they were enqueued.
final class StoreExecutor: SerialExecutor {
    let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
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
            queue.async {
                do {
                    continuation.resume(returning: try body())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
