import Foundation
import Store
import Testing
import TestSupport

@testable import Gateway

/// ``EventCommitter`` itself over its ``CommitStore`` seam, with a fake store that refuses
/// commits on command (busy, full) and a recording outbox: the database's failure paths
/// in-process, in about a second each, with no broker, no gateway process and no fault hook
/// (docs/configuration.md "Durability": events published from memory while the database refuses writes,
/// state and journal retried every second, the refused rows kept in the spill file until the
/// database has them; docs/architecture.md "Commit and outbox").
@Suite struct EventCommitterFaultTests {
    /// A committer over a fake store, with a spill file in a temporary directory.
    final class Rig: Sendable {
        let directory: TemporaryDirectory
        let store: FakeCommitStore
        let outbox = RecordingOutbox()
        let warnings = Warnings(logger: Logger(label: "committer-fault"))
        let spill: SpillFile
        let committer: EventCommitter

        init(_ answer: FakeCommitStore.Answer, retryDelay: Double = 0.2, retry: StoreBatch = StoreBatch(),
             directory: TemporaryDirectory? = nil) throws {
            self.directory = try directory ?? TemporaryDirectory(prefix: "committer-fault")
            store = FakeCommitStore(answer: answer)
            spill = SpillFile(path: self.directory.file("spill.jsonl"))
            let logger = Logger(label: "committer-fault")
            committer = EventCommitter(
                store: store, counters: GatewayCounters(), warnings: warnings, logger: logger, publishers: [.local: outbox],
                statePublisher: StatePublisher(client: nil, prefix: "geotriggers", logger: logger), spill: spill, retry: retry,
                retryDelay: retryDelay)
        }

        /// Hands over one step per id (device `d-ID` enters with event `ID`) as the network
        /// thread does, in one burst: one commit takes them all.
        func handOver(_ ids: String...) {
            for id in ids { _ = committer.enqueue(EventCommitterFaultTests.item(id), inBurst: true) }
            committer.commitBurst()
        }

        var databaseWarning: String? { warnings.texts.first { $0.hasPrefix("the database ") } }
    }

