import Synchronization
#if DEBUG && canImport(Glibc)
import Glibc
#endif

/// A lock's place in the lock order (docs/architecture.md, "Locks").
///
/// The order: **levels strictly increase as locks nest.** A thread may take a leveled lock only
/// while every leveled lock it holds has a lower level; taking one of an equal or lower level
/// is a programming error (two locks of one level are never held together, so two shards'
/// locks cannot nest either). Leaves, which take no other lock under them, have the highest
/// levels. Debug builds check this on every `withLock` and trap with both locks named; release
/// builds keep neither the level nor any bookkeeping.
package struct LockLevel: Sendable {
    /// Higher is taken later (further inside).
    package let rank: Int
    /// The lock's field, for the trap message.
    package let name: StaticString

    package init(_ rank: Int, _ name: StaticString) {
        self.rank = rank
        self.name = name
    }

    // The order, outermost first. Keep docs/architecture.md's table in step.
    package static let deviceShard = LockLevel(10, "DeviceShard.state")
    package static let runtimeFenceBook = LockLevel(10, "RuntimeFences.book")
    package static let expectationBook = LockLevel(20, "Expectations.book")
    package static let tripBook = LockLevel(20, "Trips.book")
    package static let censusAdmission = LockLevel(25, "DeviceShard.Census.admission")
    package static let expectationWork = LockLevel(30, "Expectations.work")
    package static let tripWork = LockLevel(30, "Trips.clears")
    package static let fenceFollowers = LockLevel(30, "RuntimeFences.followers")
    package static let census = LockLevel(30, "DeviceShard.Census.users")
    package static let statePublisherBook = LockLevel(40, "StatePublisher.book")
    package static let outboxWindow = LockLevel(40, "OutboxPublisher.machine")
    package static let committerPending = LockLevel(50, "EventCommitter.pending")
    package static let occupancy = LockLevel(50, "StatePublisher.occupancy")
    package static let eventRateWarning = LockLevel(80, "DeviceShard.EventRateWarning.lastRefused")
    package static let counters = LockLevel(90, "GatewayCounters (dropped, eventsByKind)")
    package static let warnings = LockLevel(90, "Warnings.current")
}

/// A `Mutex` with a place in the lock order (``LockLevel``). In release builds it is the plain
/// `Mutex` and `withLock` is that of `Mutex`, inlined; in debug builds `withLock` first checks
/// the levels the calling thread holds (before waiting, so a wrong order traps instead of
/// deadlocking).
package struct LeveledMutex<Value: ~Copyable>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>
    #if DEBUG
    @usableFromInline let level: LockLevel
    #endif

    @inlinable
    package init(_ initialValue: consuming sending Value, level: LockLevel) {
        mutex = Mutex(initialValue)
        #if DEBUG
        self.level = level
        #endif
    }

    @inlinable
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if DEBUG
        LockOrder.willTake(level)
        defer { LockOrder.released(level) }
        #endif
        return try mutex.withLock(body)
    }
}

#if DEBUG
/// The leveled locks each thread holds, innermost last, kept in POSIX thread-specific data:
/// locks are taken on plain threads (libmosquitto's, libdispatch's) as much as in tasks, and a
/// task local would follow the task, not the thread that holds the lock.
package enum LockOrder {
    private final class Held {
        var levels: [LockLevel] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        precondition(created == 0, "LockOrder: pthread_key_create failed (\(created))")
        return key
    }()

    private static var held: Held {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Held>.fromOpaque(pointer).takeUnretainedValue() }
        let held = Held()
        pthread_setspecific(key, Unmanaged.passRetained(held).toOpaque())
        return held
    }

    /// Traps unless `level` is above every level the thread holds; then records it.
    @usableFromInline
    static func willTake(_ level: LockLevel) {
        let held = held
        // Levels only increase inward, so the innermost held is the highest.
        if let inner = held.levels.last, inner.rank >= level.rank {
            preconditionFailure(
                "lock order: taking \(level.name) (level \(level.rank)) while holding \(inner.name) (level \(inner.rank)); "
                    + "a lock may only be taken inside locks of a lower level")
        }
        held.levels.append(level)
    }

    @usableFromInline
    static func released(_ level: LockLevel) {
        let held = held
        precondition(held.levels.last?.rank == level.rank, "lock order: \(level.name) released out of order")
        held.levels.removeLast()
    }

    /// The levels the calling thread holds, innermost last (for tests).
    package static var heldLevels: [Int] { held.levels.map(\.rank) }
}
#endif
