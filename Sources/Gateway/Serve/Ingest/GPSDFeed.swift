import GPSD
import GeotriggerCore
import MQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A `gpsd` feed (docs/topics-and-payloads.md "Inputs"): the gateway's own receiver as a tracked device.
///
/// A ``GPSDReader`` (its own thread, reconnecting with backoff) yields reports; each fix becomes
/// a ``LocationUpdate`` of `device` handed to the ``MonitorPool`` like an MQTT update (no
/// `futureTime` rule: fix times are never dropped for skew, only warned about; the monitors
/// still take them in fix-time order). While gpsd is unreachable the device's stale clock is
/// paused. Status warnings: gpsd not reachable (until it is), receiver without a fix (until one
/// returns), receiver clock more than `input.maxFutureSkew` from the system clock (until a fix
/// is within it). With `republish`, every fix is also published as an OwnTracks location on
/// `owntracks/gateway/GATEWAY_ID`, QoS 0, not retained (a live position: nothing is queued
/// while the broker is away), which the ingest counts as `ownEcho` and never takes back.
///
/// Started last and so stopped first: no update reaches the monitors after they drain.
final class GPSDFeed: Service, Sendable {
    let name: String
    let feedName: String
    let device: String
    let endpoint: String
    let skewThreshold: Double
    /// `input.maxAccuracy`: a fix less accurate than this is dropped as `outOfRange`.
    let maxAccuracy: Double
    let pool: MonitorPool
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    /// Where own fixes are republished as OwnTracks locations, and the client to do it with.
    let republish: (topic: String, client: MQTTClient)?
    private let reader: GPSDReader
    /// Fired when ``run()`` has handed over its last update.
    private let ended = StopSignal()

    /// First and longest wait between connection attempts: gpsd is normally on the same box,
    /// where a refused connect costs nothing, and a moving gateway should see its position again
    /// within a couple of seconds of gpsd coming back.
    static let initialBackoff = 0.25
    static let maximumBackoff = 2.0

    /// The feed `name` reading gpsd at `host`:`port` for `device`; `republish`: the OwnTracks
    /// topic and client for the gateway's own position, or nil.
    init(
        name: String, host: String, port: Int, device: String, skewThreshold: Double, maxAccuracy: Double = 10000,
        republish: (topic: String, client: MQTTClient)?, pool: MonitorPool, counters: GatewayCounters,
        warnings: Warnings, logger: Logger
    ) {
        self.name = "gpsd-\(name)"
        self.feedName = name
        self.device = device
        self.endpoint = "\(host):\(port)"
        self.skewThreshold = skewThreshold
        self.maxAccuracy = maxAccuracy
        self.republish = republish
        self.pool = pool
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        reader = GPSDReader(
            configuration: GPSDReader.Configuration(
                host: host, port: port, initialBackoff: GPSDFeed.initialBackoff,
                maximumBackoff: GPSDFeed.maximumBackoff, clockSkewThreshold: skewThreshold))
    }

    /// The feeds of `config`'s `gpsd` entries, republishing through `client` where asked.
    static func feeds(
        _ config: GatewayConfig, client: MQTTClient, pool: MonitorPool, counters: GatewayCounters,
        warnings: Warnings, logger: Logger
    ) -> [GPSDFeed] {
        config.feeds.compactMap { feed in
            guard case .gpsd(let name, let host, let port, let device, let republish) = feed else { return nil }
            return GPSDFeed(
                name: name, host: host, port: port, device: device ?? config.gateway.id,
                skewThreshold: config.input.maxFutureSkew, maxAccuracy: config.input.maxAccuracy,
                republish: republish ? (topic: ownTopic(gatewayID: config.gateway.id), client: client) : nil,
                pool: pool, counters: counters, warnings: warnings, logger: logger)
        }
    }

    /// The topic the gateway's own position is republished to (docs/topics-and-payloads.md "Inputs":
    /// never ingested back, `ownEcho`).
    static func ownTopic(gatewayID: String) -> String { "owntracks/gateway/\(gatewayID)" }

    // Warning keys: one set per feed.
    private var connectionKey: String { "gpsd:\(feedName)" }
    private var fixKey: String { "gpsd-fix:\(feedName)" }
    private var clockKey: String { "gpsd-clock:\(feedName)" }

