/// An immutable list of non-negative integers, stored in 16 bits each when every value fits
/// (nearly every fence: its vertices, chord points and listed items number under 65,536), else
/// in 32 bits. Hot loops switch on ``storage`` once and run a loop specialised for the width.
struct CompactIndices: Sendable {
    enum Storage: Sendable {
        case narrow([UInt16])
        case wide([UInt32])
    }

    let storage: Storage

    /// `values` (each in 0 ... UInt32.max), narrow when all are at most UInt16.max.
    init(_ values: [Int]) {
        if values.allSatisfy({ $0 <= Int(UInt16.max) }) {
            storage = .narrow(values.map { UInt16(truncatingIfNeeded: $0) })
        } else {
            storage = .wide(values.map { UInt32(truncatingIfNeeded: $0) })
        }
    }

    var count: Int {
        switch storage {
        case .narrow(let values): values.count
        case .wide(let values): values.count
        }
    }

    /// Bytes held by the values.
    var byteCount: Int {
        switch storage {
        case .narrow(let values): values.count * 2
        case .wide(let values): values.count * 4
        }
    }

    @inline(__always)
    subscript(_ i: Int) -> Int {
        switch storage {
        case .narrow(let values): Int(values[i])
        case .wide(let values): Int(values[i])
        }
    }
}
