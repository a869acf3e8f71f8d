import Foundation

/// A thread-safe list that callbacks on other threads append to and tests read, e.g. the
/// acknowledgements and connection events of an `MQTTClient`.
public final class Recorder<Element: Sendable>: @unchecked Sendable {
    // @unchecked: `elements` is only touched with `lock` held.
    private let lock = NSLock()
    private var elements: [Element] = []

    public init() {}

    /// Appends one element (any thread).
    public func append(_ element: Element) {
        lock.lock()
        elements.append(element)
        lock.unlock()
    }

    /// A copy of everything recorded so far.
    public var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return elements
    }

    /// How many elements were recorded.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return elements.count
    }

    /// Whether any recorded element matches.
    public func contains(where predicate: (Element) -> Bool) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return elements.contains(where: predicate)
    }

    /// Forgets everything recorded so far.
    public func removeAll() {
        lock.lock()
        elements.removeAll()
        lock.unlock()
    }
}
