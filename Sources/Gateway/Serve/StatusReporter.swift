import GeotriggerCore
import MQTT
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
    private let gauges: @Sendable () -> (queueDepth: Int, devices: Int, outboxLocal: Int, outboxRemote: Int)
    private let status = Mutex("starting")
    private let stopped = Atomic<Bool>(false)

    init(
        client: MQTTClient, topic: String, interval: Double, counters: GatewayCounters, warnings: Warnings,
        gauges: @escaping @Sendable () -> (queueDepth: Int, devices: Int, outboxLocal: Int, outboxRemote: Int)
    ) {
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
        return payloadBytes(.object([
            "status": .string(status),
            "warnings": .array(warnings.texts.map { .string($0) }),
            "counters": counters.json(queueDepth: g.queueDepth, devices: g.devices, outboxLocal: g.outboxLocal, outboxRemote: g.outboxRemote),
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
        while !stopped.load(ordering: .relaxed) {
            try? await Task.sleep(for: .milliseconds(100))
            let now = MonotonicClock.now()
            guard now >= next, !stopped.load(ordering: .relaxed) else { continue }
            next = now + interval
            if client.isConnected { publish(status.withLock { $0 }) }
        }
    }

    func shutdown() async {
        stopped.store(true, ordering: .relaxed)
    }
}
