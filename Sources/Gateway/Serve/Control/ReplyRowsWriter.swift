import GeotriggerCore

/// A query reply that lists rows (`fences`, `near`, `inside`, `track`, `events`), written straight to bytes as it
/// grows and never past a byte budget (the `features` reply's, ``FeatureCollectionWriter/replyBudget``):
/// `{HEAD MEMBERS,"ROWS":[row,...],"truncated":bool}`.
///
/// Rows are appended one at a time until one would take the finished reply past the budget, so
/// a layer of a million fences costs the rows that fit, not a million values built and then cut.
struct ReplyRowsWriter {
    /// The most bytes the finished object may take, its ``appended`` bytes counted.
    let budget: Int
    /// The bytes the caller adds after it is finished (the query's correlation).
    let appended: Int
    private var bytes: [UInt8] = []
    /// The rows written so far.
    private(set) var count = 0

    /// The longest end ``finish(truncated:)`` writes.
    static let longestTail = #"],"truncated":false}"#.utf8.count

    /// `head`: the members before the rows, in order; `rows`: the rows' member name.
    init(head: JSONObject, rows: String, budget: Int = FeatureCollectionWriter.replyBudget, appended: Int = 0) {
        self.budget = budget
        self.appended = appended
        bytes.reserveCapacity(64 * 1024)
        JSONValue.object(head).write(to: &bytes)
        bytes.removeLast()  // `}`
        if !head.entries.isEmpty { bytes.append(UInt8(ascii: ",")) }
        JSONValue.string(rows).write(to: &bytes)
        bytes.append(contentsOf: ":[".utf8)
    }

    /// Appends `row`; returns false, writing nothing, when it would take the finished reply
    /// past the budget.
    mutating func append(_ row: JSONValue) -> Bool {
        append { row.write(to: &$0) }
    }

    /// Appends `json`, a JSON value's text as it is (an event's payload from the journal);
    /// returns false, writing nothing, when it would take the finished reply past the budget.
    mutating func append(json: String) -> Bool {
        append { $0.append(contentsOf: json.utf8) }
    }

    private mutating func append(writing write: (inout [UInt8]) -> Void) -> Bool {
        let start = bytes.count
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        write(&bytes)
        guard bytes.count + Self.longestTail + appended <= budget else {
            bytes.removeSubrange(start...)
            return false
        }
        count += 1
        return true
    }

    /// The finished reply; `truncated`: rows were left out (by a limit or the budget).
    consuming func finish(truncated: Bool) -> [UInt8] {
        bytes.append(contentsOf: (truncated ? #"],"truncated":true}"# : #"],"truncated":false}"#).utf8)
        return bytes
    }
}
