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
        await sleep(until: MonotonicClock.now() + max(0, seconds), or: nil) == .due
    }

    /// How a ``sleep(until:or:)`` ended.
    enum Waking: Sendable, Equatable {
        /// The deadline came.
        case due
        /// The ``Wakeup`` was poked (or had been, since its last wait).
        case poked
        /// The signal fired or the task was cancelled.
        case stopped
    }

    /// Sleeps until the monotonic time `deadline` (nil: no deadline), until `wakeup` is poked
    /// (a poke made since its last wait ends this one at once), or until the signal fires or
    /// the task is cancelled, whichever comes first: the one way the gateway waits for "this or
    /// a deadline".
    func sleep(until deadline: Double?, or wakeup: Wakeup?) async -> Waking {
        guard !isFired, !Task.isCancelled else { return .stopped }
        if let wakeup, wakeup.takePoke() { return .poked }
        if let deadline, deadline <= MonotonicClock.now() { return .due }
        let first = await withTaskGroup(of: Waking.self) { group in
            if let deadline {
                group.addTask {
                    let seconds = deadline - MonotonicClock.now()
                    do {
                        if seconds > 0 { try await Task.sleep(for: .microseconds(Int64((seconds * 1_000_000).rounded(.up)))) }
                        return .due
                    } catch {
                        return .stopped
                    }
                }
            }
            if let wakeup {
                group.addTask { await wakeup.wait() ? .poked : .stopped }
            }
            group.addTask {
                await self.wait()
                return .stopped
            }
            let first = await group.next() ?? .stopped
            group.cancelAll()
            return first
        }
        return isFired || Task.isCancelled ? .stopped : first
    }
}

/// A loop's wake-up call: ``poke()`` (from any thread, never waiting) ends the loop's current
/// wait, or its next one if it is not waiting (pokes meanwhile are one). One loop waits on it
/// (``StopSignal/sleep(until:or:)``); whoever makes work for that loop pokes it.
final class Wakeup: Sendable {
    private struct State {
        var poked = false
        var waiter: CheckedContinuation<Bool, Never>?
    }

    private let state = Mutex(State())

    init() {}

    /// Wakes the waiting loop (resumed after the lock is released), or the next wait.
    func poke() {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard let waiter = s.waiter else {
                s.poked = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// Takes a poke made while nobody waited: true if there was one.
    func takePoke() -> Bool {
        state.withLock { s in
            defer { s.poked = false }
            return s.poked
        }
    }

    /// Returns true when poked (at once for a poke made while nobody waited), false when the
    /// task is cancelled first. One waiter at a time.
    func wait() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { s in
                    // A cancelled wait leaves a poke for the next one.
                    if Task.isCancelled { return false }
                    if s.poked {
                        s.poked = false
                        return true
                    }
                    precondition(s.waiter == nil, "one loop waits on a Wakeup")
                    s.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { s -> CheckedContinuation<Bool, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }?.resume(returning: false)
        }
    }
}

/// Something waited for with a deadline: ``wait(until:by:)`` returns when its condition holds
/// or the deadline comes, and whoever may have made a condition hold calls ``changed()``,
/// which wakes every wait in progress to look again. The short waits of a start and a stop (a
/// PUBACK, a queue drained, the last acknowledgement) wait this way, never by polling a flag
/// in a sleep loop.
final class Changes: Sendable {
    private let waiters = Mutex<(next: Int, wakeups: [Int: Wakeup])>((0, [:]))

    init() {}

    /// Wakes the waits in progress (a lock and nothing more when none waits). Call it after the
    /// change: a wait that registers after this call sees the change when it looks.
    func changed() {
        guard let wakeups = waiters.withLock({ $0.wakeups.isEmpty ? nil : Array($0.wakeups.values) }) else { return }
        for wakeup in wakeups { wakeup.poke() }
    }

    /// Waits until `condition` holds (looked at first, and after each ``changed()``) or the
    /// monotonic time `deadline` comes; returns whether it held.
    func wait(until condition: () -> Bool, by deadline: Double) async -> Bool {
        let wakeup = Wakeup()
        let id = waiters.withLock { waiters in
            waiters.next += 1
            waiters.wakeups[waiters.next] = wakeup
            return waiters.next
        }
        defer { _ = waiters.withLock { $0.wakeups.removeValue(forKey: id) } }
        let unfired = StopSignal()
        while !condition() {
            guard await unfired.sleep(until: deadline, or: wakeup) == .poked else { return condition() }
        }
        return true
    }
}

/// The gateway's one periodic loop: runs `body` at once and then every `interval` seconds (on
/// the monotonic clock, from the start of one run to the start of the next) until `stop` is
/// fired or the task is cancelled; a stop during the wait ends the loop at once, a stop during
/// `body` after it. For fixed periods (tests, a loop with nothing to be woken for);
/// the gateway's loops use ``repeating(until:wakeup:_:)``, which sleeps until they have work.
func repeating(every interval: Double, until stop: StopSignal, _ body: () async -> Void) async {
    await repeating(until: stop) {
        let next = MonotonicClock.now() + interval
        await body()
        return next
    }
}

/// The gateway's loop that sleeps until it has work: runs `body` at once, then again whenever
/// the monotonic time it returned comes (nil: no deadline) or `wakeup` is poked, whichever is
/// first, until `stop` is fired or the task is cancelled (a stop during the wait ends the loop
/// at once, a stop during `body` after it). A poke during `body` makes the next run follow at
/// once. Used by every periodic service (status, journal retention, thread priorities,
/// expected arrivals, occupancy, runtime fences) and the monitors' clock: with nothing due,
/// the loop's task sleeps and no thread wakes for it.
func repeating(until stop: StopSignal, wakeup: Wakeup? = nil, _ body: () async -> Double?) async {
    while !stop.isFired, !Task.isCancelled {
        let next = await body()
        if await stop.sleep(until: next, or: wakeup) == .stopped { return }
    }
}
