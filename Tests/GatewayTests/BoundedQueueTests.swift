import Synchronization
import Testing
@testable import Gateway

@Suite struct BoundedQueueTests {
    @Test func deliversInOrderWithBackPressure() async {
        let queue = BoundedQueue<Int>(capacity: 4)
        let sent = Atomic<Int>(0)
        let producer = Task {
            for i in 0..<1000 {
                await queue.send(i)
                sent.add(1, ordering: .relaxed)
            }
            queue.finish()
        }
        // The producer cannot run ahead by more than the capacity (plus the one it is sending).
        while sent.load(ordering: .relaxed) < 4 { await Task.yield() }
        for _ in 0..<100 { await Task.yield() }
        #expect(sent.load(ordering: .relaxed) <= 5)
        var received: [Int] = []
        while let i = await queue.next() {
            received.append(i)
            if received.count % 7 == 0 { queue.drain(upTo: received.count + 3, into: &received) }
        }
        await producer.value
        #expect(received == Array(0..<1000))
    }

    @Test func cancellingTheWaitingConsumerEndsItsWaitWithNilAndKeepsLaterElements() async {
        let queue = BoundedQueue<Int>(capacity: 2)
        let consumer = Task { await queue.next() }
        for _ in 0..<100 { await Task.yield() }
        consumer.cancel()
        #expect(await consumer.value == nil)
        #expect(queue.trySend(7))
        #expect(await queue.next() == 7)
    }

    @Test func manyProducersLoseNothing() async {
        let queue = BoundedQueue<Int>(capacity: 2)
        await withTaskGroup(of: Void.self) { group in
            for p in 0..<8 {
                group.addTask { for i in 0..<500 { await queue.send(p * 1000 + i) } }
            }
            group.addTask {
                var seen = Set<Int>()
                var lastPerProducer = [Int](repeating: -1, count: 8)
                var ordered = true
                while seen.count < 4000, let v = await queue.next() {
                    seen.insert(v)
                    if v % 1000 <= lastPerProducer[v / 1000] { ordered = false }
                    lastPerProducer[v / 1000] = v % 1000
                }
                #expect(seen.count == 4000)
                #expect(ordered)
            }
        }
    }

    @Test func finishReleasesConsumer() async {
        let queue = BoundedQueue<Int>(capacity: 1)
        let consumer = Task { await queue.next() }
        try? await Task.sleep(for: .milliseconds(20))
        queue.finish()
        #expect(await consumer.value == nil)
        #expect(queue.trySend(1))  // discarded after finish
        #expect(await queue.next() == nil)
    }
}
