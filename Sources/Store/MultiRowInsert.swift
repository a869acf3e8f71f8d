/// One INSERT text for many rows at a time (`VALUES (...), (...), ...`).
///
/// SQLite does a statement's fixed work once per execution, not per row: opening the table's
/// and every index's cursors, halting and
/// resetting. For the journal's rows that is about a third of the instructions per row
/// (callgrind, SQLite 3.40), so a group commit inserts its rows in chunks of up to
/// ``maximumRows``. Chunks are powers of two, so a table has at most six statement texts to
/// prepare and cache, whatever the batch sizes.
struct MultiRowInsert {
    /// The most rows one statement inserts (32 rows of 5 columns stay far below SQLite's
    /// 32,766 parameters).
    static let maximumRows = 32

    /// Texts for 1, 2, 4, ..., ``maximumRows`` rows.
    private let texts: [String]

    /// `head` up to `VALUES`, the placeholder of one row (such as `(?, ?, ?)`), then `tail`
    /// (such as an `ON CONFLICT` clause).
    init(head: String, row: String, tail: String = "") {
        var texts: [String] = []
        var rows = 1
        while rows <= Self.maximumRows {
            texts.append(head + " VALUES " + Array(repeating: row, count: rows).joined(separator: ", ") + (tail.isEmpty ? "" : " " + tail))
            rows *= 2
        }
        self.texts = texts
    }

    /// The text inserting `rows` rows (a size from ``chunks(_:)``).
    func sql(rows: Int) -> String {
        precondition(rows > 0 && rows <= Self.maximumRows && rows & (rows - 1) == 0, "chunk of \(rows) rows")
        return texts[rows.trailingZeroBitCount]
    }

    /// `count` rows as consecutive chunks: ``maximumRows`` while that many are left, then the
    /// remainder's powers of two, largest first.
    static func chunks(_ count: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        while count - start >= maximumRows {
            ranges.append(start..<start + maximumRows)
            start += maximumRows
        }
        var size = maximumRows / 2
        while start < count {
            if count - start >= size {
                ranges.append(start..<start + size)
                start += size
            }
            size /= 2
        }
        return ranges
    }
}
