/// The settled requests (expected arrivals, trips) whose retained topic the gateway cleared,
/// oldest first: their entries are kept so a retained copy coming back is cleared again, not
/// followed again, and past the book's capacity the oldest leave. ``ExpectationBook`` and
/// ``TripBook`` each keep one.
struct ClearedRequests: Sendable {
    private var order: [String] = []
    private var head = 0
    /// Entries that are cleared now.
    private(set) var count = 0

    /// `id`'s entry is cleared now.
    mutating func added(_ id: String) {
        count += 1
        order.append(id)
    }

    /// An entry that was cleared is not any more (followed again, removed, evicted).
    mutating func left() { count -= 1 }

    /// While more than `capacity` are cleared, the next id to look at, oldest first (it may have
    /// left already, or come back as cleared later: the caller looks at its entry, and calls
    /// ``left()`` for one it evicts); nil when none is over.
    mutating func nextOverCapacity(_ capacity: Int) -> String? {
        guard count > capacity, head < order.count else {
            if head > 1024, head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
            return nil
        }
        defer { head += 1 }
        return order[head]
    }
}
