/// The bounded queue between libmosquitto's network thread (producer) and the Swift tasks
/// that iterate `MQTTMessages` (consumers). It never drops: libmosquitto has already sent the
/// PUBACK when it hands a message over, so when the queue is full the network thread waits
/// until a consumer takes one (back-pressure to the broker, which stops sending at its
/// in-flight limit). Only `close()` ends the waiting. Full is `capacity` messages, or
/// `byteCapacity` payload bytes (a message that finds the queue empty is always taken).
final class MessageQueue: @unchecked Sendable {
    // @unchecked: every stored property is read and written only with `lock` held.
    private let lock = ConditionLock()
    private let capacity: Int
    private let byteCapacity: Int
    private var buffer: [MQTTMessage?]
    private var head = 0
    private var count = 0
    /// The payload bytes of the buffered messages.
    private var bytes = 0
    private var closed = false
    private var waiters: [(id: UInt64, continuation: UnsafeContinuation<MQTTMessage?, Never>)] = []
    private var nextWaiterId: UInt64 = 0

    init(capacity: Int, byteCapacity: Int = .max) {
        self.capacity = max(1, capacity)
        self.byteCapacity = max(1, byteCapacity)
        buffer = Array(repeating: nil, count: self.capacity)
    }

    /// Whether `size` more payload bytes would pass the byte bound (never for an empty queue).
    private func overBytes(_ size: Int) -> Bool {
        count > 0 && size > byteCapacity - bytes
    }

    /// Hands `message` to a waiting consumer or buffers it, waiting (blocking the calling
    /// thread) while the buffer is full. After `close()` a message that finds the buffer full
    /// is discarded, because nobody will take it.
    func push(_ message: MQTTMessage) {
        lock.lock()
        while (count == capacity || overBytes(message.payload.count)) && !closed {
            lock.wait()
        }
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            lock.unlock()
            waiter.continuation.resume(returning: message)
            return
        }
        if count < capacity && !overBytes(message.payload.count) {
            buffer[(head + count) % capacity] = message
            count += 1
            bytes += message.payload.count
        }
        lock.unlock()
    }

    /// The next message; waits while the queue is empty. `nil` once the queue is closed and
    /// drained, or when the calling task is cancelled.
    func next() async -> MQTTMessage? {
        lock.lock()
        if count > 0 {
            let message = popLocked()
            lock.unlock()
            return message
        }
        if closed {
            lock.unlock()
            return nil
        }
        let id = nextWaiterId
        nextWaiterId += 1
        lock.unlock()
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<MQTTMessage?, Never>) in
                lock.lock()
                if count > 0 {
                    let message = popLocked()
                    lock.unlock()
                    continuation.resume(returning: message)
                } else if closed || Task.isCancelled {
                    lock.unlock()
                    continuation.resume(returning: nil)
                } else {
                    waiters.append((id, continuation))
                    lock.unlock()
                }
            }
        } onCancel: {
            lock.lock()
            let index = waiters.firstIndex { $0.id == id }
            let waiter = index.map { waiters.remove(at: $0) }
            lock.unlock()
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// Stops all waiting: producers no longer block, consumers get the buffered messages and
    /// then `nil`.
    func close() {
        lock.lock()
        closed = true
        let waiting = waiters
        waiters.removeAll()
        lock.broadcast()
        lock.unlock()
        for waiter in waiting {
            waiter.continuation.resume(returning: nil)
        }
    }

    /// How many messages wait for a consumer.
    var depth: Int { lock.withLock { count } }

    private func popLocked() -> MQTTMessage? {
        let message = buffer[head]
        buffer[head] = nil
        head = (head + 1) % capacity
        count -= 1
        bytes -= message?.payload.count ?? 0
        lock.signal()
        return message
    }
}