    func run() async throws {
        defer { ended.fire() }
        logger.info("reading gpsd", ["feed": feedName, "gpsd": endpoint, "device.id": device])
        reader.start()
        // The warning of the current outage: its text is kept for every failed attempt of the
        // outage, so it is logged once, not once per retry.
        var outage: String?
        var connected = false
        // Dropped fixes are logged at most once a minute (gateway clock), as feed drops are.
        let dropLog = LogLimiter(interval: 60)
        for await event in reader.events {
            switch event {
            case .connected:
                connected = true
                outage = nil
                warnings.clear(connectionKey, resolved: "gpsd at \(endpoint) is reachable (feed \(feedName))")
                logger.info("connected to gpsd", ["feed": feedName, "gpsd": endpoint])
                await pool.resume(device: device, at: MonotonicClock.now())
            case .disconnected(let error):
                let text = outage ?? (connected
                        ? "lost gpsd at \(endpoint) (feed \(feedName)): \(error.message); reconnecting with backoff, the stale clock of \(device) is paused"
                        : "gpsd at \(endpoint) is not reachable (feed \(feedName)): \(error.message); retrying with backoff, the stale clock of \(device) is paused")
                if outage == nil {
                    // Without gpsd nothing is known about the receiver: only the connection warning stays.
                    warnings.clear(fixKey, resolved: "gpsd at \(endpoint) is gone; its no-fix warning gives way to the connection warning")
                    warnings.clear(clockKey, resolved: "gpsd at \(endpoint) is gone; its receiver clock warning is dropped")
                    await pool.pause(device: device, at: MonotonicClock.now())
                }
                outage = text
                connected = false
                warnings.set(connectionKey, text)
            case .noFix:
                warnings.set(fixKey, "the receiver behind gpsd at \(endpoint) (feed \(feedName)) has no fix: no position for \(device) until it has one")
            case .clockSkew(let seconds):
                warnings.set(clockKey, "the receiver clock behind gpsd at \(endpoint) (feed \(feedName)) is \(GPSDFeed.describe(skew: seconds)) the system clock (more than input.maxFutureSkew = \(GPSDFeed.describe(seconds: skewThreshold))); its fixes are used anyway, in fix-time order")
            case .fix(let fix):
                if let drop = GPSDFeed.drop(fix, maxAccuracy: maxAccuracy) {
                    counters.received.add(1, ordering: .relaxed)
                    counters.drop(drop.reason)
                    if dropLog.allow("drop", now: MonotonicClock.now()) {
                        logger.warning("gpsd fix dropped", ["feed": feedName, "reason": drop.reason.rawValue, "detail": drop.detail])
                    }
                    continue
                }
                take(fix)
                await submit(fix)
            }
        }
    }

    /// Warnings and republication for one fix.
    private func take(_ fix: GPSFix) {
        warnings.clear(fixKey, resolved: "the receiver behind gpsd at \(endpoint) has a fix again (feed \(feedName))")
        if abs(fix.time - WallClock.now()) <= skewThreshold {
            warnings.clear(clockKey, resolved: "the receiver clock behind gpsd at \(endpoint) agrees with the system clock again (feed \(feedName))")
        }
        if let republish {
            // QoS 0 needs a connection: without one the position is simply not republished.
            _ = try? republish.client.publish(
                topic: republish.topic, payload: GPSDFeed.update(fix, device: device).owntracksPayload().serializedBytes(),
                qos: .atMostOnce, retain: false)
        }
    }

    private func submit(_ fix: GPSFix) async {
        counters.received.add(1, ordering: .relaxed)
        await pool.submit(GPSDFeed.update(fix, device: device), receivedAt: MonotonicClock.now())
    }

    func shutdown() async {
        reader.stop()
        // The reader finishes its stream within its poll interval; wait for the last update to be
        // handed over so the monitors drain it.
        _ = await ended.sleep(seconds: 3)
    }

    /// Why `fix` is not used, if it is not: an accuracy over `input.maxAccuracy`.
    static func drop(_ fix: GPSFix, maxAccuracy: Double) -> InputDrop? {
        guard let accuracy = fix.accuracy, accuracy > maxAccuracy else { return nil }
        return LocationDecoder.tooInaccurate(accuracy, field: "accuracy", limit: maxAccuracy)
    }

    /// The location update of `fix` for `device` (heading = track).
    static func update(_ fix: GPSFix, device: String) -> LocationUpdate {
        LocationUpdate(
            device: device, lat: fix.lat, lon: fix.lon, time: fix.time, accuracy: fix.accuracy,
            speed: fix.speed, heading: fix.track, altitude: fix.altitude)
    }

    /// "2.5 days ahead of" / "40 s behind" for a skew in seconds.
    static func describe(skew seconds: Double) -> String {
        "\(describe(seconds: abs(seconds))) \(seconds >= 0 ? "ahead of" : "behind")"
    }

    /// A duration in the largest unit that keeps it readable.
    static func describe(seconds: Double) -> String {
        func format(_ value: Double, _ unit: String) -> String {
            let tenths = (value * 10).rounded() / 10
            // A receiver clock years off (or a time of 1e300) is written as it is, not converted to an Int.
            guard abs(tenths) < 1e15 else { return "\(tenths) \(unit)" }
            return tenths == tenths.rounded() ? "\(Int(tenths)) \(unit)" : "\(tenths) \(unit)"
        }
        if seconds >= 86_400 { return format(seconds / 86_400, "days") }
        if seconds >= 3_600 { return format(seconds / 3_600, "h") }
        if seconds >= 60 { return format(seconds / 60, "min") }
        return format(seconds, "s")
    }
}
