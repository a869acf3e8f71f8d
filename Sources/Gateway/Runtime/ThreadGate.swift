import MQTT

/// A one-shot gate that a thread which is not Swift's (libmosquitto's network thread) blocks
/// on until a task opens it: back-pressure for work done inline on that thread.
final class ThreadGate: @unchecked Sendable {
    // @unchecked: `isOpen` is read and written only with `lock` held.
    private let lock = ConditionLock()
    private var isOpen = false

    /// Lets the waiting thread (and any later `wait`) go on.
    func open() {
        lock.withLock {
            isOpen = true
            lock.broadcast()
        }
    }

    /// Blocks the calling thread until `open()`.
    func wait() {
        lock.lock()
        while !isOpen { lock.wait() }
        lock.unlock()
    }

    /// Runs `body` in a task and blocks the calling thread until it has finished. Only for a
    /// thread outside Swift's cooperative pool: blocking a pool thread could starve the task.
    static func block(on body: @escaping @Sendable () async -> Void) {
        let gate = ThreadGate()
        Task {
            await body()
            gate.open()
        }
        gate.wait()
    }
}
