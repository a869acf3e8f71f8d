import Synchronization
import Testing
@testable import Gateway

@Suite struct RepeatingTests {
    @Test func aFiredSignalEndsAWaitAtOnceAndEveryLaterOne() async {
        let stop = StopSignal()
        let waiter = Task { await stop.wait() }
        #expect(!stop.isFired)
        stop.fire()
        await waiter.value
        await stop.wait()
        #expect(await stop.sleep(seconds: 60) == false)
    }

    /// ``Changes``: two waits at once each end when a change makes their condition hold, not
    /// at their deadline; a condition that never holds ends at the deadline, false.
    @Test func aChangeEndsTheWaitsWhoseConditionItMadeHold() async {
        final class Value: Sendable { let count = Atomic<Int>(0) }
        let changes = Changes()
        let value = Value()
        let started = MonotonicClock.now()
        let one = Task { await changes.wait(until: { value.count.load(ordering: .relaxed) >= 1 }, by: started + 3600) }
        let two = Task { await changes.wait(until: { value.count.load(ordering: .relaxed) >= 2 }, by: started + 3600) }
        for _ in 0..<2 {
            try? await Task.sleep(for: .milliseconds(20))
            value.count.add(1, ordering: .relaxed)
            changes.changed()
        }
        #expect(await one.value)
        #expect(await two.value)
        #expect(MonotonicClock.now() - started < 1800)  // far below the deadline, far above a busy pool
        #expect(await changes.wait(until: { false }, by: MonotonicClock.now() + 0.05) == false)
    }

    @Test func cancellingTheWaitingTaskEndsItsWait() async {
        let stop = StopSignal()
        let waiter = Task { await stop.wait() }
        waiter.cancel()
        await waiter.value
        #expect(!stop.isFired)
    }

    @Test func sleepRunsItsTimeWhenNotStopped() async {
        let stop = StopSignal()
        let started = MonotonicClock.now()
        #expect(await stop.sleep(seconds: 0.05))
        #expect(MonotonicClock.now() - started >= 0.05)
    }

    @Test func aStopDuringTheIntervalEndsTheLoopWithoutWaitingItOut() async {
        let stop = StopSignal()
        let runs = Atomic<Int>(0)
        let loop = Task {
            await repeating(every: 3600, until: stop) { runs.add(1, ordering: .relaxed) }
        }
        while runs.load(ordering: .relaxed) == 0 { await Task.yield() }
        let stopped = MonotonicClock.now()
        stop.fire()
        await loop.value
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(MonotonicClock.now() - stopped < 1800)  // far below the interval, far above a busy pool
    }

    @Test func theLoopRunsEveryIntervalAndEndsWhenCancelled() async {
        let stop = StopSignal()
        let runs = Atomic<Int>(0)
        let loop = Task {
            await repeating(every: 0.01, until: stop) { runs.add(1, ordering: .relaxed) }
        }
        while runs.load(ordering: .relaxed) < 3 { await Task.yield() }
        loop.cancel()
        await loop.value
        #expect(!stop.isFired)
    }

    // MARK: Sleeping until a deadline or a poke

    @Test func aSleepEndsAtItsDeadline() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let deadline = MonotonicClock.now() + 0.02
        #expect(await stop.sleep(until: deadline, or: wakeup) == .due)
        #expect(MonotonicClock.now() >= deadline)
    }

    @Test func aPokeEndsASleepWithoutADeadline() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let sleeper = Task { await stop.sleep(until: nil, or: wakeup) }
        // Poked before or during the wait: either way it ends the sleep as poked.
        wakeup.poke()
        #expect(await sleeper.value == .poked)
        #expect(!wakeup.takePoke(), "the sleep took the poke")
    }

    @Test func aPokeWhileNobodyWaitsEndsTheNextSleepAtOnce() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        wakeup.poke()
        wakeup.poke()  // pokes meanwhile are one
        #expect(await stop.sleep(until: MonotonicClock.now() + 3600, or: wakeup) == .poked)
        #expect(await stop.sleep(until: MonotonicClock.now() + 0.01, or: wakeup) == .due)
    }

    @Test func aStopEndsASleepWithNothingDue() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let sleeper = Task { await stop.sleep(until: nil, or: wakeup) }
        stop.fire()
        #expect(await sleeper.value == .stopped)
        #expect(await stop.sleep(until: nil, or: wakeup) == .stopped)
    }

    @Test func cancellingASleepEndsItAndLeavesLaterPokes() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let sleeper = Task { await stop.sleep(until: nil, or: wakeup) }
        sleeper.cancel()
        #expect(await sleeper.value == .stopped)
        wakeup.poke()
        #expect(await stop.sleep(until: nil, or: wakeup) == .poked)
    }

    /// The loop runs at once, then at the time its body returned or at a poke, whichever is
    /// first, and sleeps without a deadline when the body returns none.
    @Test func theLoopRunsAtItsDeadlinesAndWhenPoked() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let runs = Atomic<Int>(0)
        let loop = Task {
            await repeating(until: stop, wakeup: wakeup) {
                let run = runs.add(1, ordering: .relaxed).newValue
                // The first two runs ask to be run again soon; then only a poke brings one.
                return run <= 2 ? MonotonicClock.now() + 0.01 : nil
            }
        }
        while runs.load(ordering: .relaxed) < 3 { await Task.yield() }
        wakeup.poke()
        while runs.load(ordering: .relaxed) < 4 { await Task.yield() }
        stop.fire()
        await loop.value
        #expect(runs.load(ordering: .relaxed) == 4)
    }

    @Test func aPokeDuringTheBodyRunsItAgain() async {
        let stop = StopSignal()
        let wakeup = Wakeup()
        let runs = Atomic<Int>(0)
        let loop = Task {
            await repeating(until: stop, wakeup: wakeup) {
                if runs.add(1, ordering: .relaxed).newValue == 1 { wakeup.poke() }
                return nil
            }
        }
        while runs.load(ordering: .relaxed) < 2 { await Task.yield() }
        stop.fire()
        await loop.value
        #expect(runs.load(ordering: .relaxed) == 2)
    }
}
