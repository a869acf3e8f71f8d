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
}
