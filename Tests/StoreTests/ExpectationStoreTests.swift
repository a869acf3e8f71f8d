import Testing
import TestSupport
import Store

/// The expectation rows (schema 6) through real SQLite files: a settling commits with its
/// result message, applies only to the version it decided and only once, and survives reopening.
@Suite struct ExpectationStoreTests {
    static func row(_ id: String, payload: String = "p1", by: Double = 1_800_000_000) -> ExpectationRow {
        ExpectationRow(id: id, payload: Array(payload.utf8), device: "vehicles/v17", layer: "fleet", fence: "depot", by: by,
                       received: by - 600)
    }

    static func settled(_ row: ExpectationRow, result: String, id: String, at time: Double) -> ExpectationRow {
        var row = row
        row.result = result
        row.resultID = id
        row.resultTime = time
        row.settled = time
        return row
    }

    @Test func aSettlingCommitsWithItsResultAndOnlyOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("gateway.db")
        let store = try await GatewayStore(path: path)
        var open = StoreBatch()
        open.expectations = [.open(Self.row("a")), .open(Self.row("b")), .open(Self.row("c"))]
        _ = try await store.commit(open)
        #expect(try await store.expectations().map(\.id) == ["a", "b", "c"])
        #expect(try await store.expectationResults(["a", "b", "c"]).isEmpty)

        var decide = StoreBatch()
        decide.expectations = [
            .settle(Self.settled(Self.row("a"), result: "arrived", id: "r-a", at: 1_799_999_000)),
            // A decision about a version that was replaced meanwhile does not settle the new one.
            .open(Self.row("b", payload: "p2")),
            .settle(Self.settled(Self.row("b"), result: "missed", id: "r-b", at: 1_800_000_000)),
            .remove("c", onlySettled: false),
        ]
        decide.outbox = [OutboxMessage(destination: .local, eventID: "r-a", topic: "p/expect/a/result", payload: Array("{}".utf8), qos: 1)]
        let receipt = try await store.commit(decide)
        #expect(receipt.outbox.count == 1)
        // A second decision for a settled one is ignored.
        var again = StoreBatch()
        again.expectations = [.settle(Self.settled(Self.row("a"), result: "missed", id: "r-a2", at: 1_800_000_000))]
        _ = try await store.commit(again)
        await store.close()

        let reopened = try await GatewayStore(path: path)
        let rows = try await reopened.expectations()
        #expect(rows.map(\.id) == ["a", "b"])
        #expect(rows[0].result == "arrived" && rows[0].resultID == "r-a" && rows[0].resultTime == 1_799_999_000)
        #expect(rows[1].result == nil && rows[1].payload == Array("p2".utf8))
        #expect(try await reopened.expectationResults(["a", "b"]) == ["a": "r-a"])
        #expect(try await reopened.outbox(.local, limit: 10).map(\.message.eventID) == ["r-a"])
        // Settled rows go once their retained copy is cleared, or by age; open ones stay.
        var cleared = StoreBatch()
        cleared.expectations = [.remove("b", onlySettled: true)]
        _ = try await reopened.commit(cleared)
        #expect(try await reopened.purgeSettledExpectations(before: 1_800_000_001) == 1)
        #expect(try await reopened.expectations().map(\.id) == ["b"])
        await reopened.close()
    }
}
