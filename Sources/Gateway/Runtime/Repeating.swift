import Synchronization

/// A one-shot stop signal: ``fire()`` once, and every ``wait()`` returns and every
/// ``sleep(seconds:)`` ends early. A service's `shutdown()` fires it and its `run()` waits on it,
/// so a stop is seen at once, never at the next look at a flag. Waiting also ends when the
/// waiting task is cancelled (``ServiceGroup``'s last resort after the shutdown deadline).
final class StopSignal: Sendable {
    private struct State {
        var fired = false
        var next: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// Whether ``fire()`` was called.
    var isFired: Bool { state.withLock { $0.fired } }

    /// Stops: every waiter returns, and every later wait returns at once.
    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.fired = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when the signal is fired or the calling task is cancelled.
    func wait() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Sleeps `seconds`; returns true when the time passed, false at once when the signal is
    /// fired (or the task cancelled) first.
    func sleep(seconds: Double) async -> Bool {
        guard !isFired, !Task.isCancelled else { return false }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await Task.sleep(for: .milliseconds(Int((max(0, seconds) * 1000).rounded(.up))))
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                await self.wait()
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first && !isFired
        }
    }
}

/// The gateway's one periodic loop: runs `body` at once and then every `interval` seconds (on
/// the monotonic clock, from the start of one run to the start of the next) until `stop` is
/// fired or the task is cancelled; a stop during the wait ends the loop at once, a stop during
/// `body` after it. Used by every periodic service (status, journal retention, thread
/// priorities, expected arrivals, occupancy, runtime fences) and the monitors' clock.
func repeating(every interval: Double, until stop: StopSignal, _ body: () async -> Void) async {
    while !stop.isFired, !Task.isCancelled {
        let next = MonotonicClock.now() + interval
        await body()
        let wait = next - MonotonicClock.now()
        if wait > 0, await !stop.sleep(seconds: wait) { return }
    }
}
