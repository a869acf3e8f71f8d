import Store
import Testing

@testable import Gateway

/// The group commit's decisions as values (``CommitRound``): what a commit takes, and what
/// follows when the database takes it, is busy, is full, and when a retry finally goes in
/// (docs/configuration.md "Durability": events published from memory, rows retried every second, the spill
/// file kept until the database has them).
@Suite struct CommitRoundTests {
    func event(_ id: String, device: String = "d1") -> JournalEvent {
        JournalEvent(id: id, device: device, trigger: "t", layer: "l", fence: "f", type: "enter",
                     fixTime: 1_800_000_000, emittedTime: 1_800_000_000.1, payload: #"{"id":"\#(id)"}"#)
    }

    func message(_ destination: OutboxDestination, _ id: String) -> OutboxMessage {
        OutboxMessage(destination: destination, eventID: id, topic: "geotriggers/events/t/d1", payload: Array(id.utf8), qos: 1)
    }

    func batch(_ ids: [String], device: String = "d1") -> StoreBatch {
        StoreBatch(stateChanges: [DeviceStateChange(device: device, state: Array(ids.joined().utf8))],
                   events: ids.map { event($0, device: device) },
                   outbox: ids.flatMap { [message(.local, $0), message(.remote, $0)] })
    }

    @Test func aCommitTakesTheRetriedRowsFirstWithoutWhatTheBrokerAlreadyHas() {
        let round = CommitRound(taken: batch(["new"], device: "d2"), retried: batch(["old1", "old2"]), retryCap: 10)
        let committed = round.batch(delivered: [.local: ["old1"]])
        #expect(committed.events.map(\.id) == ["old1", "old2", "new"])
        #expect(committed.stateChanges.map(\.device) == ["d1", "d2"])
        // old1 reached the local broker from memory: no local row for it; the remote one stays.
        #expect(committed.outbox.map { "\($0.destination.rawValue):\($0.eventID)" }
            == ["remote:old1", "local:old2", "remote:old2", "local:new", "remote:new"])
    }

    /// A spill file's batch, which may repeat journaled events, keeps saying so when it is
    /// retried with new items and when the database refuses it again, so that the store skips
    /// those events whenever it takes them; a round without one checks nothing.
    @Test func aSpillFilesBatchMayRepeatEventsThroughEveryRetry() {
        var spilled = batch(["old"])
        spilled.eventsMayRepeat = true
        let round = CommitRound(taken: batch(["new"], device: "d2"), retried: spilled, retryCap: 10)
        let committed = round.batch(delivered: [:])
        #expect(committed.eventsMayRepeat)
        let (_, retry) = round.refused(committed, warning: "full")
        #expect(retry.eventsMayRepeat)
        #expect(retry.events.map(\.id) == ["old", "new"])
        let plain = CommitRound(taken: batch(["new"]), retried: batch(["old"]), retryCap: 10)
        #expect(!plain.batch(delivered: [:]).eventsMayRepeat)
    }

    @Test func aCommitTakenDeliversItsRowsAndClearsTheWarning() {
        let taken = batch(["e1"])
        let round = CommitRound(taken: taken, retried: StoreBatch(), retryCap: 10)
        let rows = taken.outbox.enumerated().map { OutboxRow(sequence: Int64($0.offset + 1), source: .journal, message: $0.element) }
        let effects = round.committed(round.batch(delivered: [:]), receipt: StoreReceipt(transaction: 1, outbox: rows))
        #expect(effects == [
            .resolve("database", "the database accepts writes again"),
            .deliverFresh(.local, [rows[0]]), .deliverFresh(.remote, [rows[1]]),
        ])
    }

    /// The database is busy or fails (SQLITE_BUSY, an I/O error): the new events go out from
    /// memory and into the spill file, and every row is tried again.
    @Test func aRefusedCommitPublishesFromMemorySpillsAndRetriesEverything() {
        let taken = batch(["new"], device: "d2")
        let round = CommitRound(taken: taken, retried: batch(["old"]), retryCap: 10)
        let attempted = round.batch(delivered: [:])
        let (effects, retry) = round.refused(attempted, warning: "busy")
        #expect(effects == [
            .warn("database", "busy"),
            .publishVolatile(.local, [message(.local, "new")]), .publishVolatile(.remote, [message(.remote, "new")]),
            // Only the new rows: the retried ones are in the spill file already.
            .spill(StoreBatch(stateChanges: taken.stateChanges, events: taken.events, outbox: taken.outbox)),
        ])
        #expect(retry == StoreBatch(stateChanges: attempted.stateChanges, events: attempted.events, outbox: attempted.outbox))
    }

    /// A database that stays full for long: the retry keeps the newest `retryCap` events with
    /// their outbox messages, and every state change.
    @Test func aLongOutageKeepsTheNewestEventsForTheRetry() {
        let round = CommitRound(taken: batch(["e3", "e4"]), retried: batch(["e1", "e2"]), retryCap: 3)
        let (_, retry) = round.refused(round.batch(delivered: [:]), warning: "full")
        #expect(retry.events.map(\.id) == ["e2", "e3", "e4"])
        #expect(Set(retry.outbox.map(\.eventID)) == ["e2", "e3", "e4"])
        #expect(retry.stateChanges.count == 2)
    }

    /// The retry goes in at last: the spill file goes, the publishers learn which events from
    /// memory now have rows, and a cap reached on the way is said.
    @Test func aRetryTakenRemovesTheSpillAndTellsThePublishers() {
        let round = CommitRound(taken: StoreBatch(), retried: batch(["old"]), retryCap: 10)
        let effects = round.committed(round.batch(delivered: [:]),
                                      receipt: StoreReceipt(transaction: 2, dropped: OutboxCounts(local: 1, remote: 0)))
        #expect(effects == [
            .resolve("database", "the database accepts writes again"),
            .removeSpill, .resolve("spill-cap", "the database took what the spill file had dropped"),
            .committedFromMemory(.local, ["old"]), .committedFromMemory(.remote, ["old"]),
            .warn("outbox-cap", "the outbox reached outbox.cap: 1 local and 0 remote events were dropped (oldest first)"),
        ])
    }
}
