import GeotriggerCore
import MQTT
import Store
import Synchronization

/// The retained gateway status `PREFIX/status/GATEWAY_ID` (DESIGN.md "Outputs"): `started` on
/// every connect, every `output.statusInterval` seconds, `stopped` at shutdown; the will says
/// `offline`.
final class StatusReporter: Service, Sendable {
    let name = "status"
    let client: MQTTClient
    let topic: String
    let interval: Double
    let counters: GatewayCounters
    let warnings: Warnings
    let since: Double
    /// Where the outbox sizes are read (a few times a second, for the payload).
    let store: GatewayStore
    private let gauges: @Sendable () -> (queueDepth: Int, devices: Int)
    private let outboxCounts = Mutex(OutboxCounts())
    private let status = Mutex("starting")
    private let stopped = Atomic<Bool>(false)

    /// `gauges`: the queue depth and device count of the moment (called from any thread).
    init(
        client: MQTTClient, topic: String, interval: Double, store: GatewayStore, counters: GatewayCounters, warnings: Warnings,
        gauges: @escaping @Sendable () -> (queueDepth: Int, devices: Int)
    ) {
        self.store = store
        self.client = client
        self.topic = topic
        self.interval = interval
        self.counters = counters
        self.warnings = warnings
        self.gauges = gauges
        self.since = WallClock.now()
    }

    /// The will: what the broker publishes if the gateway vanishes.
    static func willPayload() -> [UInt8] { payloadBytes(.object(["status": .string("offline")])) }

    /// The status payload for `status`.
    func payload(_ status: String) -> [UInt8] {
        let g = gauges()
        let outbox = outboxCounts.withLock { $0 }
        return payloadBytes(.object([
            "status": .string(status),
            "warnings": .array(warnings.texts.map { .string($0) }),
            "counters": counters.json(queueDepth: g.queueDepth, devices: g.devices, outboxLocal: outbox.local, outboxRemote: outbox.remote),
            "since": .string(ISO8601Time.format(since, milliseconds: true)),
            "version": .string(GatewayVersion.current),
        ]))
    }

    /// Publishes `status` now (and keeps it for the periodic reports). Returns the message id.
    @discardableResult
    func publish(_ status: String) -> Int32? {
        self.status.withLock { $0 = status }
        return try? client.publish(topic: topic, payload: payload(status), qos: .atLeastOnce, retain: true)
    }

    func run() async throws {
        var next = MonotonicClock.now() + interval
        var nextCounts = 0.0
        while !stopped.load(ordering: .relaxed) {
            try? await Task.sleep(for: .milliseconds(100))
            let now = MonotonicClock.now()
            if now >= nextCounts {
                nextCounts = now + 0.25
                let counts = await store.outboxCounts
                outboxCounts.withLock { $0 = counts }
            }
            guard now >= next, !stopped.load(ordering: .relaxed) else { continue }
            next = now + interval
            if client.isConnected { publish(status.withLock { $0 }) }
        }
    }

    func shutdown() async {
        stopped.store(true, ordering: .relaxed)
    }
}
