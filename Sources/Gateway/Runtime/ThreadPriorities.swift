import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Puts the gateway's threads behind the threads that read the broker.
///
/// Feed updates are decoded and handled on libmosquitto's network thread (see ``LocalBrokerLink``).
/// The gateway's other threads (the store's queue, the cooperative pool running the outbox and
/// state publishers, the shards' ticks) wake up often, and each wake-up could preempt that
/// thread: at 20,000 updates/s on a 2-core box, `perf sched` showed the network thread runnable
/// but not running ~45 % of the time, its socket's receive queue growing to 1.4 MB and events
/// at p99 100-360 ms, while the broker alone delivered the same updates at p99 3 ms. With every
/// other thread 10 nice levels below it, the same runs gave p99 ~35 ms.
///
/// Raising a nice value needs no privilege. Threads appear later (the pool grows, a store job
/// runs on a new worker), so ``lowerAll(except:)`` is called again periodically.
package enum ThreadPriorities {
    /// How many nice levels the other threads get below the network threads (Linux allows 19).
    static let levelsBelow: Int32 = 10

    /// Gives every thread of this process except `exempt` a nice value `levelsBelow` above the
    /// first exempt thread's (at most 19), unless it has that much already. Returns how many
    /// threads it changed. Does nothing without an exempt thread.
    @discardableResult
    static func lowerAll(except exempt: [pid_t]) -> Int {
        guard let reference = exempt.first, let base = nice(of: reference) else { return 0 }
        let target = min(19, base + levelsBelow)
        var changed = 0
        for thread in threads() where !exempt.contains(thread) {
            guard let current = nice(of: thread), current < target else { continue }
            if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread), target) == 0 { changed += 1 }
        }
        return changed
    }

    /// The nice value of `thread` (a kernel thread id), nil if it cannot be read (it ended).
    static func nice(of thread: pid_t) -> Int32? {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(thread))
        return value == -1 && errno != 0 ? nil : value
    }

    /// The kernel thread ids of `process` (`/proc/PROCESS/task`; default this one).
    package static func threads(of process: String = "self") -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/task")) ?? []).compactMap { pid_t($0) }
    }
}
