import Foundation
import Testing
import TestSupport
import Store

/// A journal event for tests; the payload is a small JSON object naming it.
func testEvent(_ id: String, device: String = "workers/alice", trigger: String = "garden", layer: String = "sections",
               fence: String = "desert", type: String = "enter", fix: Double = 1_800_000_000,
               emitted: Double? = nil) -> JournalEvent {
    JournalEvent(id: id, device: device, trigger: trigger, layer: layer, fence: fence, type: type,
                 fixTime: fix, emittedTime: emitted ?? fix + 0.1,
                 payload: #"{"id":"\#(id)","trigger":"\#(trigger)","device":"\#(device)","type":"\#(type)","fence":{"id":"\#(fence)","layer":"\#(layer)"}}"#)
}

func testMessage(_ destination: OutboxDestination, _ eventID: String) -> OutboxMessage {
    OutboxMessage(destination: destination, eventID: eventID, topic: "geotriggers/events/garden/\(eventID)",
                  payload: Array("{\"id\":\"\(eventID)\"}".utf8), qos: 1)
}

@Suite struct GatewayStoreTests {
    @Test func createsTheSchemaAndReopens() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gateway.db")
        let store = try await GatewayStore(path: path)
        #expect(try await store.withConnection { try $0.userVersion() } == GatewayStore.schemaVersion)
        var batch = StoreBatch()
        batch.upsertState(device: "a", state: [1])
        batch.append(testEvent("e1"))
        _ = try await store.commit(batch)
        await store.close()
        await #expect(throws: StoreError.closed(path: path)) { try await store.commit(StoreBatch()) }

        let reopened = try await GatewayStore(path: path)
        #expect(try await reopened.deviceStates() == ["a": [1]])
        #expect(try await reopened.journalCount() == 1)
        await reopened.close()

        let reader = try await GatewayStore(path: path, options: .init(readOnly: true))
        #expect(try await reader.events(JournalQuery()).map(\.event.id) == ["e1"])
        await #expect(throws: StoreError.readOnly(path: path)) { try await reader.commit(StoreBatch()) }
        await reader.close()
        await #expect(throws: SQLiteError.self) {
            try await GatewayStore(path: directory.file("absent.db"), options: .init(readOnly: true))
        }
    }

    /// The running clock and the devices' last reports survive a reopen; a save with devices
    /// replaces the saved ones.
    @Test func runningClockRoundTrips() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gateway.db")
        var store = try await GatewayStore(path: path)
        let empty = try await store.runningClock()
        #expect(empty.seconds == 0 && empty.lastReports.isEmpty)
        try await store.saveRunningClock(seconds: 120.5, lastReports: ["a": 100, "b/c": 7.25])
        try await store.saveRunningClock(seconds: 180)
        await store.close()
        store = try await GatewayStore(path: path)
        let saved = try await store.runningClock()
        #expect(saved.seconds == 180)
        #expect(saved.lastReports == ["a": 100, "b/c": 7.25])
        try await store.saveRunningClock(seconds: 240, lastReports: ["b/c": 200])
        #expect(try await store.runningClock().lastReports == ["b/c": 200])
        await store.close()
    }

    @Test func monitorStateRoundTrips() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("state.db")
        let store = try await GatewayStore(path: path)
        var first = StoreBatch()
        first.upsertState(device: "owntracks/alice/phone", state: [1, 2, 3])
        first.upsertState(device: "empty", state: [])
        first.upsertState(device: "gone", state: [9])
        _ = try await store.commit(first)
        var second = StoreBatch()
        second.upsertState(device: "owntracks/alice/phone", state: Array(repeating: 0xAB, count: 70_000))
        second.deleteState(device: "gone")
        _ = try await store.commit(second)
        await store.close()

        let reopened = try await GatewayStore(path: path)
        let states = try await reopened.deviceStates()
        #expect(states == ["owntracks/alice/phone": Array(repeating: 0xAB, count: 70_000), "empty": []])
        #expect(try await reopened.deviceState("gone") == nil)
        #expect(try await reopened.deviceState("empty") == [])
        await reopened.close()
    }

    @Test func journalQueriesFilterInCommitOrder() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("journal.db"))
        let events = [
            testEvent("1", device: "a", trigger: "garden", fence: "desert", fix: 100),
            testEvent("2", device: "b", trigger: "garden", fence: "roses", fix: 300),
            testEvent("3", device: "a", trigger: "depot", fence: "gate", type: "exit", fix: 200),
            testEvent("4", device: "a", trigger: "garden", fence: "roses", type: "dwell", fix: 400),
            testEvent("5", device: "c", trigger: "garden", fence: "desert", fix: 500),
        ]
        _ = try await store.commit(StoreBatch(events: Array(events[0..<2])))
        _ = try await store.commit(StoreBatch(events: Array(events[2...])))
        func ids(_ query: JournalQuery) async throws -> [String] {
            try await store.events(query).map(\.event.id)
        }
        #expect(try await ids(JournalQuery()) == ["1", "2", "3", "4", "5"])
        #expect(try await ids(JournalQuery(since: 250)) == ["2", "4", "5"])
        #expect(try await ids(JournalQuery(device: "a")) == ["1", "3", "4"])
        #expect(try await ids(JournalQuery(trigger: "garden")) == ["1", "2", "4", "5"])
        #expect(try await ids(JournalQuery(fence: "roses")) == ["2", "4"])
        #expect(try await ids(JournalQuery(since: 150, device: "a", trigger: "garden")) == ["4"])
        #expect(try await ids(JournalQuery(limit: 2)) == ["1", "2"])
        let all = try await store.events(JournalQuery())
        #expect(all.map(\.sequence) == all.map(\.sequence).sorted())
        #expect(try await ids(JournalQuery(afterSequence: all[2].sequence, limit: 1)) == ["4"])
        #expect(all.map(\.event) == events)  // every column and the payload exactly as stored
        await store.close()
    }

    @Test func eventPagesComeInFixTimeOrderFilteredAndPaged() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("pages.db")
        let store = try await GatewayStore(path: path)
        // Committed out of fix time order; an id with a quote and a control character.
        _ = try await store.commit(StoreBatch(events: [
            testEvent("late", device: "a", fix: 500), testEvent("first", device: "b", type: "exit", fix: 100),
            testEvent("mid", device: "we\\\"ird\\u0001", type: "offRoute", fix: 300),
        ]))
        _ = try await store.commit(StoreBatch(events: [testEvent("second", device: "a", type: "dwell", fix: 200)]))
        // A second connection, read-only, beside the writer: what the gateway's query reads from.
        let reader = try await GatewayStore(path: path, options: GatewayStore.Options(readOnly: true))
        func page(_ query: JournalQuery, offset: Int = 0, limit: Int = 10) async throws -> (ids: [String], more: Bool) {
            let page = try await reader.eventPage(query, offset: offset, limit: limit, maxSteps: 1_000_000)
            let ids = try page.payloads.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])["id"] as? String ?? "" }
            return (ids, page.more)
        }
        #expect(try await page(JournalQuery()) == (["first", "second", "mid", "late"], false))
        #expect(try await reader.eventPage(JournalQuery(since: 200), offset: 1, limit: 1, maxSteps: 1_000_000).count == 3)
        #expect(try await reader.eventPage(JournalQuery(), offset: 9, limit: 1, maxSteps: 1_000_000) == ([], false, 4))
        #expect(try await page(JournalQuery(since: 200, until: 500)) == (["second", "mid"], false))
        #expect(try await page(JournalQuery(types: ["exit", "offRoute"])) == (["first", "mid"], false))
        #expect(try await page(JournalQuery(devices: ["a"])) == (["second", "late"], false))
        #expect(try await page(JournalQuery(devices: ["we\"ird\u{1}"])) == (["mid"], false))
        #expect(try await page(JournalQuery(devices: [])) == ([], false))
        #expect(try await page(JournalQuery(), limit: 2) == (["first", "second"], true))
        #expect(try await page(JournalQuery(), offset: 2, limit: 2) == (["mid", "late"], false))
        // The payload comes back as it was stored.
        #expect(try await reader.eventPage(JournalQuery(since: 500), offset: 0, limit: 1, maxSteps: 1_000_000).payloads
                == [testEvent("late", device: "a", fix: 500).payload])
        await reader.close()
        await store.close()
    }

    @Test func anEventPageStopsPastItsStepBudget() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("budget.db"))
        _ = try await store.commit(StoreBatch(events: (0..<5000).map { testEvent("e\($0)", fix: 1000 + Double($0)) }))
        // Filtered by a device that none has: every row is looked at (about 15 instructions
        // each), and none returned.
        let narrow = JournalQuery(devices: ["nobody"])
        let error = await #expect(throws: SQLiteError.self) { try await store.eventPage(narrow, offset: 0, limit: 10, maxSteps: 10_000) }
        #expect(error?.isInterrupted == true)
        #expect(try await store.eventPage(narrow, offset: 0, limit: 10, maxSteps: 100_000_000).payloads.isEmpty)
        // The budget ends with the read: the writer's next commit is not interrupted.
        _ = try await store.commit(StoreBatch(events: [testEvent("after", fix: 9000)]))
        #expect(try await store.eventPage(JournalQuery(since: 9000), offset: 0, limit: 10, maxSteps: 10_000).payloads.count == 1)
        await store.close()
    }

    @Test func retentionDeletesEventsEmittedBeforeTheCutoff() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("retention.db"))
        let now = 1_800_000_000.0
        let day = 86_400.0
        _ = try await store.commit(StoreBatch(events: [
            testEvent("old", emitted: now - 40 * day), testEvent("older-than-30", emitted: now - 30 * day - 1),
            testEvent("recent", emitted: now - 29 * day), testEvent("now", emitted: now),
        ]))
        #expect(try await store.applyRetention(days: 30, now: now) == 2)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["recent", "now"])
        #expect(try await store.applyRetention(days: 30, now: now) == 0)
        await store.close()
    }

    @Test func retentionCutsAtTheFirstEventInCommitOrderEmittedAfterTheCutoff() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("retention-order.db"))
        let now = 1_800_000_000.0
        let day = 86_400.0
        // "late" was emitted before the cutoff but committed after "new" (out of commit order).
        _ = try await store.commit(StoreBatch(events: [
            testEvent("a", emitted: now - 40 * day), testEvent("b", emitted: now - 35 * day),
            testEvent("new", emitted: now - day), testEvent("late", emitted: now - 31 * day),
            testEvent("newer", emitted: now),
        ]))
        #expect(try await store.applyRetention(days: 30, now: now) == 2)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["new", "late", "newer"])
        // With every event past the cutoff, all go but the newest, which new sequences count on from.
        #expect(try await store.applyRetention(days: 30, now: now + 40 * day) == 2)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["newer"])
        #expect(try await store.applyRetention(days: 30, now: now + 40 * day) == 0)
        await store.close()
    }

    @Test func anEventsMessagesReadTheJournalWhichRetentionKeepsWhileTheyWait() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("shared-payload.db"))
        let now = 1_800_000_000.0
        let old = testEvent("old", emitted: now - 40 * 86_400)
        var shared = testMessage(.remote, "old")
        shared.payload = Array(old.payload.utf8)
        shared.payloadInJournal = true
        var retitled = shared  // another topic: a row of its own, reading the journal's payload
        retitled.destination = .local
        retitled.topic = "elsewhere/old"
        var transition = testMessage(.local, "old-t")  // its own payload, kept in the outbox row
        transition.payloadInJournal = true  // but no journal row "old-t": stored in full
        let receipt = try await store.commit(StoreBatch(events: [old], outbox: [shared, retitled, transition]))
        #expect(receipt.outbox.map(\.source) == [.journal, .table, .table])
        let stored = try await store.withConnection { c in
            try c.query("SELECT length(payload) FROM outbox_remote UNION ALL SELECT length(payload) FROM outbox_local") { $0.int(0) }
        }
        #expect(stored == [0, transition.payload.count])
        #expect(await store.outboxCounts == OutboxCounts(local: 2, remote: 1))
        // The remote message rides on the event's journal row: its stream.
        let remote = try await store.outboxStream(.remote, limit: 10)
        #expect(remote.map(\.source) == [.journal])
        #expect(remote.map(\.sequence) == [receipt.outbox[0].sequence])
        #expect(remote.map(\.message) == [shared])
        #expect(try await store.outbox(.remote, limit: 10).isEmpty)
        let local = try await store.outbox(.local, limit: 10)
        #expect(local.map(\.message.payload) == [shared.payload, transition.payload])
        #expect(local.map(\.message.topic) == ["elsewhere/old", transition.topic])
        #expect(try await store.outboxStream(.local, limit: 10).isEmpty)
        // Retention keeps the event while the remote stream or a local row still reads it.
        #expect(try await store.applyRetention(days: 30, now: now) == 0)
        _ = try await store.commit(StoreBatch(settled: [.remote: remote[0].sequence]))
        #expect(await store.outboxCounts == OutboxCounts(local: 2, remote: 0))
        #expect(try await store.applyRetention(days: 30, now: now) == 0)
        try await store.acknowledge(.local, sequences: [local[0].sequence])
        // Delivered: it goes once it is not the newest event (the newest always stays).
        #expect(try await store.applyRetention(days: 30, now: now) == 0)
        _ = try await store.commit(StoreBatch(events: [testEvent("new", emitted: now)]))
        #expect(try await store.applyRetention(days: 30, now: now) == 1)
        await store.close()
    }

    @Test func pastMaxRowsTheOldestDeliveredEventsGoAndUndeliveredOnesStay() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("max-rows.db"))
        var batch = StoreBatch()
        for n in 1...30 {
            let event = testEvent("e\(n)", fix: 1_800_000_000 + Double(n))
            batch.append(event)
            batch.outbox.append(OutboxMessage(destination: .local, eventID: event.id, topic: "geotriggers/events/garden/e\(n)",
                                              payload: Array(event.payload.utf8), qos: 1, payloadInJournal: true))
            if n == 5 {  // another topic: a row of the outbox table reading e5's journal payload
                batch.outbox.append(OutboxMessage(destination: .local, eventID: event.id, topic: "elsewhere/e5",
                                                  payload: Array(event.payload.utf8), qos: 1, payloadInJournal: true))
            }
        }
        let receipt = try await store.commit(batch)
        let stream = receipt.outbox.filter { $0.source == .journal }.map(\.sequence)
        #expect(stream.count == 30)
        // What a pass of retention removed, and what the journal holds after it (read first,
        // so that a failed expectation shows the values).
        func trim(toRows maxRows: Int) async throws -> (removed: Int, count: Int, ids: [String]) {
            let removed = try await store.trimJournal(toRows: maxRows, batch: 4)
            return (removed, try await store.journalCount(), try await store.events(JournalQuery()).map(\.event.id))
        }

        // Under the budget nothing goes, delivered or not.
        _ = try await store.commit(StoreBatch(settled: [.local: stream[11]]))  // e1...e12 delivered
        let under = try await trim(toRows: 30)
        #expect(under.removed == 0)
        #expect(under.count == 30)

        // Past it (maxRows 10: e1...e20 are past), only the delivered ones go, oldest first,
        // in steps of 4 rows: e13...e30 still wait for their broker and stay beyond the budget,
        // and so does e5, which an outbox row still reads.
        let past = try await trim(toRows: 10)
        #expect(past.removed == 11)
        #expect(past.count == 19)
        #expect(past.ids == ["e5"] + (13...30).map { "e\($0)" })

        // Delivered later: down to the budget, the newest 10 (and e5, still waiting).
        _ = try await store.commit(StoreBatch(settled: [.local: stream[29]]))
        let delivered = try await trim(toRows: 10)
        #expect(delivered.removed == 8)
        #expect(delivered.count == 11)
        #expect(delivered.ids == ["e5"] + (21...30).map { "e\($0)" })
        let row = try #require(try await store.outbox(.local, limit: 10).first)
        #expect(row.message.topic == "elsewhere/e5")
        try await store.acknowledge(.local, sequences: [row.sequence])
        let all = try await trim(toRows: 10)
        #expect(all.removed == 1)
        #expect(all.count == 10)
        #expect(all.ids == (21...30).map { "e\($0)" })
        #expect(try await store.trimJournal(toRows: 10) == 0)
        await store.close()
    }

    @Test func streamsSettleDropPastTheCapAndReopenWhereTheyWere() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("streams.db")
        let store = try await GatewayStore(path: path, options: .init(outboxCap: 5))
        func journaled(_ id: String, _ destinations: [OutboxDestination]) -> (JournalEvent, [OutboxMessage]) {
            let event = testEvent(id, fix: 1_800_000_000 + Double(id.dropFirst())!)
            return (event, destinations.map {
                OutboxMessage(destination: $0, eventID: id, topic: "geotriggers/events/garden/\(id)",
                              payload: Array(event.payload.utf8), qos: 1, payloadInJournal: true)
            })
        }
        var batch = StoreBatch()
        for (id, destinations) in [("e1", [OutboxDestination.local, .remote]), ("e2", [.local]), ("e3", [.local]), ("e4", [.local])] {
            let (event, messages) = journaled(id, destinations)
            batch.append(event)
            batch.outbox += messages
        }
        batch.outbox.append(batch.outbox[0])  // a second message for e1 to the same place: a row of its own
        let first = try await store.commit(batch)
        #expect(first.outbox.map(\.source) == [.journal, .journal, .journal, .journal, .journal, .table])
        #expect(await store.outboxCounts == OutboxCounts(local: 5, remote: 1))
        let stream = try await store.outboxStream(.local, limit: 10)
        #expect(stream.map(\.message.eventID) == ["e1", "e2", "e3", "e4"])
        #expect(try await store.outboxStream(.local, after: stream[1].sequence, limit: 10).map(\.message.eventID) == ["e3", "e4"])
        try await store.acknowledge(.local, sequences: [first.outbox[5].sequence])

        // Settled up to e2: e3 and e4 wait.
        _ = try await store.commit(StoreBatch(settled: [.local: stream[1].sequence]))
        #expect(await store.outboxCount(.local) == 2)
        #expect(try await store.outboxStream(.local, limit: 10).map(\.message.eventID) == ["e3", "e4"])

        // 2 + 5 = 7 > cap 5: the two oldest (e3, e4) are dropped and said so.
        var more = StoreBatch()
        for n in 5...9 {
            let (event, messages) = journaled("e\(n)", [.local])
            more.append(event)
            more.outbox += messages
        }
        let overflow = try await store.commit(more)
        #expect(overflow.dropped == OutboxCounts(local: 2, remote: 0))
        #expect(await store.statistics.dropped == OutboxCounts(local: 2, remote: 0))
        #expect(try await store.outboxStream(.local, limit: 10).map(\.message.eventID) == ["e5", "e6", "e7", "e8", "e9"])
        let settled = await store.settledStream(.local)
        #expect(settled == stream[3].sequence)
        await store.close()

        // Reopened: the same streams wait.
        let reopened = try await GatewayStore(path: path, options: .init(outboxCap: 5))
        #expect(await reopened.outboxCounts == OutboxCounts(local: 5, remote: 1))
        #expect(await reopened.settledStream(.local) == settled)
        #expect(try await reopened.outboxStream(.remote, limit: 10).map(\.message.eventID) == ["e1"])
        // Settling past the newest settles only what waits: a later event still waits.
        _ = try await reopened.commit(StoreBatch(settled: [.local: 1_000_000]))
        #expect(await reopened.outboxCount(.local) == 0)
        let (event, messages) = journaled("e10", [.local])
        _ = try await reopened.commit(StoreBatch(events: [event], outbox: messages))
        #expect(try await reopened.outboxStream(.local, limit: 10).map(\.message.eventID) == ["e10"])
        #expect(await reopened.outboxCount(.local) == 1)
        await reopened.close()
    }

    /// A new database gets 2 KiB pages (a commit writes its pages whole, docs/operations.md "Deploying on a Raspberry Pi");
    /// one made with SQLite's default 4 KiB keeps them, and its WAL thresholds count in its pages.
    @Test func aNewDatabaseHasSmallPagesAndAnOldOneKeepsItsOwn() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("new.db"))
        #expect(try await store.withConnection { try $0.scalarInt64("PRAGMA page_size") } == 2048)
        #expect(store.writerCheckpointPages == WALCheckpointer.writerCheckpointBytes / 2048)
        await store.close()
        let old = directory.file("old.db")
        _ = try SQLiteConnection(path: old, options: .init(pageSize: 4096))
        let reopened = try await GatewayStore(path: old)
        #expect(try await reopened.withConnection { try $0.scalarInt64("PRAGMA page_size") } == 4096)
        #expect(reopened.writerCheckpointPages == WALCheckpointer.writerCheckpointBytes / 4096)
        _ = try await reopened.commit(StoreBatch(events: [testEvent("e1")]))
        #expect(try await reopened.journalCount() == 1)
        await reopened.close()
    }

    /// A commit of a few pages leaves them in the WAL: a checkpoint (which writes every page it
    /// copies a second time) waits for `checkpointPages` frames or `checkpointAge` (docs/configuration.md
    /// "Durability"), so on an SD card a page that many commits rewrite is copied once.
    @Test func smallCommitsLeaveTheirPagesInTheWAL() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("few.db"))
        for i in 0..<20 { _ = try await store.commit(StoreBatch(events: [testEvent("e\(i)", emitted: Double(i))])) }
        #expect(store.checkpointsStarted == 0, "20 commits of one event each are far from 4 MiB of WAL")
        await store.close()
        // Past the age, the next commit starts one.
        let aged = try await GatewayStore(path: directory.file("aged.db"), options: .init(checkpointAge: 0))
        _ = try await aged.commit(StoreBatch(events: [testEvent("a", emitted: 1)]))
        #expect(aged.checkpointsStarted == 1)
        await aged.close()
    }

    @Test func theWALIsCheckpointedBesideTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("checkpoint.db")
        let store = try await GatewayStore(path: path, options: .init(checkpointPages: 8))
        func size(_ file: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0 }
        let before = size(path)
        let events = (0..<200).map { testEvent("e\($0)", emitted: Double($0)) }
        _ = try await store.commit(StoreBatch(events: events))
        // The writer's own checkpoint would wait for thousands of pages: only the checkpointer
        // copies these pages (more than its 8) into the database file.
        _ = await poll(timeout: .seconds(30)) { store.checkpointCount >= 1 && size(path) > before }
        #expect(store.checkpointCount >= 1)
        #expect(size(path) > before)
        #expect(try await store.journalCount() == 200)
        await store.close()
        // The checkpointer's connection closes first, so the writer's close (the last one)
        // checkpoints and removes the WAL.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    /// The writer checkpoints once the WAL reaches `writerCheckpointPages` (here 200), as a job
    /// of its own queued behind the commit that filled it (SQLite's automatic checkpoint, which
    /// would run inside that commit, is off), so it has run before any job queued later.
    @Test func aCommitThatFillsTheWALIsFollowedByTheWritersCheckpoint() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("writer.db"), options: .init(writerCheckpointPages: 200))
        let state = [UInt8](repeating: 7, count: 16_384)  // 16 KiB of overflow pages per row
        _ = try await store.commit(StoreBatch(stateChanges: (0..<8).map { DeviceStateChange(device: "d\($0)", state: state) }))
        _ = try await store.deviceStates()
        #expect(await store.statistics.writerCheckpoints == 0, "130-odd KiB of pages are below the threshold")
        _ = try await store.commit(StoreBatch(stateChanges: (0..<64).map { DeviceStateChange(device: "d\($0)", state: state) }))
        _ = try await store.deviceStates()
        #expect(await store.statistics.writerCheckpoints == 1)
        #expect(try await store.deviceStates().count == 64)
        await store.close()
    }

    @Test func largeBatchesKeepOrderSequencesAndTheLastStateOfEachDevice() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("large.db"))
        // 100 events (several multi-row statements) with one id repeated inside the batch (a
        // spill file's batch, which may repeat events: the repeat is skipped).
        var events = (0..<100).map { testEvent("e\($0)") }
        events.insert(testEvent("e7", type: "exit"), at: 50)
        // Messages alternating in runs between the two outboxes.
        let messages = (0..<90).map { testMessage($0 / 10 % 2 == 0 ? .local : .remote, "m\($0)") }
        var batch = StoreBatch(events: events, outbox: messages)
        batch.eventsMayRepeat = true
        batch.upsertState(device: "a", state: [1])
        batch.upsertState(device: "b", state: [2])
        batch.upsertState(device: "a", state: [3])
        batch.deleteState(device: "b")
        batch.deleteState(device: "c")
        batch.upsertState(device: "c", state: [4])
        for i in 0..<70 { batch.upsertState(device: "d\(i)", state: [UInt8(i)]) }
        let receipt = try await store.commit(batch)
        #expect(receipt.duplicateEventIDs == ["e7"])
        #expect(try await store.events(JournalQuery()).map(\.event.id) == (0..<100).map { "e\($0)" })
        let states = try await store.deviceStates()
        #expect(states["a"] == [3] && states["b"] == nil && states["c"] == [4] && states["d69"] == [69])
        #expect(states.count == 72)
        // Sequences are in batch order per outbox, and name the messages the outbox returns.
        #expect(receipt.outbox.count == 90)
        for destination in OutboxDestination.allCases {
            let expected = zip(messages, receipt.outbox.map(\.sequence)).filter { $0.0.destination == destination }
            let rows = try await store.outbox(destination, limit: 100)
            #expect(rows.map(\.sequence) == expected.map(\.1))
            #expect(rows.map(\.message.eventID) == expected.map(\.0.eventID))
        }
        // Acknowledging a range with a gap removes exactly those rows.
        let local = try await store.outbox(.local, limit: 100).map(\.sequence)
        let acknowledged = Array(local[0..<10]) + Array(local[12..<20])
        #expect(try await store.acknowledge(.local, sequences: acknowledged + [local[0]]) == 18)
        #expect(try await store.outbox(.local, limit: 100).map(\.sequence) == Array(local[10..<12]) + Array(local[20...]))
        await store.close()
    }

    @Test func outboxRowsNameTheirOwnJournalRowsWhenAChunkHoldsDuplicates() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("chunks.db"))
        _ = try await store.commit(StoreBatch(events: (0..<10).map { testEvent("old\($0)", fix: Double($0)) }))
        // 40 events (a spill file's, which may repeat events), every fourth a replay of a
        // journaled one, each with an outbox message reading its payload from the journal: the
        // duplicates are left out of the multi-row inserts.
        var batch = StoreBatch()
        batch.eventsMayRepeat = true
        for i in 0..<40 {
            let event = i % 4 == 0 ? testEvent("old\(i / 4)", type: "replayed", fix: Double(i / 4))
                                   : testEvent("new\(i)", type: "t\(i)", fix: Double(100 + i))
            batch.append(event)
            batch.enqueue(OutboxMessage(destination: .local, eventID: event.id, topic: "t/\(event.id)",
                                        payload: Array(event.payload.utf8), qos: 1, payloadInJournal: true))
        }
        let receipt = try await store.commit(batch)
        #expect(receipt.duplicateEventIDs == (0..<10).map { "old\($0)" })
        #expect(await store.statistics.events == 40)
        let journal = try await store.events(JournalQuery())
        #expect(journal.map(\.event.id) == (0..<10).map { "old\($0)" } + (0..<40).filter { $0 % 4 != 0 }.map { "new\($0)" })
        // Every message carries its own event's payload: a new event's rides on its journal
        // row, a duplicate's (whose journal row is the earlier version) gets a row with its copy.
        let isDuplicate = (0..<40).map { $0 % 4 == 0 }
        #expect(receipt.outbox.map(\.source) == isDuplicate.map { $0 ? .table : .journal })
        let rows = try await store.outbox(.local, limit: 100)
        let stream = try await store.outboxStream(.local, limit: 100)
        #expect(rows.map(\.sequence) == zip(receipt.outbox.map(\.sequence), isDuplicate).filter(\.1).map(\.0))
        #expect(stream.map(\.sequence) == zip(receipt.outbox.map(\.sequence), isDuplicate).filter { !$0.1 }.map(\.0))
        #expect(rows.map { String(decoding: $0.message.payload, as: UTF8.self) }
                == zip(batch.events, isDuplicate).filter(\.1).map(\.0.payload))
        #expect(stream.map { String(decoding: $0.message.payload, as: UTF8.self) }
                == zip(batch.events, isDuplicate).filter { !$0.1 }.map(\.0.payload))
        await store.close()
    }

    @Test func aRepeatedEventIdIsJournaledOnce() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("duplicates.db"))
        let first = try await store.commit(StoreBatch(events: [testEvent("same")]))
        #expect(first.duplicateEventIDs.isEmpty)
        // A spill file's event may be journaled already: it repeats its id and its fix time;
        // the first version stays. The same id at another fix time is another event.
        var spilled = StoreBatch(events: [testEvent("same", type: "exit"), testEvent("other"), testEvent("same", fix: 1_800_000_001)])
        spilled.eventsMayRepeat = true
        let again = try await store.commit(spilled)
        #expect(again.duplicateEventIDs == ["same"])
        #expect(try await store.journalCount() == 3)
        #expect(try await store.events(JournalQuery(limit: 1)).first?.event.type == "enter")
        #expect(await store.statistics.events == 3)
        await store.close()
    }

    @Test func outboxKeepsOrderRemovesOnAcknowledgementAndDropsPastTheCap() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("outbox.db")
        let store = try await GatewayStore(path: path, options: .init(outboxCap: 5))
        let queued = try await store.commit(StoreBatch(outbox: [
            testMessage(.local, "1"), testMessage(.remote, "1"), testMessage(.local, "2"), testMessage(.local, "3"),
        ]))
        #expect(queued.outbox.count == 4)
        #expect(await store.outboxCounts == OutboxCounts(local: 3, remote: 1))
        let firstTwo = try await store.outbox(.local, limit: 2)
        #expect(firstTwo.map(\.message.eventID) == ["1", "2"])
        #expect(firstTwo[0].message == testMessage(.local, "1"))
        #expect(try await store.outbox(.local, after: firstTwo[1].sequence, limit: 10).map(\.message.eventID) == ["3"])
        #expect(try await store.outbox(.remote, limit: 10).map(\.message.eventID) == ["1"])

        // Acknowledging removes only that message; an unknown sequence removes nothing.
        #expect(try await store.acknowledge(.local, sequences: [firstTwo[0].sequence, 999_999]) == 1)
        #expect(await store.outboxCount(.local) == 2)
        #expect(await store.outboxCount(.remote) == 1)

        // 2 + 5 = 7 > cap 5: the two oldest ("2", "3") are dropped, and said so.
        let overflow = try await store.commit(StoreBatch(outbox: (4...8).map { testMessage(.local, "\($0)") }))
        #expect(overflow.dropped == OutboxCounts(local: 2, remote: 0))
        #expect(await store.statistics.dropped == OutboxCounts(local: 2, remote: 0))
        #expect(try await store.outbox(.local, limit: 100).map(\.message.eventID) == ["4", "5", "6", "7", "8"])
        #expect(await store.outboxCount(.local) == 5)

        // Sequences are never reused, even once an outbox is empty.
        let all = try await store.outbox(.local, limit: 100).map(\.sequence)
        #expect(try await store.acknowledge(.local, sequences: all) == 5)
        let next = try await store.commit(StoreBatch(outbox: [testMessage(.local, "9")]))
        #expect(next.outbox[0].sequence > all.max()!)
        await store.close()

        let reopened = try await GatewayStore(path: path, options: .init(outboxCap: 5))
        #expect(await reopened.outboxCounts == OutboxCounts(local: 1, remote: 1))
        await reopened.close()
    }

    /// Each batch is one transaction of its own (the group commit is the gateway's committer):
    /// concurrent submitters are serialized on the store's queue.
    @Test func fiftyConcurrentSubmittersCommitOneTransactionEach() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("group.db"))
        let receipts = try await withThrowingTaskGroup(of: StoreReceipt.self) { group in
            for k in 0..<50 {
                group.addTask {
                    var batch = StoreBatch()
                    batch.upsertState(device: "d\(k)", state: Array("state \(k)".utf8))
                    for n in 0..<20 {
                        batch.append(testEvent("d\(k)-\(n)", device: "d\(k)"))
                        batch.enqueue(testMessage(.local, "d\(k)-\(n)"))
                    }
                    return try await store.commit(batch)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let statistics = await store.statistics
        #expect(receipts.count == 50)
        #expect(statistics.transactions == 50)
        #expect(Set(receipts.map(\.transaction)).count == 50)
        #expect(try await store.journalCount() == 1000)
        #expect(try await store.deviceStates().count == 50)
        #expect(await store.outboxCount(.local) == 1000)
        // Outbox sequences follow the commit order of the batches.
        let ordered = receipts.sorted { $0.outbox[0].sequence < $1.outbox[0].sequence }
        #expect(ordered.map(\.transaction) == ordered.map(\.transaction).sorted())
        await store.close()
    }

    /// The journal and outbox inserts keep no statement journal (`OR IGNORE`), so a disk that
    /// fills between two rows of one statement must still undo the whole batch.
    @Test func aDatabaseFillingInsideAMultiRowInsertUndoesTheWholeBatch() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("full-rows.db"))
        _ = try await store.commit(StoreBatch(events: [testEvent("before")]))
        _ = try await store.withConnection { connection in
            try connection.scalarInt64("PRAGMA max_page_count = \(try connection.scalarInt64("PRAGMA page_count") ?? 0)")
        }
        // Fifteen small events, then one too large for the file: one 16-row statement for the
        // journal, which fails at its last row.
        var events = (0..<15).map { testEvent("small\($0)", fix: 1_800_000_000 + Double($0)) }
        var big = testEvent("big", fix: 1_800_000_100)
        big.payload = String(repeating: "x", count: 256 * 1024)
        events.append(big)
        let batch = StoreBatch(stateChanges: [DeviceStateChange(device: "b", state: [2])], events: events,
                               outbox: events.map { testMessage(.local, $0.id) })
        let error = try await #require(throws: SQLiteError.self) { _ = try await store.commit(batch) }
        #expect(error.isFull)
        #expect(error.context.hasPrefix("INSERT OR IGNORE INTO journal"))
        #expect(try await store.deviceStates() == [:])
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["before"])
        #expect(try await store.outbox(.local, limit: 100).isEmpty)

        _ = try await store.withConnection { try $0.scalarInt64("PRAGMA max_page_count = 1000000") }
        let receipt = try await store.commit(batch)
        #expect(receipt.duplicateEventIDs.isEmpty)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["before"] + events.map(\.id))
        // Its payload is not JSON: the fields read from it are empty, and the query still works.
        #expect(try await store.events(JournalQuery()).last?.event.device == "")
        #expect(try await store.outbox(.local, limit: 100).map(\.message.eventID) == events.map(\.id))
        #expect(try await store.deviceStates() == ["b": [2]])
        await store.close()
    }

    @Test func aFullDatabaseFailsSubmittersClearlyAndRecovers() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("full.db"))
        _ = try await store.commit(StoreBatch(stateChanges: [DeviceStateChange(device: "a", state: [1])],
                                              events: [testEvent("before")]))
        // Cap the file at its current size: the next page it needs fails with SQLITE_FULL.
        let limit = try await store.withConnection { connection in
            let pages = try connection.scalarInt64("PRAGMA page_count") ?? 0
            return try connection.scalarInt64("PRAGMA max_page_count = \(pages)") ?? -1
        }
        #expect(limit > 0)
        let big = Array(repeating: UInt8(7), count: 256 * 1024)
        let results = await withTaskGroup(of: Result<StoreReceipt, any Error>.self) { group in
            for k in 0..<5 {
                group.addTask {
                    do {
                        return .success(try await store.commit(StoreBatch(
                            stateChanges: [DeviceStateChange(device: "big\(k)", state: big)],
                            events: [testEvent("caused-by-big\(k)")])))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for result in results {
            #expect(throws: SQLiteError.self) { try result.get() }
            if case .failure(let error as SQLiteError) = result {
                #expect(error.isFull)
                #expect(error.description.contains("database or disk is full"))
            }
        }
        let faulted = await store.statistics
        #expect(faulted.failedBatches == 5)
        #expect(faulted.lastError?.isFull == true)
        // Neither the states nor their events: each batch is atomic.
        #expect(try await store.deviceStates() == ["a": [1]])
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["before"])

        // The fault clears: the same kind of batch now commits.
        _ = try await store.withConnection { try $0.scalarInt64("PRAGMA max_page_count = 1000000") }
        let receipt = try await store.commit(StoreBatch(stateChanges: [DeviceStateChange(device: "big", state: big)],
                                                        events: [testEvent("after")]))
        #expect(receipt.transaction == faulted.transactions + 1)
        #expect(try await store.deviceState("big") == big)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["before", "after"])
        #expect(await store.statistics.lastError == nil)
        await store.close()
    }
}
