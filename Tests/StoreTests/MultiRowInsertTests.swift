import Testing
@testable import Store

/// The pieces of the group commit's multi-row writes that need no database.
@Suite struct MultiRowInsertTests {
    @Test func acknowledgedSequencesBecomeRanges() {
        #expect(GatewayStore.runs(of: []) == [])
        #expect(GatewayStore.runs(of: [7, 3, 4, 5, 9, 8, 12, 4]) == [3...5, 7...9, 12...12])
    }

    @Test func rowsSplitIntoPowerOfTwoChunks() {
        #expect(MultiRowInsert.chunks(0).isEmpty)
        #expect(MultiRowInsert.chunks(1) == [0..<1])
        #expect(MultiRowInsert.chunks(77) == [0..<32, 32..<64, 64..<72, 72..<76, 76..<77])
        let insert = MultiRowInsert(head: "INSERT INTO t (a, b)", row: "(?, ?)", tail: "ON CONFLICT DO NOTHING")
        #expect(insert.sql(rows: 2) == "INSERT INTO t (a, b) VALUES (?, ?), (?, ?) ON CONFLICT DO NOTHING")
    }
}
