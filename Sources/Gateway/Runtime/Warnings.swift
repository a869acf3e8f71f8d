import Synchronization

/// The current warnings of the gateway, shown in the status topic's `warnings` and logged once
/// per change of state (CONVENTIONS.md: runtime faults are logged once per state change).
public final class Warnings: Sendable {
    private let current = Mutex<[(key: String, text: String)]>([])
    private let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Raises (or updates) the warning `key`; logged when it is new or its text changed.
    public func set(_ key: String, _ text: String) {
        let changed: Bool = current.withLock { list in
            if let i = list.firstIndex(where: { $0.key == key }) {
                if list[i].text == text { return false }
                list[i].text = text
            } else {
                list.append((key: key, text: text))
            }
            return true
        }
        if changed { logger.warning(text, ["warning": key]) }
    }

    /// Clears the warning `key`; logged if it was raised.
    public func clear(_ key: String, resolved: @autoclosure () -> String? = nil) {
        let removed: Bool = current.withLock { list in
            guard let i = list.firstIndex(where: { $0.key == key }) else { return false }
            list.remove(at: i)
            return true
        }
        if removed { logger.notice(resolved() ?? "resolved", ["warning": key]) }
    }

    /// Clears every warning whose key starts with `prefix`.
    public func clearAll(prefix: String) {
        current.withLock { $0.removeAll { $0.key.hasPrefix(prefix) } }
    }

    /// The warning texts, oldest first.
    public var texts: [String] { current.withLock { $0.map(\.text) } }
}
