internal import CSQLite

/// A number per outbox (queued messages, or messages dropped by the cap).
public struct OutboxCounts: Sendable, Equatable {
    public var local: Int
    public var remote: Int

    public init(local: Int = 0, remote: Int = 0) {
        self.local = local
        self.remote = remote
    }

    public subscript(destination: OutboxDestination) -> Int {
        get { destination == .local ? local : remote }
        set {
            if destination == .local { local = newValue } else { remote = newValue }
        }
    }

    /// Both together.
    public var total: Int { local + remote }
}
