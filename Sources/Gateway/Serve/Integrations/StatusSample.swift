import GeotriggerCore
import Store

/// What one status tick reads, once: the counters, the gauges and the broker connections.
/// The status payload's `counters` and the metrics file (`output.metricsFile`) are both made
/// from the same sample, so they never disagree about one moment.
struct StatusSample: Sendable {
    /// One broker connection of the gateway: `local` (the `broker`), `remote` (when configured).
    struct Broker: Sendable, Equatable {
        var name: String
        var connected: Bool
    }

    var counters: GatewayCounters.Values
    var queueDepth: Int
    var devices: Int
    var outbox: OutboxCounts
    var brokers: [Broker]
    var version: String

    /// The status payload's `counters` object.
    var countersJSON: JSONValue {
        GatewayCounters.json(counters, queueDepth: queueDepth, devices: devices, outboxLocal: outbox.local, outboxRemote: outbox.remote)
    }
}
