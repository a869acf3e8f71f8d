import Foundation
import Testing
import TestSupport
@testable import Store

/// Schema versions 3 to 5 (journal without per-event random indexes, then without the
/// emitted-time index, then with its query fields read from the payload) applied to a version-2
/// database that holds events, outbox rows reading their payload from the journal, and a
/// deleted last event.
@Suite struct JournalMigrationTests {
    static func payload(_ id: String) -> String {
        #"{"id":"\#(id)","trigger":"t","device":"d","type":"enter","fence":{"id":"f","layer":"l"}}"#
    }

    @Test func aVersionTwoDatabaseKeepsItsEventsOutboxAndSequences() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v2.db")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.migrate(Array(GatewayStore.migrations.prefix(2))) == [1, 2])
            for (n, id) in ["a", "b", "c"].enumerated() {
                try connection.run("""
                    INSERT INTO journal (id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload)
                    VALUES (?, 'd', 't', 'l', 'f', 'enter', ?, ?, ?)
                    """, [.text(id), .real(Double(100 + n)), .real(Double(200 + n)), .text(Self.payload(id))])
            }
            // Version 2 linked an outbox row to its journal row by event id, with an empty payload.
            try connection.run("INSERT INTO outbox_local (event_id, topic, payload, qos) VALUES ('b', 'x/b', x'', 1)")
            try connection.run("INSERT INTO outbox_remote (event_id, topic, payload, qos) VALUES ('a', 'y/a', x'', 1)")
            try connection.run("INSERT INTO outbox_local (event_id, topic, payload, qos) VALUES ('a-t', 'o/a', x'7b7d', 1)")
            try connection.run("DELETE FROM journal WHERE id = 'c'")
        }

        let store = try await GatewayStore(path: path)
        #expect(try await store.withConnection { try $0.userVersion() } == GatewayStore.schemaVersion)
        // The old journal's pages were given back (VACUUM after the rebuild).
        #expect(try await store.withConnection { try $0.scalarInt64("PRAGMA freelist_count") } == 0)
        let local = try await store.outbox(.local, limit: 10)
        #expect(local.map(\.message.topic) == ["x/b", "o/a"])
        #expect(local.map { String(decoding: $0.message.payload, as: UTF8.self) } == [Self.payload("b"), "{}"])
        #expect(try await store.outbox(.remote, limit: 10).map { String(decoding: $0.message.payload, as: UTF8.self) }
                == [Self.payload("a")])
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["a", "b"])
        // The query fields now come from the payload, which always held them.
        #expect(try await store.events(JournalQuery(device: "d", trigger: "t", fence: "f")).map(\.event) == ["a", "b"].enumerated().map {
            JournalEvent(id: $1, device: "d", trigger: "t", layer: "l", fence: "f", type: "enter", fixTime: Double(100 + $0),
                         emittedTime: Double(200 + $0), payload: Self.payload($1))
        })
        #expect(try await store.events(JournalQuery(device: "e")).isEmpty)
        let columns = try await store.withConnection { connection in
            try connection.query("SELECT name FROM pragma_table_info('journal') ORDER BY cid") { $0.string(0) }
        }
        #expect(columns == ["seq", "id", "fix_time", "emitted_time", "payload", "outboxes", "topic", "qos"])
        // Their outbox rows still wait there; no stream holds anything yet.
        #expect(await store.outboxCounts == OutboxCounts(local: 2, remote: 1))
        #expect(try await store.outboxStream(.local, limit: 10).isEmpty)
        #expect(await store.settledStream(.local) == 0)
        #expect(await store.settledStream(.remote) == 0)

        // Numbering goes on after the deleted last event (3), and duplicates are still found.
        _ = try await store.commit(StoreBatch(events: [testEvent("d", fix: 103)]))
        #expect(try await store.events(JournalQuery(afterSequence: 2)).map(\.sequence) == [4])
        var spilled = StoreBatch(events: [testEvent("a", fix: 100)])
        spilled.eventsMayRepeat = true
        let receipt = try await store.commit(spilled)
        #expect(receipt.duplicateEventIDs == ["a"])

        // Retention keeps the events an outbox still reads ("a", "b") and the newest ("e"), not "d".
        _ = try await store.commit(StoreBatch(events: [testEvent("e", fix: 104)]))
        #expect(try await store.deleteEvents(emittedBefore: 1e12) == 1)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["a", "b", "e"])
        let indexes = try await store.withConnection { connection in
            try connection.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'journal' ORDER BY name") {
                $0.string(0)
            }
        }
        #expect(indexes == ["journal_fix_ahead"])
        await store.close()
    }

    /// Version 5 alone (from 4) also compacts the file it rebuilt, keeps sequences going and
    /// the monitor states.
    @Test func aVersionFourDatabaseIsRebuiltAndCompacted() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("v4.db")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.migrate(Array(GatewayStore.migrations.prefix(4))) == [1, 2, 3, 4])
            for n in 0..<200 {
                try connection.run("""
                    INSERT INTO journal (id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload)
                    VALUES (?, 'd', 't', 'l', 'f', 'enter', ?, ?, ?)
                    """, [.text("e\(n)"), .real(Double(n)), .real(Double(n)), .text(Self.payload("e\(n)"))])
            }
            try connection.run("INSERT INTO device_state (device, state) VALUES ('d', x'0102')")
        }
        let store = try await GatewayStore(path: path)
        #expect(try await store.withConnection { try $0.userVersion() } == GatewayStore.schemaVersion)
        // The monitor states were carried over (their table was rebuilt too).
        #expect(try await store.deviceStates() == ["d": [1, 2]])
        _ = try await store.commit(StoreBatch(stateChanges: [DeviceStateChange(device: "d", state: [3])]))
        #expect(try await store.deviceState("d") == [3])
        #expect(try await store.withConnection { try $0.scalarInt64("PRAGMA freelist_count") } == 0)
        #expect(try await store.events(JournalQuery(device: "d")).count == 200)
        _ = try await store.commit(StoreBatch(events: [testEvent("next", fix: 1000)]))
        #expect(try await store.events(JournalQuery(afterSequence: 200)).map(\.sequence) == [201])
        await store.close()
    }
}
