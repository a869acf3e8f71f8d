import Synchronization

/// The current warnings of the gateway, shown in the status topic's `warnings` and logged once
/// per change of state (runtime faults are logged once per state change, not once per retry).
///
/// The gateway's own faults (database, broker, gpsd, spill file, metrics file, reload...) are
/// always kept and shown: their keys come from the config, so they are few. Warnings a client
/// causes (a rejected runtime fence or expectation, one per payload) are kept up to ``limit``:
/// past it a new one is only logged and counted. The status shows the gateway's faults, then
/// as many client warnings as fit in ``limit`` lines, the last line counting the rest.
public final class Warnings: Sendable {
    /// Who caused a warning, which decides whether it is always shown.
    public enum Origin: Sendable {
        /// A fault of the gateway or what it depends on: always kept and shown.
        case gateway
        /// A client's message the gateway refused: kept up to ``Warnings/limit``.
        case client
    }

    private struct Entry {
        var key: String
        var text: String
        var origin: Origin
    }

    private struct State {
        /// Oldest first.
        var list: [Entry] = []
        /// Client warnings kept in `list`.
        var clientCount = 0
        /// Client warnings raised while ``limit`` were kept: logged, not kept.
        var unkept = 0
    }

    private let current = LeveledMutex(State(), level: .warnings)
    private let logger: Logger
    /// The most client warnings kept, and the most lines the status shows while the gateway's
    /// own faults leave room.
    public let limit: Int

    public init(logger: Logger, limit: Int = 50) {
        self.logger = logger
        self.limit = max(1, limit)
    }

    /// Raises (or updates) the warning `key`; logged when it is new or its text changed.
    public func set(_ key: String, _ text: String, origin: Origin = .gateway) {
        let changed: Bool = current.withLock { state in
            if let i = state.list.firstIndex(where: { $0.key == key }) {
                if state.list[i].text == text { return false }
                state.list[i].text = text
            } else if origin == .gateway || state.clientCount < limit {
                state.list.append(Entry(key: key, text: text, origin: origin))
                if origin == .client { state.clientCount += 1 }
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
            if state.list.remove(at: i).origin == .client { state.clientCount -= 1 }
            return true
        }
        if removed { logger.notice(resolved() ?? "resolved", ["warning": key]) }
    }

    /// The warning texts, oldest first: every gateway fault, and client warnings up to
    /// ``limit`` lines in all, the last of them counting the rest when there were more.
    public var texts: [String] {
        current.withLock { state in
            guard state.unkept > 0 || state.list.count > limit else { return state.list.map(\.text) }
            let room = max(0, limit - 1 - (state.list.count - state.clientCount))
            let more = state.unkept + max(0, state.clientCount - room)
            guard more > 0 else { return state.list.map(\.text) }
            var clients = 0
            let shown = state.list.filter { entry in
                guard entry.origin == .client else { return true }
                clients += 1
                return clients <= room
            }
            return shown.map(\.text) + ["\(more) more warnings are in the log (the status keeps \(limit))"]
        }
    }
}
