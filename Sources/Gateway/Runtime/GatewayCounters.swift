import GeotriggerCore
import Synchronization

/// The counters of the status topic (DESIGN.md "Outputs": `counters`). Thread-safe and cheap
/// to bump from the ingest path.
public final class GatewayCounters: Sendable {
    public let received = Atomic<Int>(0)
    public let accepted = Atomic<Int>(0)
    public let events = Atomic<Int>(0)
    public let acked = Atomic<Int>(0)
    /// Events decided outside their trigger's `schedule`: neither published nor journaled.
    public let outsideSchedule = Atomic<Int>(0)
    /// Feed messages taken on the network thread and their approximate size on the wire (not
    /// `received`, which also counts gpsd fixes and control messages).
    public let feedMessages = Atomic<Int>(0)
    public let feedBytes = Atomic<Int>(0)
    private let dropped = Mutex<[DropReason: Int]>([:])

    public init() {}

    public func drop(_ reason: DropReason, count: Int = 1) {
        dropped.withLock { $0[reason, default: 0] += count }
    }

    /// Feed messages the broker has sent that the network thread has not read yet, estimated
    /// from the socket's `unreadBytes` and the mean size of the feed messages taken so far (for
    /// the status's `queueDepth`: the updates waiting for the gateway now wait there).
    public func unreadFeedMessages(unreadBytes: Int) -> Int {
        let count = feedMessages.load(ordering: .relaxed)
        guard count > 0 else { return 0 }
        return unreadBytes / max(1, feedBytes.load(ordering: .relaxed) / count)
    }

    public func droppedCount(_ reason: DropReason) -> Int { dropped.withLock { $0[reason] ?? 0 } }

    /// The `counters` object; `dropped` lists every reason (zeros included) in the contract's order.
    public func json(queueDepth: Int, devices: Int, outboxLocal: Int, outboxRemote: Int) -> JSONValue {
        let drops = dropped.withLock { d in
            JSONObject(DropReason.allCases.map { (key: $0.rawValue, value: JSONValue.number(Double(d[$0] ?? 0))) })
        }
        func n(_ a: borrowing Atomic<Int>) -> JSONValue { .number(Double(a.load(ordering: .relaxed))) }
        return .object([
            "received": n(received), "accepted": n(accepted), "dropped": .object(drops), "events": n(events),
            "acked": n(acked), "queueDepth": .number(Double(queueDepth)), "devices": .number(Double(devices)),
            "outbox": .object(["local": .number(Double(outboxLocal)), "remote": .number(Double(outboxRemote))]),
            "outsideSchedule": n(outsideSchedule),
        ])
    }
}
