import GeotriggerCore
import MQTT
import Synchronization

/// Reads the broker's messages for the MQTT feeds, decodes them, counts and logs (at most once
/// per reason per minute) what is dropped, and hands updates to the monitors.
final class Ingest: Service, Sendable {
    struct Feed: Sendable {
        var name: String
        var filter: String
        var decoder: LocationDecoder
        var owntracks: Bool
        /// `feeds[].shard`: only these devices are taken, the others ignored (not drops).
        var shard: FeedShard? = nil
    }

    let name = "ingest"
    let client: MQTTClient
    let feeds: [Feed]
    let pool: MonitorPool
    let counters: GatewayCounters
    let logger: Logger
    /// The topic the gateway republishes its own position to: never ingested back.
    let ownEchoTopics: Set<String>
    private let limiter = LogLimiter(interval: 60)
    /// Runtime fences and queries: offered every message first.
    let control: ControlPlane?

    init(client: MQTTClient, feeds: [Feed], pool: MonitorPool, counters: GatewayCounters, logger: Logger, ownEchoTopics: Set<String>, control: ControlPlane? = nil) {
        self.client = client
        self.feeds = feeds
        self.pool = pool
        self.counters = counters
        self.logger = logger
        self.ownEchoTopics = ownEchoTopics
        self.control = control
    }

    /// Subscribes every feed's filter (the client subscribes again after each reconnect).
    func subscribe() throws {
        for feed in feeds { try client.subscribe(feed.filter, qos: .atLeastOnce) }
    }

    func run() async throws {
        for await message in client.messages {
            counters.received.add(1, ordering: .relaxed)
            await take(message)
        }
    }

    func take(_ message: MQTTMessage) async {
        if let control, await control.take(message) { return }
        if ownEchoTopics.contains(message.topic) {
            counters.drop(.ownEcho)
            return
        }
        let now = WallClock.now()
        var drop: InputDrop?
        for feed in feeds {
            switch message.payload.withUnsafeBytes({ feed.decoder.decode(topic: message.topic, payload: $0, now: now) }) {
            case .success(let decoded):
                if let shard = feed.shard, !shard.contains(decoded.update.device) { return }
                await pool.submit(decoded.update, receivedAt: MonotonicClock.now(), trackerID: decoded.trackerID, owntracks: feed.owntracks)
                return
            case .failure(let failure):
                // A topic that does not match this feed may match the next one.
                if failure.reason == .badDeviceId, feed.decoder.topicFilter.deviceID(in: message.topic) == nil { continue }
                drop = failure
            }
            break
        }
        let failure = drop ?? InputDrop(.badDeviceId, "topic '\(message.topic)' matches no feed")
        counters.drop(failure.reason)
        if limiter.allow(failure.reason.rawValue, now: now) {
            logger.warning("dropped input (\(failure.reason.rawValue)): \(failure.detail) (logged at most once a minute per reason)",
                           ["mqtt.topic": message.topic])
        }
    }

    func shutdown() async {
        // Let what was received drain into the monitors. The subscriptions stay in the broker's
        // session: while the gateway is down the broker queues the feeds' QoS 1 updates for it,
        // and the next start processes them (unsubscribing here would make the broker drop them).
        let deadline = MonotonicClock.now() + 3
        while client.inboundDepth > 0, MonotonicClock.now() < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}
