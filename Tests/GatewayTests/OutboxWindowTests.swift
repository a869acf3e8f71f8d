import MQTT
import Store
import Testing

@testable import Gateway

/// `OutboxWindow` on its own: no broker, no store. Each test plays the threads' inputs and
/// checks the actions it returns.
@Suite struct OutboxWindowTests {
    /// A table row (`t<sequence>`) or a stream row (`j<sequence>`) of the local outbox.
    static func row(_ source: OutboxSource, _ sequence: Int64, qos: Int = 1) -> OutboxRow {
        let id = "\(source == .table ? "t" : "j")\(sequence)"
        return OutboxRow(sequence: sequence, source: source, message: OutboxMessage(
            destination: .local, eventID: id, topic: "t/\(id)", payload: Array(id.utf8), qos: qos,
            payloadInJournal: source == .journal))
    }

    static func rows(_ source: OutboxSource, _ sequences: ClosedRange<Int64>) -> [OutboxRow] {
        sequences.map { row(source, $0) }
    }

    /// An event kept in memory (`v<n>`).
    static func volatile(_ n: Int) -> OutboxMessage {
        OutboxMessage(destination: .local, eventID: "v\(n)", topic: "t/v\(n)", payload: Array("v\(n)".utf8), qos: 1)
    }

    static func success(_ id: Int32) -> MQTTAcknowledgement { MQTTAcknowledgement(messageId: id, reasonCode: 0) }
    static func refusal(_ id: Int32) -> MQTTAcknowledgement { MQTTAcknowledgement(messageId: id, reasonCode: 0x87) }

    /// The event ids of a publish action (nil for any other action).
    static func published(_ action: OutboxWindow.PumpAction) -> [String]? {
        if case .publish(let messages) = action { messages.map(\.eventID) } else { nil }
    }

    static func published(_ action: OutboxWindow.FreshAction) -> [String]? {
        if case .publish(let messages) = action { messages.map(\.eventID) } else { nil }
    }

    /// The delay of an `armTimer` action (nil for any other action).
    static func timer(_ action: OutboxWindow.ProgressAction) -> Double? {
        if case .armTimer(let delay) = action { delay } else { nil }
    }

    static func about(_ value: Double?, _ expected: Double) -> Bool {
        value.map { abs($0 - expected) < 1e-9 } ?? false
    }

    /// Message ids handed out in order, as libmosquitto numbers them.
    struct Ids {
        var next: Int32 = 1
        mutating func take(_ count: Int) -> [OutboxWindow.Publication] {
            defer { next += Int32(count) }
            return (0..<count).map { .inFlight(next + Int32($0)) }
        }
    }

    static func window(_ size: Int = 10, volatileCap: Int = 100) -> OutboxWindow {
        OutboxWindow(destination: .local, window: size, volatileCap: volatileCap, progressInterval: 0.1)
    }

