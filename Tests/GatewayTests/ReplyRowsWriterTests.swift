import GeotriggerCore
import Testing

@testable import Gateway

/// The `fences`, `near` and `inside` replies as bytes (``ReplyRowsWriter``): the head members,
/// the rows, `truncated`, and the byte budget with the correlation counted in.
struct ReplyRowsWriterTests {
    static func read(_ bytes: [UInt8]) throws -> JSONObject {
        try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
    }

    @Test func headRowsAndTruncated() throws {
        var writer = ReplyRowsWriter(head: ["layer": .string("sites"), "count": .number(2)], rows: "fences")
        let added = [writer.append(.object(["id": .string("a")])), writer.append(.object(["id": .string("b")]))]
        #expect(added == [true, true] && writer.count == 2)
        #expect(String(decoding: writer.finish(truncated: false), as: UTF8.self)
            == #"{"layer":"sites","count":2,"fences":[{"id":"a"},{"id":"b"}],"truncated":false}"#)
        let empty = ReplyRowsWriter(head: JSONObject(), rows: "near")
        #expect(String(decoding: empty.finish(truncated: true), as: UTF8.self) == #"{"near":[],"truncated":true}"#)
    }

    /// 100,000 devices inside one fence (an `inside` reply's rows): the reply stops at the row
    /// that would pass the budget, with room for the correlation the service appends, and
    /// reads back as JSON saying `truncated`.
    @Test func theBudgetStopsTheRowThatWouldPassIt() throws {
        let budget = 900 * 1024
        for correlation in [0, 60_000] {
            var writer = ReplyRowsWriter(
                head: ["layer": .string("fleet"), "fence": .string("depot"), "count": .number(100_000)], rows: "inside",
                budget: budget, appended: correlation)
            var refused = 0
            for i in 0..<100_000 {
                let row: JSONValue = .object([
                    "device": .string("vehicle-\(i)"), "trigger": .string("fleet"), "since": .string("2026-12-06T12:00:00.000Z"),
                    "visit": .string("0b6a3c52-5f0e-4a8e-9d7c-\(i)"),
                ])
                guard writer.append(row) else {
                    refused = i
                    break
                }
            }
            let rows = writer.count
            let bytes = writer.finish(truncated: rows < 100_000)
            #expect(rows == refused && rows > 1000 && rows < 100_000, "\(rows) rows")
            #expect(bytes.count + correlation <= budget, "\(bytes.count) + \(correlation) bytes")
            #expect(bytes.count + correlation > budget - 200, "the next row (about 130 bytes) would have fitted: \(bytes.count)")
            let reply = try Self.read(bytes)
            #expect(reply["truncated"] == .bool(true) && reply["inside"]?.arrayValue?.count == rows && reply["count"] == .number(100_000))
        }
    }
}
