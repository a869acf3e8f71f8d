/// The lines of a byte buffer, each without its line ending (LF, CRLF or a lone CR), with its
/// 1-based number, for the line-oriented track formats.
struct TextLines: IteratorProtocol {
    struct Line {
        /// 1-based line number.
        var number: Int
        /// The line's bytes, without the line ending.
        var range: Range<Int>
    }

    private let bytes: [UInt8]
    private var position: Int
    private var number = 0

    init(_ bytes: [UInt8], from start: Int = 0) {
        self.bytes = bytes
        self.position = start
    }

    mutating func next() -> Line? {
        guard position < bytes.count else { return nil }
        let start = position
        var end = start
        while end < bytes.count, bytes[end] != 0x0A, bytes[end] != 0x0D { end += 1 }
        position = end
        if position < bytes.count {
            if bytes[position] == 0x0D, position + 1 < bytes.count, bytes[position + 1] == 0x0A {
                position += 2
            } else {
                position += 1
            }
        }
        number += 1
        return Line(number: number, range: start..<end)
    }

    static func isSpace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D || b == 0x0C || b == 0x0B
    }

    /// `range` of `bytes` without leading and trailing ASCII white space.
    static func trimmed(_ bytes: [UInt8], _ range: Range<Int>) -> Range<Int> {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high, isSpace(bytes[low]) { low += 1 }
        while high > low, isSpace(bytes[high - 1]) { high -= 1 }
        return low..<high
    }
}
