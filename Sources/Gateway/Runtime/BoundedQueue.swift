import Synchronization

/// A multi-producer, single-consumer async queue with a capacity: `send` suspends while the
/// queue is full (back-pressure instead of dropping or growing), `next` suspends while it is empty.
public final class BoundedQueue<Element: Sendable>: Sendable {
    private struct State {
        var buffer = ArrayQueue<Element>()
        var consumer: CheckedContinuation<Element?, Never>?
        var producers = ArrayQueue<(Element, CheckedContinuation<Void, Never>)>()
        var finished = false

        var count: Int { buffer.count }
    }

    public let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
    }

    /// The number of queued elements (for the status topic's `queueDepth`).
    public var count: Int { state.withLock { $0.count + $0.producers.count } }

    /// Adds `element`, waiting while the queue is full. Elements sent after `finish()` are discarded.
    public func send(_ element: Element) async {
        if trySend(element) { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = state.withLock { s in
                if s.finished { return true }
                if s.count < capacity, s.producers.isEmpty {
                    if let consumer = s.consumer {
                        s.consumer = nil
                        consumer.resume(returning: element)
                    } else {
                        s.buffer.append(element)
                    }
                    return true
                }
                s.producers.append((element, c))
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// Adds `element` if there is room now; false if the queue is full.
    public func trySend(_ element: Element) -> Bool {
        let (accepted, consumer): (Bool, CheckedContinuation<Element?, Never>?) = state.withLock { s in
            if s.finished { return (true, nil) }
            if let consumer = s.consumer {
                s.consumer = nil
                return (true, consumer)
            }
            guard s.count < capacity, s.producers.isEmpty else { return (false, nil) }
            s.buffer.append(element)
            return (true, nil)
        }
        consumer?.resume(returning: element)
        return accepted
    }

    /// The next element, waiting while the queue is empty; nil once finished and drained, or
    /// when the calling task is cancelled while the queue is empty (a consumer's loop ends as
    /// at `finish()`: the ``ServiceGroup``'s cancellation after the shutdown's grace period).
    /// Only one consumer may call this at a time.
    public func next() async -> Element? {
        if let (element, producer) = takeNow() {
            producer?.resume()
            return element
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Element?, Never>) in
                let ready: (Element?, CheckedContinuation<Void, Never>?, Bool) = state.withLock { s in
                    if let e = s.buffer.popFirst() {
                        let p = s.producers.popFirst()
                        if let p { s.buffer.append(p.0) }
                        return (e, p?.1, true)
                    }
                    if s.finished || Task.isCancelled { return (nil, nil, true) }
                    s.consumer = c
                    return (nil, nil, false)
                }
                if ready.2 {
                    ready.1?.resume()
                    c.resume(returning: ready.0)
                }
            }
        } onCancel: {
            // The one consumer is this call: an element sent meanwhile took it already, or not.
            let consumer = state.withLock { s in
                defer { s.consumer = nil }
                return s.consumer
            }
            consumer?.resume(returning: nil)
        }
    }

    /// Takes up to `limit` queued elements without waiting (for batching after a `next()`).
    public func drain(upTo limit: Int, into out: inout [Element]) {
        let resumed: [CheckedContinuation<Void, Never>] = state.withLock { s in
            var resumed: [CheckedContinuation<Void, Never>] = []
            while out.count < limit, let e = s.buffer.popFirst() {
                out.append(e)
                if let p = s.producers.popFirst() {
                    s.buffer.append(p.0)
                    resumed.append(p.1)
                }
            }
            return resumed
        }
        for p in resumed { p.resume() }
    }

    private func takeNow() -> (Element, CheckedContinuation<Void, Never>?)? {
        state.withLock { s in
            guard let e = s.buffer.popFirst() else { return nil }
            guard let p = s.producers.popFirst() else { return (e, nil) }
            s.buffer.append(p.0)
            return (e, p.1)
        }
    }

    /// Ends the queue: waiting producers are released (their elements discarded), and the
    /// consumer gets nil after the queued elements.
    public func finish() {
        let (consumer, producers): (CheckedContinuation<Element?, Never>?, [CheckedContinuation<Void, Never>]) = state.withLock { s in
            s.finished = true
            let c = s.consumer
            s.consumer = nil
            var p: [CheckedContinuation<Void, Never>] = []
            while let producer = s.producers.popFirst() { p.append(producer.1) }
            return (c, p)
        }
        consumer?.resume(returning: nil)
        for p in producers { p.resume() }
    }
}
