import Foundation
import Testing
import TestSupport
import Store

/// Device states take the journal's later events (``GatewayStore/foldJournal(batch:)``): only
/// those after the state was written, in order, once; retention keeps what is not folded.
@Suite struct StateFoldTests {
    /// A fold that appends a letter per event to the state's bytes: "e" enter, "x" exit, "d" dwell.
    static let fold: StateFold = { state, events in
        state + events.map { UInt8(ascii: $0.type == "exit" ? "x" : $0.type == "dwell" ? "d" : "e") }
    }

    static func state(_ store: GatewayStore, _ device: String) async throws -> String? {
        try await store.deviceState(device).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func statesTakeOnlyTheEventsAfterThem() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        // alice: state, then an enter after it in the same batch; bob: an exit before his state.
        var batch = StoreBatch()
        batch.append(testEvent("b1", device: "bob", type: "exit"))
        batch.stateChanges.append(DeviceStateChange(device: "bob", state: Array("B".utf8), eventsBefore: 1))
        batch.stateChanges.append(DeviceStateChange(device: "alice", state: Array("A".utf8), eventsBefore: 1))
        batch.append(testEvent("a1", device: "alice", type: "enter"))
        _ = try await store.commit(batch)
        // Later batches: events alone (their steps wrote no state), one of a forgotten device.
        _ = try await store.commit(StoreBatch(events: [testEvent("a2", device: "alice", type: "dwell"),
                                                      testEvent("b2", device: "bob", type: "enter"),
                                                      testEvent("c1", device: "carol", type: "enter")]))

        await store.setStateFold(Self.fold)
        // The store was opened at schema 11 from nothing: its mark is 0, so everything is after it.
        #expect(await store.unfoldedEvents == 5)
        let folded = try await store.foldJournal(batch: 2)
        // Rows written: alice in each of the two transactions of 2 events, bob in the second.
        #expect(folded.events == 5 && folded.devices == 3)
        #expect(try await Self.state(store, "alice") == "Aed")
        #expect(try await Self.state(store, "bob") == "Be")
        #expect(try await Self.state(store, "carol") == nil)
        #expect(await store.unfoldedEvents == 0)
        // Once folded, never again; a new state counts from the newest sequence before it.
        _ = try await store.commit(StoreBatch(stateChanges: [DeviceStateChange(device: "alice", state: Array("N".utf8))]))
        _ = try await store.commit(StoreBatch(events: [testEvent("a3", device: "alice", type: "exit")]))
        #expect(try await store.foldJournal().events == 1)
        #expect(try await Self.state(store, "alice") == "Nx")
        #expect(try await Self.state(store, "bob") == "Be")
        await store.close()
    }

    @Test func retentionKeepsWhatIsNotFolded() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gateway.db")
        var store = try await GatewayStore(path: path)
        await store.setStateFold(Self.fold)
        _ = try await store.commit(StoreBatch(stateChanges: [DeviceStateChange(device: "alice", state: Array("A".utf8))]))
        _ = try await store.commit(StoreBatch(events: (1...3).map { testEvent("a\($0)", device: "alice", type: "enter", fix: 100 + Double($0)) }))
        #expect(try await store.deleteEvents(emittedBefore: 1_000) == 0, "three events wait for the fold")
        #expect(try await store.journalCount() == 3)
        // A restart folds them before anything reads the states; then retention may go.
        await store.close()
        store = try await GatewayStore(path: path)
        await store.setStateFold(Self.fold)
        #expect(try await store.foldJournal().events == 3)
        #expect(try await Self.state(store, "alice") == "Aeee")
        #expect(try await store.deleteEvents(emittedBefore: 1_000) == 2, "the newest row always stays")
        await store.close()
    }
}
