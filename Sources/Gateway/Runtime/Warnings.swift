import Synchronization

/// The current warnings of the gateway, shown in the status topic's `warnings` and logged once
/// per change of state (CONVENTIONS.md: runtime faults are logged once per state change).
///
/// At most ``limit`` are kept (a client can cause many, one per rejected runtime fence): past
/// it a new warning is only logged and counted, and the status's last line says how many.
public final class Warnings: Sendable {
    private struct State {
        var list: [(key: String, text: String)] = []
        /// Warnings raised while ``limit`` were kept: logged, not kept.
        var unkept = 0
    }

    private let current = Mutex(State())
    private let logger: Logger
    /// The most warnings kept (the status shows them all, plus one line for the rest).
    public let limit: Int

    public init(logger: Logger, limit: Int = 50) {
        self.logger = logger
        self.limit = max(1, limit)
    }

    /// Raises (or updates) the warning `key`; logged when it is new or its text changed.
    public func set(_ key: String, _ text: String) {
        let changed: Bool = current.withLock { state in
            if let i = state.list.firstIndex(where: { $0.key == key }) {
                if state.list[i].text == text { return false }
                state.list[i].text = text
            } else if state.list.count < limit {
                state.list.append((key: key, text: text))
            } else {
                state.unkept += 1
            }
            return true
        }
        if changed { logger.warning(text, ["warning": key]) }
    }

    /// Clears the warning `key`; logged if it was raised.
    public func clear(_ key: String, resolved: @autoclosure () -> String? = nil) {
        let removed: Bool = current.withLock { state in
            guard let i = state.list.firstIndex(where: { $0.key == key }) else { return false }
            state.list.remove(at: i)
            return true
        }
        if removed { logger.notice(resolved() ?? "resolved", ["warning": key]) }
    }

    /// The warning texts, oldest first: at most ``limit``, the last of them counting the rest
    /// when there were more.
    public var texts: [String] {
        current.withLock { state in
            guard state.unkept > 0 || state.list.count > limit else { return state.list.map(\.text) }
            let shown = state.list.prefix(limit - 1).map(\.text)
            return shown + ["\(state.unkept + state.list.count - shown.count) more warnings are in the log (the status keeps \(limit))"]
        }
    }
}
