import Synchronization
import Testing
@testable import Gateway

/// The group's shutdown with fake services: the reverse order, a shutdown past its deadline
/// left behind, the grace period and the cancellation of a `run()` that ignores the stop.
///
/// No upper bound on wall time: the suite runs beside the whole test run, which can keep the
/// cooperative pool busy for a minute. What proves a deadline is that the group goes on while
/// a shutdown is still stuck (released only at the test's end); a group that waited for it
/// would hang, and the time limit fails the test.
@Suite(.timeLimit(.minutes(5))) struct ServiceGroupTests {
    /// What the fakes did, in order, with the time since the recorder was made.
    final class Recorder: Sendable {
        private let start = MonotonicClock.now()
        private let entries = Mutex<[(String, Double)]>([])

        func note(_ entry: String) {
            let now = MonotonicClock.now() - start
            entries.withLock { $0.append((entry, now)) }
        }

        var lines: [String] { entries.withLock { $0.map(\.0) } }

        func time(of entry: String) -> Double? { entries.withLock { $0.first { $0.0 == entry }?.1 } }
    }

    enum Failure: Error { case broken }

    /// A wait that ignores cancellation, until ``release()``.
    final class Hold: Sendable {
        private let state = Mutex<(released: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if s.released { return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }

        func release() {
            state.withLock { s in
                s.released = true
                defer { s.waiter = nil }
                return s.waiter
            }?.resume()
        }
    }

    final class FakeService: Service {
        enum Run { case untilShutdown, lingering, ignoringTheStop, onAQueueNeverFinished, failing }
        enum Shutdown { case prompt, stuck }

        let name: String
        let recorder: Recorder
        let runs: Run
        let shuts: Shutdown
        private let stop = StopSignal()
        /// A `stuck` shutdown waits here, cancelled or not, until the test ends it.
        let hold = Hold()

        init(_ name: String, _ recorder: Recorder, runs: Run = .untilShutdown, shuts: Shutdown = .prompt) {
            self.name = name
            self.recorder = recorder
            self.runs = runs
            self.shuts = shuts
        }

        func run() async throws {
            switch runs {
            case .untilShutdown:
                await stop.wait()
            case .lingering:  // a last piece of work after the stop (an outbox's progress commit)
                await stop.wait()
                try? await Task.sleep(for: .milliseconds(300))
            case .ignoringTheStop:
                await StopSignal().wait()  // never fired: only a cancellation ends it
            case .onAQueueNeverFinished:
                let queue = BoundedQueue<Int>(capacity: 1)  // a mailbox no shutdown finishes
                while await queue.next() != nil {}
            case .failing:
                try await Task.sleep(for: .milliseconds(20))
                throw Failure.broken
            }
            recorder.note("\(name) returned" + (Task.isCancelled ? " cancelled" : ""))
        }

        func shutdown() async {
            recorder.note("\(name) shutdown")
            if shuts == .stuck { await hold.wait() }
            stop.fire()
        }
    }

    func group(_ services: [FakeService], deadline: Double = 10, grace: Double = 10) -> ServiceGroup {
        ServiceGroup(services: services, logger: Logger(label: "test"), signals: SignalStream(signals: []),
                     timing: ServiceGroup.Timing(shutdownDeadline: deadline, grace: grace))
    }

    @Test func servicesAreShutDownInTheReverseOrderAndTheGroupEndsWithoutWaitingOutTheGrace() async throws {
        let recorder = Recorder()
        let services = ["a", "b", "c"].map { FakeService($0, recorder) }
        let group = group(services, grace: 3600)
        group.stop()
        let started = MonotonicClock.now()
        try await group.run()
        #expect(recorder.lines.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "b shutdown", "a shutdown"])
        #expect(Set(recorder.lines.filter { $0.hasSuffix("returned") }) == ["a returned", "b returned", "c returned"])
        #expect(MonotonicClock.now() - started < 1800)
    }

    /// A service stops only once the ones started after it have ended, their `run()` too.
    @Test func theNextShutdownWaitsForTheEndOfTheRunBefore() async throws {
        let recorder = Recorder()
        let services = [FakeService("a", recorder), FakeService("b", recorder, runs: .lingering), FakeService("c", recorder)]
        // The order, not the deadline, is under test: a pool busy with the suite's other tests
        // may delay the lingering run's 0.3 s sleep past the standard 10 s deadline.
        let group = group(services, deadline: 3600)
        group.stop()
        try await group.run()
        let lines = recorder.lines
        #expect(lines.firstIndex(of: "c returned")! < lines.firstIndex(of: "b shutdown")!, "\(lines)")
        #expect(lines.firstIndex(of: "b returned")! < lines.firstIndex(of: "a shutdown")!, "\(lines)")
    }

    /// A run that outlives its shutdown holds the next shutdown only until the deadline.
    @Test func aRunThatIgnoresTheStopHoldsTheNextShutdownOnlyUntilTheDeadline() async throws {
        let recorder = Recorder()
        let services = [FakeService("a", recorder), FakeService("deaf", recorder, runs: .ignoringTheStop)]
        let group = group(services, deadline: 0.3, grace: 0.1)
        group.stop()
        try await group.run()
        let deaf = try #require(recorder.time(of: "deaf shutdown"))
        let a = try #require(recorder.time(of: "a shutdown"))
        #expect(a - deaf >= 0.29)
        #expect(recorder.lines.contains("deaf returned cancelled"))
    }

    @Test func aStuckShutdownHoldsTheOthersOnlyUntilItsDeadline() async throws {
        let recorder = Recorder()
        let stuck = FakeService("b", recorder, shuts: .stuck)
        let services = [FakeService("a", recorder), stuck, FakeService("c", recorder)]
        let group = group(services, deadline: 0.3, grace: 0.2)
        group.stop()
        try await group.run()
        #expect(recorder.lines.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "b shutdown", "a shutdown"])
        // The group waits for b from the end of c's shutdown (b's own task may start late on a
        // busy pool, so its line says little of when the wait began).
        let c = try #require(recorder.time(of: "c shutdown"))
        let a = try #require(recorder.time(of: "a shutdown"))
        #expect(a - c >= 0.29)
        // b's run() waited for its stop, which its stuck shutdown never gave: cancelled.
        #expect(recorder.lines.contains("b returned cancelled"))
        #expect(recorder.lines.contains("a returned") && recorder.lines.contains("c returned"))
        stuck.hold.release()
    }

    @Test func aRunThatIgnoresTheStopIsCancelledAfterTheGrace() async throws {
        let recorder = Recorder()
        let services = [FakeService("a", recorder), FakeService("deaf", recorder, runs: .ignoringTheStop),
                        FakeService("mailbox", recorder, runs: .onAQueueNeverFinished)]
        let group = group(services, deadline: 0.2, grace: 0.3)
        group.stop()
        let started = MonotonicClock.now()
        try await group.run()
        let took = MonotonicClock.now() - started
        #expect(recorder.lines.contains("deaf returned cancelled"))
        #expect(recorder.lines.contains("mailbox returned cancelled"))
        #expect(recorder.lines.contains("a returned"))
        #expect(took >= 0.29)
    }

    @Test func aCancelledCallerStillGetsTheOrderedShutdown() async throws {
        let recorder = Recorder()
        let stuck = FakeService("b", recorder, shuts: .stuck)
        let services = [FakeService("a", recorder), stuck, FakeService("c", recorder)]
        let group = group(services, deadline: 0.3, grace: 60)
        let running = Task { try await group.run() }
        running.cancel()
        try await running.value
        #expect(recorder.lines.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "b shutdown", "a shutdown"])
        // The deadline still ran its time: a's shutdown came after b's had its 0.3 s.
        let b = try #require(recorder.time(of: "b shutdown"))
        let a = try #require(recorder.time(of: "a shutdown"))
        #expect(a - b >= 0.29)
        stuck.hold.release()
    }

    @Test func aFailingRunShutsTheOthersDownAndIsRethrown() async {
        let recorder = Recorder()
        let services = [FakeService("a", recorder), FakeService("broken", recorder, runs: .failing), FakeService("c", recorder)]
        let group = group(services)
        await #expect(throws: Failure.self) { try await group.run() }
        #expect(recorder.lines.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "broken shutdown", "a shutdown"])
    }
}
