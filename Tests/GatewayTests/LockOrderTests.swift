import Foundation
@testable import Gateway
import Testing

/// The lock order of ``LeveledMutex``: levels strictly increase as locks nest. Debug builds
/// (the tests') check it; a wrong order traps, which only a child process can show.
@Suite struct LockOrderTests {
    @Test func locksTakenInIncreasingLevelsDoNotTrap() {
        let shard = LeveledMutex(0, level: .deviceShard)
        let book = LeveledMutex(0, level: .expectationBook)
        let pending = LeveledMutex(0, level: .committerPending)
        let warnings = LeveledMutex(0, level: .warnings)
        let sum = shard.withLock { a in
            a += 1
            return book.withLock { b in
                b += 2
                return pending.withLock { c in
                    c += 3
                    return warnings.withLock { d in
                        d += 4
                        return a + b + c + d
                    }
                }
            }
        }
        #expect(sum == 10)
        // Taken again one after the other, never nested: any order.
        #expect(warnings.withLock { $0 } == 4)
        #expect(shard.withLock { $0 } == 1)
        #if DEBUG
        #expect(LockOrder.heldLevels.isEmpty)
        #endif
    }

    #if DEBUG
    @Test func theThreadKnowsWhatItHolds() {
        let shard = LeveledMutex((), level: .deviceShard)
        let pending = LeveledMutex((), level: .committerPending)
        let levels = shard.withLock { _ in pending.withLock { _ in LockOrder.heldLevels } }
        #expect(levels == [LockLevel.deviceShard.rank, LockLevel.committerPending.rank])
        #expect(LockOrder.heldLevels.isEmpty)
    }

    @Test func eachThreadHasItsOwnLevels() {
        // Another thread holding the shard lock does not stop this one taking a lower one.
        let shard = LeveledMutex((), level: .deviceShard)
        let held = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            shard.withLock { _ in
                held.signal()
                done.wait()
            }
        }
        thread.start()
        held.wait()
        let book = LeveledMutex(1, level: .expectationBook)
        #expect(book.withLock { $0 } == 1)
        #expect(LockOrder.heldLevels.isEmpty)
        done.signal()
    }

    @Test func aLowerLevelInsideAHigherOneTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let shard = LeveledMutex((), level: .deviceShard)
            let pending = LeveledMutex((), level: .committerPending)
            pending.withLock { _ in shard.withLock { _ in } }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains(
            "lock order: taking DeviceShard.state (level 10) while holding EventCommitter.pending (level 50)"))
    }

    @Test func twoLocksOfOneLevelTrap() async {
        // Two shards' locks: never held together.
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = LeveledMutex((), level: .deviceShard)
            let second = LeveledMutex((), level: .deviceShard)
            first.withLock { _ in second.withLock { _ in } }
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("taking DeviceShard.state (level 10) while holding DeviceShard.state (level 10)"))
    }

    @Test func aLeafTakesNoOtherLock() async {
        await #expect(processExitsWith: .failure) {
            let warnings = LeveledMutex((), level: .warnings)
            let census = LeveledMutex((), level: .census)
            warnings.withLock { _ in census.withLock { _ in } }
        }
    }
    #endif
}
