import Store
import Testing

@testable import Gateway

/// The committer's failure paths as values (``CommitterState`` with its ``CommitRound``): what
/// follows when the database is busy or full, what goes to the spill file and how a start
/// takes it back, when the database is tried again, and a stop during that wait
/// (docs/configuration.md "Durability": events published from memory, state and journal retried every second, the
/// spill file kept until the database has them). `EventCommitterFaultTests` runs the same
/// paths through the committer itself, over a fake store.
@Suite struct CommitterStateTests {
    static let busy = SQLiteError(code: 5, message: "database is locked", context: "BEGIN IMMEDIATE")
    static let full = SQLiteError(code: 13, message: "database or disk is full", context: "INSERT INTO journal")

    static func event(_ id: String) -> JournalEvent {
        JournalEvent(id: id, device: "d1", trigger: "t", layer: "l", fence: "f", type: "enter",
                     fixTime: 1_800_000_000, emittedTime: 1_800_000_000.1, payload: #"{"id":"\#(id)"}"#)
    }

    /// One monitor step: a state change, an event and its local outbox message.
    static func item(_ id: String) -> EventCommitter.Item {
        EventCommitter.Item(
            state: DeviceStateChange(device: "d1", state: Array(id.utf8)), events: [event(id)],
            outbox: [OutboxMessage(destination: .local, eventID: id, topic: "geotriggers/events/t/d1", payload: Array(id.utf8), qos: 1)])
    }

    /// A committer's state after one commit of `ids` began (at time 100) and the database
    /// refused it with `error`: the round's effects, and what the state says next.
    static func refusedRound(_ ids: [String], _ error: any Error, retryDelay: Double = 1)
        -> (state: CommitterState, effects: [CommitRound.Effect], next: CommitterState.Start) {
        var state = CommitterState(retryDelay: retryDelay)
        for id in ids { _ = state.add(item(id), deferred: false, now: 100) }
        let taken = state.takeRound(now: 100)
        let refused = taken.round.refused(taken.round.batch(delivered: [:]),
                                          warning: CommitRound.warning(for: error, database: "/var/lib/gw.db", spill: "/dev/shm/spill"))
        let (_, next) = state.roundEnded(retry: refused.retry, now: 100.01)
        return (state, refused.effects, next)
    }

    /// Busy (SQLITE_BUSY beyond the busy timeout): the warning says the database refused the
    /// commit and why, the events go out from memory, and the round's rows wait for the retry.
    @Test func aBusyDatabaseIsWarnedOfAndItsEventsGoOutFromMemory() {
        let (state, effects, _) = Self.refusedRound(["e1"], Self.busy)
        let warning = effects.first { if case .warn("database", _) = $0 { true } else { false } }
        #expect(warning == .warn("database", "the database /var/lib/gw.db refused a commit (SQLite error 5: database is locked: database is locked); "
            + "events are published from memory and kept in /dev/shm/spill, monitor state and journal are retried every second"))
        #expect(effects.contains(.publishVolatile(.local, Self.item("e1").outbox)), "\(effects)")
        #expect(state.retry.events.map(\.id) == ["e1"] && state.retry.stateChanges.count == 1)
    }

    /// Full (SQLITE_FULL, a full disk or `max_page_count`): the warning says so, without the
    /// statement; state, journal and outbox rows are kept for the retry.
    @Test func aFullDatabaseIsSaidToBeFullAndEverythingIsKeptForTheRetry() {
        let (state, effects, _) = Self.refusedRound(["e1", "e2"], Self.full)
        #expect(effects.first == .warn("database", "the database /var/lib/gw.db is full (SQLite error 13: database or disk is full); "
            + "events are published from memory and kept in /dev/shm/spill, monitor state and journal are retried every second"))
        #expect(state.retry.events.map(\.id) == ["e1", "e2"])
        #expect(state.retry.stateChanges.count == 2 && state.retry.outbox.map(\.eventID) == ["e1", "e2"])
        #expect(state.isIdle, "a flush does not wait for the retry: what it holds is spilled")
    }

    /// The refused rows go to the spill file once (the new ones: the retried ones are there
    /// already), and a start that finds it, and whose database refuses it again, retries it
    /// as a refused commit's: the first commit takes it first, after the retry delay.
    @Test func theRefusedRowsAreSpilledOnceAndAStartRetriesWhatItReadsBack() throws {
        let (state, effects, _) = Self.refusedRound(["e1"], Self.full)
        let spilled = effects.compactMap { if case .spill(let batch) = $0 { batch } else { nil } }
        #expect(spilled == [StoreBatch(stateChanges: state.retry.stateChanges, events: state.retry.events, outbox: state.retry.outbox)])
        // The retry is refused again: nothing spilled twice.
        var again = state
        _ = again.add(Self.item("e2"), deferred: false, now: 101)
        let taken = again.takeRound(now: 101)
        let second = taken.round.refused(taken.round.batch(delivered: [:]), warning: "full")
        #expect(second.effects.compactMap { if case .spill(let batch) = $0 { batch.events.map(\.id) } else { nil } } == [["e2"]])
        // And again with nothing new: nothing spilled at all (not an empty line per retry).
        _ = again.roundEnded(retry: second.retry, now: 101.01)
        let third = again.takeRound(now: 102).round
        #expect(!third.refused(third.batch(delivered: [:]), warning: "full").effects.contains { if case .spill = $0 { true } else { false } })

        // The next start reads the spill file back; its database refuses it again.
        var restarted = CommitterState(retryDelay: 1)
        #expect(restarted.resume(try #require(spilled.first)) == .retry(seconds: 1))
        _ = restarted.add(Self.item("e3"), deferred: false, now: 0)
        #expect(restarted.retryDue() == .now)
        let round = restarted.takeRound(now: 1).round
        #expect(round.batch(delivered: [:]).events.map(\.id) == ["e1", "e3"], "the spilled rows go first")
        // Taken at last: the spill file goes.
        #expect(round.committed(round.batch(delivered: [:]), receipt: StoreReceipt(transaction: 1)).contains(.removeSpill))
    }

    /// After a refusal the database is tried again after the retry delay, once per delay
    /// while it refuses: items handed over meanwhile, a burst's end and a flush start nothing
    /// before the retry timer fires; they go with the retry.
    @Test func aRefusedCommitIsRetriedAfterTheDelayAndNothingStartsBefore() {
        let refusal = Self.refusedRound(["e1"], Self.busy, retryDelay: 1)
        var state = refusal.state
        #expect(refusal.next == .retry(seconds: 1))
        #expect(state.add(Self.item("e2"), deferred: false, now: 100.2).start == .none)
        #expect(state.burstEnded(now: 100.3) == .none)
        #expect(state.retryDue() == .now)
        let round = state.takeRound(now: 101).round
        #expect(round.batch(delivered: [:]).events.map(\.id) == ["e1", "e2"])
        // Refused again: again a delay, not at once.
        let refused = round.refused(round.batch(delivered: [:]), warning: "busy")
        #expect(state.roundEnded(retry: refused.retry, now: 101.01).start == .retry(seconds: 1))
        #expect(state.add(Self.item("e3"), deferred: false, now: 101.5).start == .none)
        // Taken: commits start as before.
        #expect(state.retryDue() == .now)
        _ = state.takeRound(now: 102)
        _ = state.roundEnded(retry: StoreBatch(), now: 102.01)
        #expect(state.add(Self.item("e4"), deferred: false, now: 102.5).start == .now)
    }

    /// A stop while the retry waits: the flush finds the committer idle, and the retry timer,
    /// firing after the stop, starts nothing (what it holds was spilled when it was refused,
    /// so the next start commits it first).
    @Test func aStopDuringARetryStartsNothingMore() {
        let refusal = Self.refusedRound(["e1"], Self.full)
        var state = refusal.state
        guard case .retry = refusal.next else { Issue.record("no retry: \(refusal.next)"); return }
        #expect(state.isIdle)
        state.finish()
        #expect(state.retryDue() == .none)
        #expect(state.add(Self.item("e2"), deferred: false, now: 100.5).start == .none)
        #expect(refusal.effects.contains(.spill(StoreBatch(stateChanges: state.retry.stateChanges, events: state.retry.events, outbox: state.retry.outbox))))
    }
}
