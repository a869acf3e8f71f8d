import GeotriggerCore
import Synchronization

/// The counters of the status topic (DESIGN.md "Outputs": `counters`). Thread-safe and cheap
/// to bump from the ingest path.
public final class GatewayCounters: Sendable {
    public let received = Atomic<Int>(0)
    public let accepted = Atomic<Int>(0)
    public let events = Atomic<Int>(0)
    public let acked = Atomic<Int>(0)
    private let dropped = Mutex<[DropReason: Int]>([:])

    public init() {}

    public func drop(_ reason: DropReason, count: Int = 1) {
        dropped.withLock { $0[reason, default: 0] += count }
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
        ])
    }
}
