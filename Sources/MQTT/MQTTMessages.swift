/// The messages `MQTTClient` receives, in arrival order, as an `AsyncSequence`.
///
/// Backed by a bounded queue that never drops (see `MQTTConfiguration.inboundCapacity`): when
/// it is full, libmosquitto's network thread waits for a consumer, so the broker stops
/// sending. Keep consuming: while the network thread waits it sends no keepalive either, and
/// the broker drops a connection that stays silent 1.5 x keepalive. Several tasks may iterate
/// at once; each message goes to exactly one of them. The sequence ends after `stop()`, once
/// the buffered messages are taken. A cancelled task's `next()` returns `nil` and loses
/// nothing.
public struct MQTTMessages: AsyncSequence, Sendable {
    public typealias Element = MQTTMessage
    public typealias Failure = Never

    let queue: MessageQueue

    /// Iterates the client's inbound queue.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = MQTTMessage
        public typealias Failure = Never

        let queue: MessageQueue

        /// The next message, waiting for one; `nil` after `stop()` or on cancellation.
        public mutating func next() async -> MQTTMessage? {
            await queue.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(queue: queue)
    }
}