    /// A window of 10 whose pump found the table empty and handed stream events 1-3 over (ids
    /// 1-3), the stream then read to its end.
    static func streamInFlight() -> OutboxWindow {
        var w = window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 10))
        _ = w.read(rows(.journal, 1...3))
        _ = w.published(ids.take(3))
        #expect(w.read([]) == .done)
        return w
    }

    /// Pumps with both sources empty in the database: both end exhausted.
    static func pumpEmpty(_ w: inout OutboxWindow) {
        let limit = w.window - w.inflightCount
        #expect(w.startPump() == .read(.table, after: 0, limit: limit))
        #expect(w.read([]) == .read(.journal, after: 0, limit: limit))
        #expect(w.read([]) == .done)
    }

    @Test func theTableGoesOutBeforeTheStreamEachInOrder() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        var action = w.read(Self.rows(.table, 4...6))
        #expect(Self.published(action) == ["t4", "t5", "t6"])
        action = w.published(ids.take(3))
        #expect(action == .read(.table, after: 6, limit: 7))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 7))
        action = w.read(Self.rows(.journal, 1...2))
        #expect(Self.published(action) == ["j1", "j2"])
        #expect(w.published(ids.take(2)) == .read(.journal, after: 2, limit: 5))
        #expect(w.read([]) == .done)
        #expect(w.inflight == [1: .table(4), 2: .table(5), 3: .table(6), 4: .journal(1), 5: .journal(2)])
        #expect(w.table == OutboxWindow.Cursor(handed: 6, exhausted: true))
        #expect(w.stream == OutboxWindow.Cursor(handed: 2, exhausted: true))
        #expect(!w.pumping)
    }

    @Test func noMoreThanTheWindowIsInFlight() {
        var w = Self.window(3)
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 3))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 3))
        #expect(Self.published(w.read(Self.rows(.journal, 1...3))) == ["j1", "j2", "j3"])
        // Full: the stream is not read on.
        #expect(w.published(ids.take(3)) == .done)
        #expect(w.inflightCount == 3)
        #expect(w.startPump() == .done)
        // An acknowledgement makes room for one.
        w.committed()
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        #expect(w.startPump() == .read(.table, after: 0, limit: 1))
        #expect(w.read([]) == .read(.journal, after: 3, limit: 1))
        #expect(Self.published(w.read([Self.row(.journal, 4)])) == ["j4"])
        #expect(w.published(ids.take(1)) == .done)
        #expect(w.inflightCount == 3)
    }

    @Test func freshRowsAreTakenOnlyWhenTheStreamWasReadToItsEnd() {
        var w = Self.window(4)
        var ids = Ids()
        // Not read yet: the rows are left to run(), which reads them back.
        w.freshRowsCommitted([Self.row(.journal, 1)])
        #expect(w.takeFresh() == .wakeRun)
        #expect(w.startPump() == .read(.table, after: 0, limit: 4))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 4))
        #expect(Self.published(w.read([Self.row(.journal, 1)])) == ["j1"])
        #expect(w.published(ids.take(1)) == .read(.journal, after: 1, limit: 3))
        #expect(w.read([]) == .done)
        #expect(w.fresh.isEmpty)  // the pump dropped them (read back instead)

        // Exhausted: fresh rows go out from memory; one handed over already is not sent again.
        w.freshRowsCommitted(Self.rows(.journal, 1...3))
        #expect(Self.published(w.takeFresh()) == ["j2", "j3"])
        #expect(w.freshPublished(ids.take(2)) == .done)
        #expect(w.stream == OutboxWindow.Cursor(handed: 3, exhausted: true))

        // While run() pumps, they wait for it (here: committed after it read the stream).
        w.committed()
        #expect(w.startPump() == .read(.table, after: 0, limit: 1))
        #expect(w.read([]) == .read(.journal, after: 3, limit: 1))
        w.freshRowsCommitted([Self.row(.journal, 4)])
        #expect(w.takeFresh() == .wakeRun)
        #expect(w.read([]) == .done)
        #expect(w.fresh.count == 1)

        // More than the window has room for: the rest is read back, by run().
        w.freshRowsCommitted(Self.rows(.journal, 5...6))
        #expect(Self.published(w.takeFresh()) == ["j4"])
        #expect(w.freshPublished(ids.take(1)) == .wakeRun)
        #expect(!w.stream.exhausted)
        #expect(w.inflightCount == 4)
    }

    @Test func freshTableRowsAreLeftToRun() {
        var w = Self.window(4)
        var ids = Ids()
        Self.pumpEmpty(&w)
        w.freshRowsCommitted([Self.row(.table, 7), Self.row(.journal, 1)])
        #expect(Self.published(w.takeFresh()) == ["j1"])
        #expect(w.freshPublished(ids.take(1)) == .wakeRun)
        // run()'s pump hands the table row over from memory (the table was read to its end).
        #expect(Self.published(w.startPump()) == ["t7"])
        #expect(w.published(ids.take(1)) == .done)
        #expect(w.table.handed == 7)
    }

    /// The network thread publishes fresh rows outside the machine's lock, between
    /// ``OutboxWindow/takeFresh()`` and ``OutboxWindow/freshPublished(_:)``: a pump asked for
    /// meanwhile does nothing (the stream's cursor and the room are not recorded yet, and a
    /// read of the stream would hand the same rows over again), and the end of the fresh
    /// handing asks for it again.
    @Test func aPumpWaitsForFreshRowsBeingPublished() {
        var w = Self.window(4)
        var ids = Ids()
        Self.pumpEmpty(&w)
        w.freshRowsCommitted(Self.rows(.journal, 1...2))
        #expect(Self.published(w.takeFresh()) == ["j1", "j2"])
        // run() took a `committed` signal meanwhile and pumps.
        w.committed()
        #expect(w.startPump() == .done)
        #expect(w.pumpDeferred && !w.pumping)
        #expect(w.freshPublished(ids.take(2)) == .wakeRun)
        #expect(!w.pumpDeferred)
        #expect(w.stream.handed == 2)
        // Asked again, it reads past the rows the network thread handed over, within the room left.
        #expect(w.startPump() == .read(.table, after: 0, limit: 2))
        #expect(w.read([]) == .read(.journal, after: 2, limit: 2))
        #expect(w.read([]) == .done)
        #expect(w.inflight == [1: .journal(1), 2: .journal(2)])
    }

    @Test func acknowledgementsSettleTheStreamUpToTheOldestInFlight() {
        var w = Self.window()
        var ids = Ids()
        w.start(settled: 0)
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 10))
        _ = w.read(Self.rows(.journal, 1...5))
        #expect(w.published(ids.take(5)) == .read(.journal, after: 5, limit: 5))
        #expect(w.read([]) == .done)

        // 2 and 3 acknowledged, 1 still in flight: nothing settled yet.
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        #expect(w.acknowledged(Self.success(3)) == .delivered)
        #expect(w.progressDue(now: 10) == .none)
        // 1 too: settled through 3 (4 is the oldest in flight).
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.progressDue(now: 20) == .commit(StoreBatch(settled: [.local: 3])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.settled == 3)
        // The rest, taken on arrival on the network thread: settled through what was handed over.
        #expect(w.takeAcknowledgementOnArrival(Self.success(4)) == true)
        #expect(w.takeAcknowledgementOnArrival(Self.success(5)) == true)
        #expect(w.inflightCount == 0)
        #expect(w.progressDue(now: 30) == .commit(StoreBatch(settled: [.local: 5])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.progressDue(now: 40) == .none)
    }

    @Test func tableAcknowledgementsAreCommittedAtMostEveryInterval() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        _ = w.read(Self.rows(.table, 1...3))
        _ = w.published(ids.take(3))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 7))
        #expect(w.read([]) == .done)
        // A table row's acknowledgement is not taken on arrival: run() removes the row.
        #expect(w.takeAcknowledgementOnArrival(Self.success(1)) == false)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.progressDue(now: 10) == .commit(StoreBatch(acknowledgements: [OutboxAcknowledgement(destination: .local, sequence: 1)])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        #expect(Self.about(Self.timer(w.progressDue(now: 10.04)), 0.06))
        #expect(w.progressDue(now: 10.2) == .commit(StoreBatch(acknowledgements: [OutboxAcknowledgement(destination: .local, sequence: 2)])))
        w.progressCommitted(outboxSequences: [])
        // The end of run() commits at once.
        #expect(w.acknowledged(Self.success(3)) == .delivered)
        #expect(w.progressDue(now: 10.25, final: true) == .commit(StoreBatch(acknowledgements: [OutboxAcknowledgement(destination: .local, sequence: 3)])))
    }

    /// The settling rides with a group commit (docs/configuration.md "Durability": no transaction of its own),
    /// at most every interval; while the group commit carries it the outbox's own progress
    /// commit waits, and a failed group commit gives it back.
    @Test func theSettlingRidesWithTheGroupCommitAtMostEveryInterval() {
        var w = Self.streamInFlight()
        w.start(settled: 0)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.progressForGroupCommit(now: 10) == StoreBatch(settled: [.local: 1]))
        // Carried: the publisher's own timer finds nothing to do but wait.
        #expect(Self.about(Self.timer(w.progressDue(now: 10.01)), 0.1))
        #expect(w.progressForGroupCommit(now: 10.01) == nil)
        w.progressCommitted(outboxSequences: [])
        #expect(w.settled == 1)
        // Within the interval the next group commit carries nothing.
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        #expect(w.progressForGroupCommit(now: 10.05) == nil)
        // Past it, it does; the commit fails: the work is kept for the next one.
        #expect(w.progressForGroupCommit(now: 10.2) == StoreBatch(settled: [.local: 2]))
        w.progressCommitFailed()
        #expect(w.settled == 1)
        #expect(w.progressDue(now: 10.4) == .commit(StoreBatch(settled: [.local: 2])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.settled == 2)
    }

    @Test func aRefusedStreamEventMovesToTheTableAtOnceAndIsNotSentAgain() {
        var w = Self.streamInFlight()
        #expect(w.progressDue(now: 10) == .none)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.progressDue(now: 10.01) == .commit(StoreBatch(settled: [.local: 1])))
        w.progressCommitted(outboxSequences: [])

        // A refusal is not taken on arrival, and it is committed at once, within the interval.
        #expect(w.takeAcknowledgementOnArrival(Self.refusal(2)) == false)
        #expect(w.acknowledged(Self.refusal(2)) == .refused(.journal(2)))
        #expect(w.progressDue(now: 10.02) == .readRefused(2))
        var moved = Self.row(.journal, 2).message
        moved.payloadInJournal = false
        // Settled past it (3 is the oldest in flight), in the same transaction as its move.
        #expect(w.refusedRead(Self.row(.journal, 2)) == .commit(StoreBatch(outbox: [moved], settled: [.local: 2])))
        w.progressCommitted(outboxSequences: [40])
        #expect(w.skip == [40])

        // Its table row is passed over when the table is read again.
        w.committed()
        #expect(w.startPump() == .read(.table, after: 0, limit: 9))
        #expect(w.read([Self.row(.table, 40)]) == .read(.table, after: 40, limit: 9))
        #expect(w.read([]) == .read(.journal, after: 3, limit: 9))
        #expect(w.read([]) == .done)
        #expect(w.inflight == [3: .journal(3)])
    }

    @Test func aRefusedEventThatCannotBeReadIsNeverSettledPast() {
        var w = Self.streamInFlight()
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.acknowledged(Self.refusal(2)) == .refused(.journal(2)))
        #expect(w.acknowledged(Self.success(3)) == .delivered)
        #expect(w.progressDue(now: 10) == .readRefused(2))
        #expect(w.refusedReadFailed() == .commit(StoreBatch(settled: [.local: 1])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.settleBefore == 2)
    }

    @Test func aFailedPublishBlocksHandingOverUntilAConnect() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        #expect(Self.published(w.read(Self.rows(.table, 1...3))) == ["t1", "t2", "t3"])
        // The second fails (QoS 0 without a connection): 1 is in flight, 2 and 3 wait.
        #expect(w.published([ids.take(1)[0], .failed, .failed]) == .done)
        #expect(w.blocked)
        #expect(w.table.handed == 1)
        // Nothing is read or taken fresh meanwhile.
        w.committed()
        #expect(w.startPump() == .done)
        w.freshRowsCommitted([Self.row(.journal, 1)])
        #expect(w.takeFresh() == .wakeRun)
        // A connect: read again from the first that failed.
        w.connected()
        #expect(!w.blocked)
        #expect(w.startPump() == .read(.table, after: 1, limit: 9))
        #expect(Self.published(w.read(Self.rows(.table, 2...3))) == ["t2", "t3"])
        #expect(w.published(ids.take(2)) == .read(.table, after: 3, limit: 7))
    }

    /// QoS 0 rows handed over while libmosquitto was still connecting are lost when that
    /// connection fails before writing them (no acknowledgement ever comes): the next connect
    /// hands them over again, from the first of them; QoS 1 rows stay with libmosquitto.
    @Test func qos0RowsInFlightAtAConnectAreHandedOverAgain() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        let rows = [Self.row(.table, 1, qos: 0), Self.row(.table, 2), Self.row(.table, 3, qos: 0)]
        #expect(Self.published(w.read(rows)) == ["t1", "t2", "t3"])
        _ = w.published(ids.take(3))
        #expect(w.inflightCount == 3)
        // t3 was written (its acknowledgement came); t1 was not.
        #expect(w.acknowledged(Self.success(3)) == .delivered)
        #expect(w.read([]) == .read(.journal, after: 0, limit: 8))
        #expect(w.read([]) == .done)
        w.connected()
        #expect(w.inflightCount == 1)  // t2, QoS 1: libmosquitto sends it again itself
        #expect(w.table.handed == 0)
        #expect(w.startPump() == .read(.table, after: 0, limit: 9))
        #expect(Self.published(w.read([Self.row(.table, 1, qos: 0)])) == ["t1"])
        _ = w.published(ids.take(1))
        #expect(w.inflightCount == 2)
        // The stale acknowledgement of the lost first handing changes nothing.
        #expect(w.acknowledged(Self.success(1)) == .unknown)
    }

    @Test func aFailedProgressCommitKeepsItsWork() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        _ = w.read(Self.rows(.table, 1...2))
        _ = w.published(ids.take(2))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 8))
        _ = w.read(Self.rows(.journal, 1...1))
        _ = w.published(ids.take(1))
        #expect(w.read([]) == .done)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.acknowledged(Self.success(3)) == .delivered)
        let first = StoreBatch(acknowledgements: [OutboxAcknowledgement(destination: .local, sequence: 1)], settled: [.local: 1])
        #expect(w.progressDue(now: 10) == .commit(first))
        // An acknowledgement arrives while it commits; the commit fails.
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        w.progressCommitFailed()
        #expect(w.settled == 0)
        // Not before the interval; then all of it again, and the new one.
        #expect(Self.about(Self.timer(w.progressDue(now: 10.05)), 0.05))
        #expect(w.progressDue(now: 10.2) == .commit(StoreBatch(
            acknowledgements: [OutboxAcknowledgement(destination: .local, sequence: 1), OutboxAcknowledgement(destination: .local, sequence: 2)],
            settled: [.local: 1])))
        w.progressCommitted(outboxSequences: [])
        #expect(w.settled == 1)
        #expect(w.work.isEmpty)
    }

    /// Events published from memory and acknowledged are remembered (the committer leaves them
    /// out of the outbox rows it writes once the database takes the events again); committed
    /// ones still waiting in memory are no longer published from there.
    @Test func eventsTheDatabaseTakesAgainLeaveMemory() {
        var w = Self.window(2, volatileCap: 10)
        var ids = Ids()
        Self.pumpEmpty(&w)
        #expect(w.keepVolatile((1...4).map(Self.volatile)) == 0)
        w.committed()
        #expect(Self.published(w.startPump()) == ["v1", "v2"])
        #expect(w.published(ids.take(2)) == .done)  // the window is full
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.acknowledged(Self.refusal(2)) == .refused(.volatile("v2")))
        #expect(w.deliveredFromMemory == ["v1"])
        // The database takes v1-v4: v3 and v4, still in memory, leave it.
        w.committedFromMemory(["v1", "v2", "v3", "v4"])
        #expect(w.volatile.isEmpty && w.deliveredFromMemory.isEmpty)
    }

    @Test func eventsKeptInMemoryGoFirst() {
        var w = Self.window(3, volatileCap: 4)
        var ids = Ids()
        Self.pumpEmpty(&w)
        w.freshRowsCommitted([Self.row(.journal, 1)])
        #expect(Self.published(w.takeFresh()) == ["j1"])
        #expect(w.freshPublished(ids.take(1)) == .done)
        #expect(w.keepVolatile((1...5).map(Self.volatile)) == 1)  // past the cap: the oldest goes
        // While they wait, acknowledgements and fresh rows are left to run().
        #expect(w.takeAcknowledgementOnArrival(Self.success(1)) == false)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        w.freshRowsCommitted([Self.row(.journal, 2)])
        #expect(w.takeFresh() == .wakeRun)
        // They go first, within the window, then the fresh row once there is room.
        w.committed()
        #expect(Self.published(w.startPump()) == ["v2", "v3", "v4"])
        #expect(w.published(ids.take(3)) == .done)
        #expect(w.fresh.isEmpty)  // not exhausted any more: read back
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        #expect(Self.published(w.startPump()) == ["v5"])
        // One fails: it stays first in memory, and what follows is still read.
        #expect(w.published([.failed]) == .read(.table, after: 0, limit: 1))
        #expect(w.volatile.map(\.eventID) == ["v5"])
        #expect(w.read([]) == .read(.journal, after: 1, limit: 1))
        #expect(Self.published(w.read([Self.row(.journal, 2)])) == ["j2"])
        #expect(w.published(ids.take(1)) == .done)
    }

    @Test func streamAcknowledgementsAreTakenOnArrivalOnlyWhenNothingWaitsForRoom() {
        var w = Self.window(2)
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 2))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 2))
        _ = w.read(Self.rows(.journal, 1...2))
        // The window is full: the stream may hold more, so run() must see the room.
        #expect(w.published(ids.take(2)) == .done)
        #expect(!w.stream.exhausted)
        #expect(w.takeAcknowledgementOnArrival(Self.success(1)) == false)
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.startPump() == .read(.journal, after: 2, limit: 1))
        #expect(w.read([]) == .done)
        #expect(w.takeAcknowledgementOnArrival(Self.success(2)) == true)
        #expect(w.inflightCount == 0)
        #expect(w.takeAcknowledgementOnArrival(Self.success(2)) == false)  // once
    }
    /// An event libmosquitto refuses for good (too large for the broker) is parked: the
    /// events after it go out at once, a table row is queued for removal, and the stream
    /// settles past it at the next progress commit. (A failure would block them instead.)
    @Test func anUndeliverableEventIsParkedAndTheNextGoOut() {
        var w = Self.window()
        var ids = Ids()
        #expect(w.startPump() == .read(.table, after: 0, limit: 10))
        #expect(Self.published(w.read([Self.row(.table, 1)])) == ["t1"])
        #expect(w.published([.undeliverable(reason: "too large")]) == .read(.table, after: 1, limit: 10))
        #expect(w.read([]) == .read(.journal, after: 0, limit: 10))
        #expect(Self.published(w.read(Self.rows(.journal, 1...3))) == ["j1", "j2", "j3"])
        let first = ids.take(1)[0]
        #expect(w.published([first, .undeliverable(reason: "too large"), ids.take(1)[0]]) == .read(.journal, after: 3, limit: 8))
        #expect(!w.blocked)
        #expect(w.takeParked().map(\.message.eventID) == ["t1", "j2"])
        #expect(w.takeParked().isEmpty)
        #expect(w.read([]) == .done)
        // Fresh rows are still taken on the network thread: nothing waits before them.
        w.freshRowsCommitted([Self.row(.journal, 4)])
        #expect(Self.published(w.takeFresh()) == ["j4"])
        #expect(w.freshPublished([.undeliverable(reason: "too large")]) == .done)
        #expect(w.takeParked().map(\.message.eventID) == ["j4"])
        // Both in flight delivered: the stream settles through j4, and t1 leaves the table.
        #expect(w.acknowledged(Self.success(1)) == .delivered)
        #expect(w.acknowledged(Self.success(2)) == .delivered)
        var expected = StoreBatch(settled: [.local: 4])
        expected.acknowledge(.local, sequence: 1)
        #expect(w.progressDue(now: 10) == .commit(expected))
    }
}
