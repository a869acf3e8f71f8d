import GeotriggerCore
import MQTT
import Synchronization

/// Reads the broker's messages for the MQTT feeds, decodes them, counts and logs (at most once
/// per reason per minute) what is dropped, and hands updates to the monitors.
///
/// Feed messages are taken on libmosquitto's network thread (`MQTTClient.setInlineHandler`),
/// decoded and handed to their monitor right there: no hop to a task per update. Control-plane
/// messages (runtime fences, queries), which need to `await`, go through the client's queue
/// to ``run()``. So a query or a fence change is handled after the feed messages that arrived
/// before it, but a feed message that arrives after it may be handled first.
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
    /// Feed messages taken on the network thread and their approximate size on the wire (not
    /// `counters.received`, which also counts gpsd fixes and control messages).
    private let taken = Atomic<Int>(0)
    private let takenBytes = Atomic<Int>(0)
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

    /// Subscribes every feed's filter (the client subscribes again after each reconnect), and
    /// takes the feed messages on the network thread from now on.
    func subscribe() throws {
        client.setInlineHandler { [self] message in takeInline(message) }
        for feed in feeds { try client.subscribe(feed.filter, qos: .atLeastOnce) }
    }

    /// The messages left in the client's queue: the control plane's.
    func run() async throws {
        for await message in client.messages {
            counters.received.add(1, ordering: .relaxed)
            if let control, await control.take(message) { continue }
            if let update = decode(message) {
                await pool.submit(update.update, receivedAt: MonotonicClock.now(), trackerID: update.trackerID, owntracks: update.owntracks)
            }
        }
    }

    /// Feed messages the broker has sent that the network thread has not read yet, estimated
    /// from the socket's unread bytes and the mean size of the messages taken so far (for the
    /// status's `queueDepth`: the updates waiting for the gateway now wait there).
    var unreadMessages: Int {
        let count = taken.load(ordering: .relaxed)
        guard count > 0 else { return 0 }
        let meanSize = max(1, takenBytes.load(ordering: .relaxed) / count)
        return client.unreadBytes / meanSize
    }

    /// On libmosquitto's network thread: takes every message that is not the control plane's.
    /// Blocks that thread while the monitors' committer is full (back-pressure to the broker).
    private func takeInline(_ message: MQTTMessage) -> Bool {
        if let control, control.handles(message.topic) { return false }
        counters.received.add(1, ordering: .relaxed)
        taken.add(1, ordering: .relaxed)
        // Fixed header, topic length and the v5 properties' length: about 5 bytes.
        takenBytes.add(message.topic.utf8.count + message.payload.count + 5, ordering: .relaxed)
        if let update = decode(message) {
            pool.submitBlocking(update.update, receivedAt: MonotonicClock.now(), trackerID: update.trackerID, owntracks: update.owntracks)
        }
        return true
    }

    /// The update in `message` for its feed; nil when it is dropped (counted and logged) or
    /// belongs to another gateway's shard.
    private func decode(_ message: MQTTMessage) -> (update: LocationUpdate, trackerID: String?, owntracks: Bool)? {
        if ownEchoTopics.contains(message.topic) {
            counters.drop(.ownEcho)
            return nil
        }
        // Only for `input.maxFutureSkew` and the once-a-minute log: the coarse clock will do.
        let now = WallClock.coarse()
        var drop: InputDrop?
        for feed in feeds {
            switch message.payload.withUnsafeBytes({ feed.decoder.decode(topic: message.topic, payload: $0, now: now) }) {
            case .success(let decoded):
                if let shard = feed.shard, !shard.contains(decoded.update.device) { return nil }
                return (decoded.update, decoded.trackerID, feed.owntracks)
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
        return nil
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