    static func item(_ id: String) -> EventCommitter.Item {
        EventCommitter.Item(
            state: DeviceStateChange(device: "d-\(id)", state: Array("inside-\(id)".utf8)),
            events: [JournalEvent(id: id, device: "d-\(id)", trigger: "t", layer: "l", fence: "f", type: "enter",
                                  fixTime: 1_800_000_000, emittedTime: 1_800_000_000.1, payload: #"{"id":"\#(id)"}"#)],
            outbox: [OutboxMessage(destination: .local, eventID: id, topic: "geotriggers/events/t/d-\(id)", payload: Array(id.utf8), qos: 1)])
    }

    /// The database is full: the status warns that it is full, the events go out from
    /// memory at once, and the committer goes on taking steps. Once it takes writes again the
    /// retry commits every state and journal event of the fault, the warning clears, the
    /// publisher learns which of its events from memory now have rows, and commits go on as
    /// before (once a gateway process test, through a fault hook the binary no longer has).
    @Test(.timeLimit(.minutes(5))) func aFullDatabaseWarnsPublishesFromMemoryAndTheRetryJournalsEverything() async throws {
        let rig = try Rig(.full)
        rig.handOver("e1", "e2")
        await rig.committer.flush()
        // At least one attempt: on a loaded box the 0.2 s retry may have come already (how
        // often it comes is aBusyDatabaseIsTriedAgainOncePerDelay...'s).
        #expect(rig.store.attempts.count >= 1)
        #expect(rig.databaseWarning?.contains("/fake.db is full (SQLite error 13") == true, "\(rig.warnings.texts)")
        #expect(rig.outbox.volatile == ["e1", "e2"] && rig.outbox.fresh.isEmpty)

        // Still taking steps: they wait for the retry, which is refused too.
        let refused = rig.store.attempts.count
        rig.handOver("e3")
        await rig.committer.flush()
        #expect(rig.store.attempts.count > refused && rig.store.committed.isEmpty)
        #expect(rig.outbox.volatile == ["e1", "e2", "e3"])

        rig.store.answer(.take)
        #expect(await poll(timeout: .seconds(10)) { rig.store.committed.count == 1 })
        await rig.store.drain()  // the round that commit began has ended
        let retried = try #require(rig.store.committed.first)
        #expect(retried.events.map(\.id) == ["e1", "e2", "e3"])
        #expect(retried.stateChanges.map(\.device) == ["d-e1", "d-e2", "d-e3"])
        #expect(rig.databaseWarning == nil, "\(rig.warnings.texts)")
        #expect(rig.outbox.committedFromMemoryCalls == [["e1", "e2", "e3"]])
        #expect(rig.outbox.fresh == ["e1", "e2", "e3"])

        rig.handOver("e4")
        await rig.committer.flush()
        #expect(rig.store.committed.map { $0.events.map(\.id) } == [["e1", "e2", "e3"], ["e4"]])
        #expect(rig.outbox.volatile == ["e1", "e2", "e3"], "nothing more from memory")
        await rig.committer.shutdown()
    }

    /// The database is busy (another connection held it beyond the busy timeout): the warning
    /// says it refused the commit and why, its events go out from memory, and the database is
    /// tried again once per retry delay while it refuses, never sooner: a step handed over
    /// meanwhile does not start a commit, it goes with the retry.
    @Test(.timeLimit(.minutes(5))) func aBusyDatabaseIsTriedAgainOncePerDelayAndNothingCommitsBefore() async throws {
        let delay = 0.3
        let rig = try Rig(.busy, retryDelay: delay)
        rig.handOver("e1")
        await rig.committer.flush()
        #expect(rig.databaseWarning?.contains("refused a commit (SQLite error 5: database is locked") == true, "\(rig.warnings.texts)")
        #expect(rig.outbox.volatile == ["e1"], "not published from memory")
        rig.handOver("e2")
        #expect(await poll(timeout: .seconds(60)) { rig.store.attempts.count >= 4 })
        await rig.store.drain()  // the round that commit began has ended
        let attempts = rig.store.attempts
        let gaps = zip(attempts.dropFirst(), attempts).map { $0.time - $1.time }
        // Never sooner than the delay: a step handed over during the wait started no commit.
        #expect(gaps.allSatisfy { $0 >= delay - 0.01 }, "retried sooner than every \(delay) s: \(gaps)")
        // Each retry takes the refused rows and what came meanwhile (e2, once handed over).
        #expect(attempts.allSatisfy { ["e1"] == $0.batch.events.map(\.id) || ["e1", "e2"] == $0.batch.events.map(\.id) })
        #expect(attempts.last?.batch.events.map(\.id) == ["e1", "e2"])

        rig.store.answer(.take)
        #expect(await poll(timeout: .seconds(10)) { rig.store.committed.count == 1 })
        await rig.store.drain()  // the round that commit began has ended
        #expect(rig.databaseWarning == nil, "\(rig.warnings.texts)")
        print("busy database: tried again after \(gaps.map { String(format: "%.3f", $0) }.joined(separator: ", ")) s")
        await rig.committer.shutdown()
    }

    /// What the database refuses goes to the spill file; a gateway killed during the fault
    /// leaves it, and the next start reads it back and commits it before anything else (here
    /// its database refuses it once more at the start: the committer retries it as a refused
    /// commit's rows), then removes the file.
    @Test(.timeLimit(.minutes(5))) func whatTheDatabaseRefusedIsSpilledAndTheNextStartCommitsItFirst() async throws {
        let rig = try Rig(.full)
        rig.handOver("e1", "e2")
        await rig.committer.flush()
        let read = try #require(try rig.spill.read(), "nothing spilled")
        #expect(read.unreadable == 0)
        #expect(read.batch.events.map(\.id) == ["e1", "e2"] && read.batch.stateChanges.map(\.device) == ["d-e1", "d-e2"])
        #expect(read.batch.outbox.map(\.eventID) == ["e1", "e2"])
        // A retry refused with nothing new adds nothing to the file.
        #expect(await poll(timeout: .seconds(10)) { rig.store.attempts.count >= 3 })
        await rig.store.drain()  // the round that commit began has ended
        let lines = try String(contentsOfFile: rig.spill.path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1, "\(lines.count) lines after \(rig.store.attempts.count) refusals")
        // Killed: nothing of this committer goes on.
        await rig.committer.shutdown()

        // The next start: its database is still full when it applies the file.
        let store = FakeCommitStore(answer: .full)
        let warnings = Warnings(logger: Logger(label: "restart"))
        let refused = await GatewayServer.applySpill(rig.spill, to: store, warnings: warnings, logger: Logger(label: "restart"))
        #expect(refused.events.map(\.id) == ["e1", "e2"])
        store.answer(.take)
        let restarted = try Rig(.take, retry: refused, directory: rig.directory)
        restarted.handOver("e3")
        #expect(await poll(timeout: .seconds(10)) { !restarted.store.committed.isEmpty })
        await restarted.store.drain()  // the round that commit began has ended
        #expect(restarted.store.committed.first?.events.map(\.id) == ["e1", "e2", "e3"], "the spilled rows go first")
        #expect(try restarted.spill.read() == nil, "the spill file outlived the commit that took it")
        await restarted.committer.shutdown()
    }

    /// The retry after a fault gives an outbox row only to the events the broker did not
    /// acknowledge from memory meanwhile (a kill after the fault then resends those, and only
    /// those); every event is journaled.
    @Test(.timeLimit(.minutes(5))) func theRetryQueuesNoRowForAnEventTheBrokerTookFromMemory() async throws {
        let rig = try Rig(.full)
        rig.handOver("e1", "e2")
        await rig.committer.flush()
        rig.outbox.acknowledgeFromMemory(["e1"])
        rig.store.answer(.take)
        #expect(await poll(timeout: .seconds(10)) { rig.store.committed.count == 1 })
        await rig.store.drain()  // the round that commit began has ended
        #expect(rig.store.committed.first?.events.map(\.id) == ["e1", "e2"])
        #expect(rig.store.committed.first?.outbox.map(\.eventID) == ["e2"])
        await rig.committer.shutdown()
    }

    /// A stop while the retry waits returns without waiting for it (what the retry holds was
    /// published from memory and spilled), and the database is not tried again after it.
    @Test(.timeLimit(.minutes(5))) func aStopDuringARetryReturnsAtOnceAndTriesNothingMore() async throws {
        let delay = 1.0
        let rig = try Rig(.full, retryDelay: delay)
        rig.handOver("e1")
        await rig.committer.flush()
        await rig.committer.shutdown()
        try await rig.committer.run()
        let attempts = rig.store.attempts.count
        // Looked at after three delays: no retry came after the stop. (That the stop does not
        // wait out the delay is CommitterStateTests.aStopDuringARetryStartsNothingMore's: timed
        // here, a loaded box would make it flaky.)
        try await Task.sleep(for: .seconds(delay * 3))
        #expect(rig.store.attempts.count == attempts, "tried again after the stop")
        #expect(try rig.spill.read()?.batch.events.map(\.id) == ["e1"])
    }
}
