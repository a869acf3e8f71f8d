import Foundation
import Testing
import TestSupport
@testable import Store

/// The journal's `seq` is a plain rowid since schema 9 (no `AUTOINCREMENT` counter page per
/// commit): a sequence must still never be given twice, since outbox rows, the streams' settled
/// positions and `events` readers name events by it.
@Suite struct JournalSequenceTests {
    static let now = 1_800_000_000.0

    /// Events `ids`, emitted 40 days before ``now``, each with a message riding on its journal
    /// row to the local outbox.
    static func oldBatch(_ ids: [String]) -> StoreBatch {
        var batch = StoreBatch()
        for id in ids {
            let event = testEvent(id, fix: now - 40 * 86_400, emitted: now - 40 * 86_400)
            batch.append(event)
            batch.outbox.append(OutboxMessage(destination: .local, eventID: id, topic: "geotriggers/events/garden/\(id)",
                                              payload: Array(event.payload.utf8), qos: 1, payloadInJournal: true))
        }
        return batch
    }

    @Test func retentionKeepsTheNewestEventSoARestartNeverNumbersItsSequenceAgain() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("sequences.db")
        let store = try await GatewayStore(path: path)
        let receipt = try await store.commit(Self.oldBatch(["e1", "e2", "e3"]))
        let sequences = receipt.outbox.map(\.sequence)
        #expect(sequences == [1, 2, 3])
        // Delivered, and all past retentionDays: every event but the newest goes.
        _ = try await store.commit(StoreBatch(settled: [.local: sequences[2]]))
        #expect(try await store.applyRetention(days: 30, now: Self.now) == 2)
        #expect(try await store.events(JournalQuery()).map(\.sequence) == [3])
        // Nor does maxRows take it, even at 0.
        #expect(try await store.trimJournal(toRows: 0) == 0)
        #expect(try await store.events(JournalQuery()).map(\.sequence) == [3])
        // Numbering goes on in the same run...
        let next = try await store.commit(Self.oldBatch(["e4"]))
        #expect(next.outbox.map(\.sequence) == [4])
        _ = try await store.commit(StoreBatch(settled: [.local: 4]))
        #expect(try await store.applyRetention(days: 30, now: Self.now) == 1)
        #expect(try await store.events(JournalQuery()).map(\.sequence) == [4])
        await store.close()

        // ...and after a restart: a reader that saw sequence 4 never sees it again.
        let reopened = try await GatewayStore(path: path)
        #expect(await reopened.settledStream(.local) == 4)
        let after = try await reopened.commit(Self.oldBatch(["e5"]))
        #expect(after.outbox.map(\.sequence) == [5])
        #expect(after.outbox.map(\.source) == [.journal])
        #expect(try await reopened.outboxStream(.local, limit: 10).map(\.message.eventID) == ["e5"])
        #expect(try await reopened.events(JournalQuery(afterSequence: 4)).map(\.event.id) == ["e5"])
        // A spill file's duplicate (same id and fix time) is skipped and takes no number.
        var spilled = StoreBatch(events: [testEvent("e5", fix: Self.now - 40 * 86_400), testEvent("e6")])
        spilled.eventsMayRepeat = true
        let duplicate = try await reopened.commit(spilled)
        #expect(duplicate.duplicateEventIDs == ["e5"])
        #expect(try await reopened.events(JournalQuery(afterSequence: 5)).map(\.sequence) == [6])
        // No AUTOINCREMENT counter is written any more.
        #expect(try await reopened.withConnection {
            try $0.scalarInt64("SELECT count(*) FROM sqlite_sequence WHERE name = 'journal'")
        } == 0)
        await reopened.close()
    }

    /// A version-8 database (AUTOINCREMENT) whose retention had deleted every event: version 9
    /// rebuilds the journal without the counter and numbers on from where it stopped, so the
    /// stream's settled position does not swallow new events.
    @Test func anEmptiedVersionEightJournalNumbersOnFromItsCounter() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v8.db")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.migrate(Array(GatewayStore.migrations.prefix(8))) == Array(1...8))
            for n in 1...5 {
                try connection.run(
                    "INSERT INTO journal (id, fix_time, emitted_time, payload, outboxes, topic, qos) VALUES (?, ?, ?, '{}', 1, 't', 1)",
                    [.text("e\(n)"), .real(Double(n)), .real(Double(n))])
            }
            try connection.run("UPDATE outbox_stream SET settled = 5 WHERE destination = 'local'")
            try connection.run("DELETE FROM journal")
            #expect(try connection.scalarInt64("SELECT seq FROM sqlite_sequence WHERE name = 'journal'") == 5)
        }
        let store = try await GatewayStore(path: path)
        #expect(try await store.withConnection { try $0.userVersion() } == GatewayStore.schemaVersion)
        #expect(try await store.withConnection { try $0.scalarInt64("SELECT seq FROM journal_start") } == 5)
        #expect(try await store.withConnection { try $0.scalarInt64("PRAGMA freelist_count") } == 0)
        let receipt = try await store.commit(Self.oldBatch(["next"]))
        #expect(receipt.outbox.map(\.sequence) == [6])
        #expect(try await store.outboxStream(.local, limit: 10).map(\.message.eventID) == ["next"])
        let sql = try await store.withConnection { try $0.query("SELECT sql FROM sqlite_master WHERE name = 'journal'") { $0.string(0) } }
        #expect(sql.count == 1 && !sql[0].contains("AUTOINCREMENT"))
        await store.close()
    }
}
