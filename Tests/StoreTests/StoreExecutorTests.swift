import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Store

/// The store executor's claim (``StoreExecutor/runHereIfIdle(_:)``, behind
/// `GatewayStore.performHereIfIdle`): deciding that the store is idle and taking it is one
/// step, so a job queued after the decision waits for the caller, never the caller for it.
@Suite struct StoreExecutorTests {
    @Test func runsHereOnlyWhenIdle() {
        let executor = StoreExecutor(label: "test.store.idle")
        #expect(executor.isIdle)
        let here = Thread.current
        var ranHere = false
        #expect(executor.runHereIfIdle { ranHere = Thread.current == here })
        #expect(ranHere && executor.isIdle)

        // A job running on the queue: the caller does not run and does not wait.
        let started = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        executor.async {
            started.signal()
            finish.wait()
        }
        started.wait()
        var ran = false
        #expect(!executor.isIdle)
        #expect(!executor.runHereIfIdle { ran = true })
        #expect(!ran)
        finish.signal()
        let drained = DispatchSemaphore(value: 0)
        executor.async { drained.signal() }
        drained.wait()
        // The queue's bookkeeping ends after the job's body: wait for it.
        while !executor.isIdle { usleep(100) }
        #expect(executor.runHereIfIdle {})
    }

    @Test func aJobQueuedDuringTheClaimWaitsForTheCaller() {
        let executor = StoreExecutor(label: "test.store.claim")
        let order = Mutex<[String]>([])
        let jobDone = DispatchSemaphore(value: 0)
        let claimedByOther = Atomic<Bool>(true)
        let ran = executor.runHereIfIdle {
            #expect(!executor.isIdle)
            // Queued after the claim, as the committer's or a reader's job would be.
            executor.async {
                order.withLock { $0.append("job") }
                jobDone.signal()
            }
            // Another thread cannot claim the executor meanwhile.
            let asked = DispatchSemaphore(value: 0)
            Thread {
                claimedByOther.store(executor.runHereIfIdle {}, ordering: .relaxed)
                asked.signal()
            }.start()
            asked.wait()
            // Time for the queue to start the job: it must wait for the end of this body.
            usleep(50_000)
            order.withLock { $0.append("caller") }
        }
        #expect(ran)
        let otherClaimed = claimedByOther.load(ordering: .relaxed)
        #expect(!otherClaimed)
        jobDone.wait()
        #expect(order.withLock { $0 } == ["caller", "job"])
    }

    @Test func theClaimantIsIsolatedToTheStore() async throws {
        // `performHereIfIdle` runs the body isolated to the store on the caller's thread: the
        // store's checks of its isolation pass there.
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let ranHere = await withCheckedContinuation { continuation in
            Thread {
                let done = Mutex(false)
                let here = store.performHereIfIdle { store in
                    _ = try? store.commit(StoreBatch())
                    done.withLock { $0 = true }
                }
                continuation.resume(returning: here && done.withLock { $0 })
            }.start()
        }
        #expect(ranHere)
        await store.close()
    }
}
