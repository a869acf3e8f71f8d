import GeotriggerCore
import MQTT
import Store
import Synchronization

/// The retained gateway status `PREFIX/status/GATEWAY_ID` (docs/topics-and-payloads.md "Gateway status"): `started`
/// on every connect, every `output.statusInterval` seconds, `stopped` at shutdown; the will
/// says `offline`.
///
/// With `output.metricsFile` it also writes the ``MetricsFile`` on the same tick, from the same
/// ``StatusSample`` (also while the broker is unreachable), once when it starts and once at a
/// graceful stop (``writeFinalMetrics()``).
final class StatusReporter: Service, Sendable {
    let name = "status"
    let client: MQTTClient
    let topic: String
    let interval: Double
    let counters: GatewayCounters
    let warnings: Warnings
    let since: Double
    /// Where the outbox sizes are read (before each periodic report; a connect's `started`
    /// has those of the last one).
    let store: GatewayStore
    /// The upstream broker's client, when `remote` is configured (for its connection state).
    let remote: MQTTClient?
    let metricsFile: MetricsFile?
    private let gauges: @Sendable () -> (queueDepth: Int, devices: Int)
    private let outboxCounts = Mutex(OutboxCounts())
    private let status = Mutex("starting")
    /// Fired by ``shutdown()``: the loop ends.
    private let stop = StopSignal()

    /// `gauges`: the queue depth and device count of the moment (called from any thread).
    init(
        client: MQTTClient, remote: MQTTClient? = nil, topic: String, interval: Double, store: GatewayStore, counters: GatewayCounters,
        warnings: Warnings, metricsFile: MetricsFile? = nil, gauges: @escaping @Sendable () -> (queueDepth: Int, devices: Int)
    ) {
        self.store = store
        self.client = client
        self.remote = remote
        self.metricsFile = metricsFile
        self.topic = topic
        self.interval = interval
        self.counters = counters
        self.warnings = warnings
        self.gauges = gauges
        self.since = WallClock.now()
    }

    /// The will: what the broker publishes if the gateway vanishes.
    static func willPayload() -> [UInt8] { JSONValue.object(["status": .string("offline")]).serializedBytes() }

    /// The counters, gauges and connections of this moment: the one place they are gathered.
    func sample() -> StatusSample {
        let g = gauges()
        var brokers = [StatusSample.Broker(name: "local", connected: client.isConnected)]
        if let remote { brokers.append(StatusSample.Broker(name: "remote", connected: remote.isConnected)) }
        return StatusSample(counters: counters.values(), queueDepth: g.queueDepth, devices: g.devices,
                            outbox: outboxCounts.withLock { $0 }, brokers: brokers, version: GatewayVersion.current)
    }

    /// The status payload for `status` (with `sample`, else one taken now).
    func payload(_ status: String, _ sample: StatusSample? = nil) -> [UInt8] {
        let sample = sample ?? self.sample()
        return JSONValue.object([
            "status": .string(status),
            "warnings": .array(warnings.texts.map { .string($0) }),
            "counters": sample.countersJSON,
            "since": .string(ISO8601Time.format(since, milliseconds: true)),
            "version": .string(GatewayVersion.current),
        ]).serializedBytes()
    }

    /// Publishes `status` now (and keeps it for the periodic reports). Returns the message id.
    /// On the local client's network thread (a connect's `started`, the `stopped` of
    /// ``MQTTClient/stop(last:)``), as every periodic report: one thread, so a report that read
    /// the previous status cannot be queued after this one, and no lock is held across the
    /// publish.
    ///
    /// `qos`: the last status before a clean disconnect goes at QoS 0, which libmosquitto
    /// writes at once, ahead of the DISCONNECT; a QoS 1 message waits for a free slot of the
    /// broker's receive maximum, behind the events in flight, and the disconnect would drop it.
    @discardableResult
    func publish(_ status: String, _ sample: StatusSample? = nil, qos: MQTTQoS = .atLeastOnce) -> Int32? {
        client.assertOnNetworkThread()
        self.status.withLock { $0 = status }
        return try? client.publish(topic: topic, payload: payload(status, sample), qos: qos, retain: true)
    }

    /// The periodic report: the current status again, with `sample`. The payload is built here;
    /// it is published on the network thread, unless the status changed meanwhile (the new one
    /// went out there already) or no connection loop runs (the job then runs in place: not
    /// connected, and the next connect publishes `started`).
    private func republish(_ sample: StatusSample) {
        let status = self.status.withLock { $0 }
        let payload = payload(status, sample)
        client.perform { [self] in
            guard client.isNetworkThread, self.status.withLock({ $0 }) == status else { return }
            _ = try? client.publish(topic: topic, payload: payload, qos: .atLeastOnce, retain: true)
        }
    }

    /// Reads the outbox sizes again (on the store's queue).
    private func refreshOutboxCounts() async {
        let counts = await store.outboxCounts
        outboxCounts.withLock { $0 = counts }
    }

    /// The metrics file's last write, at a graceful stop: after the services stopped (the
    /// counts are final, the broker disconnected), before the database closes.
    func writeFinalMetrics() async {
        guard let metricsFile else { return }
        await refreshOutboxCounts()
        await metricsFile.writeAndWait(sample())
    }

    /// Sleeps until each report is due (`output.statusInterval`): the outbox counts are read
    /// from the store just before it, so an idle gateway wakes once per report.
    func run() async throws {
        if let metricsFile {
            await refreshOutboxCounts()
            metricsFile.write(sample())
        }
        var next = MonotonicClock.now() + interval
        guard await stop.sleep(until: next, or: nil) == .due else { return }
        await repeating(until: stop) {
            let now = MonotonicClock.now()
            if now >= next, !stop.isFired {
                next = now + interval
                await refreshOutboxCounts()
                let sample = sample()
                if client.isConnected { republish(sample) }
                metricsFile?.write(sample)
            }
            return next
        }
    }

    func shutdown() async {
        stop.fire()
    }
}
