import Testing
@testable import Gateway

@Suite struct ArrayQueueTests {
    @Test func takesInOrderAcrossCompactions() {
        var queue = ArrayQueue<Int>()
        var taken: [Int] = []
        var next = 0
        // Enough to pass the compaction threshold several times, with the queue never empty.
        for round in 0..<10 {
            for _ in 0..<3000 { queue.append(next); next += 1 }
            for _ in 0..<(round == 9 ? 3000 + round * 1000 : 2000) { taken.append(queue.popFirst()!) }
        }
        #expect(taken == Array(0..<taken.count))
        #expect(queue.count == next - taken.count)
        #expect(Array(queue.queued) == Array(taken.count..<next))
    }

    @Test func anEmptiedQueueStartsOver() {
        var queue = ArrayQueue<String>()
        #expect(queue.isEmpty && queue.popFirst() == nil)
        queue.append("a")
        queue.append("b")
        #expect(queue.popFirst() == "a")
        queue.removeAll()
        #expect(queue.isEmpty && queue.count == 0 && queue.popFirst() == nil)
        queue.append("c")
        #expect(queue.popFirst() == "c" && queue.isEmpty)
    }
}
