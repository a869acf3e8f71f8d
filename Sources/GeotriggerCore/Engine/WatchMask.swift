/// A set of watch numbers (the snapshot's `watches` positions) as bits: the first 64 inline,
/// the others in an array. A monitor keeps two, so with up to 64 watches a device's masks
/// need no heap block of their own (as `[UInt64]` they took ~100 bytes per device).
struct WatchMask: Sendable {
    private var first: UInt64 = 0
    private var rest: [UInt64] = []

    /// An empty mask with room for `count` watches.
    init(count: Int = 0) {
        if count > 64 { rest = [UInt64](repeating: 0, count: (count - 1) / 64) }
    }

    /// Whether `w` is in the set (false beyond the room it was made with).
    @inline(__always)
    func contains(_ w: Int) -> Bool {
        if w < 64 { return (first >> UInt64(w)) & 1 != 0 }
        let word = (w >> 6) - 1
        return word < rest.count && (rest[word] >> UInt64(w & 63)) & 1 != 0
    }

    /// Adds `w`, which must be within the room the mask was made with.
    mutating func insert(_ w: Int) {
        if w < 64 {
            first |= 1 << UInt64(w)
        } else {
            rest[(w >> 6) - 1] |= 1 << UInt64(w & 63)
        }
    }
}
