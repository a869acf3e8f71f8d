import GeotriggerCore
import MQTT
import Synchronization

/// The owner of what runs on the main broker's network thread (libmosquitto's, see
/// ``MQTTClientDelegate``): installed on the client once, before it starts.
///
/// - Every received message is offered here first. A feed message is decoded, counted (drops
///   logged at most once per reason per minute) and handed to its device's monitor right here
///   (``MonitorPool/submitInBurst(_:receivedAt:trackerID:owntracks:userLevel:)``): no hop to a task per
///   update. Control-plane messages (runtime fences, queries), which need to `await`, are left
///   in the client's queue for ``ControlPlane/run()``: so a query or a fence change is handled
///   after the feed messages that arrived before it, but a feed message that arrives after it
///   may be handled first.
/// - After each burst of reads it commits what the burst decided (``EventCommitter/commitBurst()``),
///   and the fresh events go out in the same turn.
/// - Acknowledgements go to the query service (a reply's parts), the state publisher or the
///   local outbox, whichever sent the message.
/// - Connection events: logged and kept as warnings by the ``BrokerConnection``; on a loss
///   the monitors' clocks pause; on every connect they go on, the control topics are
///   subscribed afresh, `started` is published, then the retained device states, and the
///   outbox delivers what waits.
final class LocalBrokerLink: MQTTClientDelegate {
    /// One MQTT feed of the config.
    struct Feed: Sendable {
        var name: String
        var filter: String
        var decoder: LocationDecoder
        var owntracks: Bool
        /// For an `owntracks` feed: where its devices get the gateway's commands and transitions.
        var owntracksTopics: OwnTracksTopics? = nil
        /// `feeds[].shard`: only these devices are taken, the others ignored (not drops).
        var shard: FeedShard? = nil
        /// `feeds[].userLevel`: the device id's level naming the broker user (0: none).
        var userLevel = 0
    }

    let connection: BrokerConnection
    let feeds: [Feed]
    let pool: MonitorPool
    let committer: EventCommitter
    let statePublisher: StatePublisher
    let outbox: OutboxPublisher?
    let control: ControlPlane?
    let status: StatusReporter?
    let counters: GatewayCounters
    let logger: Logger
    /// The topics the gateway republishes its own position to: never ingested back.
    let ownEchoTopics: Set<String>
    private let limiter = LogLimiter(interval: 60)
    private let phoneEventsSubscribed = Atomic<Bool>(false)
    /// Feed payloads up to this size are copied out of libmosquitto (`input.maxPayload`).
    private let feedPayloadLimit: Int
    /// Control payloads up to this size are copied: anything a v5 broker delivers under the
    /// announced packet size, so the control plane answers an oversize fence on its error topic.
    private let controlPayloadLimit: Int

    init(connection: BrokerConnection, feeds: [Feed], pool: MonitorPool, committer: EventCommitter,
         statePublisher: StatePublisher, outbox: OutboxPublisher?, control: ControlPlane?, status: StatusReporter?,
         counters: GatewayCounters, logger: Logger, ownEchoTopics: Set<String>) {
        self.connection = connection
        self.feeds = feeds
        self.pool = pool
        self.committer = committer
        self.statePublisher = statePublisher
        self.outbox = outbox
        self.control = control
        self.status = status
        self.counters = counters
        self.logger = logger
        self.ownEchoTopics = ownEchoTopics
        feedPayloadLimit = feeds.map(\.decoder.maxPayload).max() ?? 0
        controlPayloadLimit = Int(connection.client.configuration.maximumPacketSize ?? UInt32(GatewayConfig.Runtime.maxPayload))
    }

    var client: MQTTClient { connection.client }

    /// Subscribes every feed's filter (the client subscribes again after each reconnect) and
    /// takes the client's network thread from now on; `phoneEvents`: also the phones'
    /// transitions (``readPhoneEvents(_:)``).
    func install(phoneEvents: Bool) throws {
        client.setDelegate(self)
        for feed in feeds { try client.subscribe(feed.filter, qos: .atLeastOnce) }
        try readPhoneEvents(phoneEvents)
    }

    /// Subscribes `FILTER/event` of every `owntracks` feed while `on` (a trigger has `phones`),
    /// and unsubscribes when a reload turns it off: the phones' transitions (docs/phones.md),
    /// read only while they are judged. Not before: a broker whose ACL does not let the gateway
    /// read them would refuse it with a warning. Every filter is checked before the first
    /// subscription, so a refusal changes nothing (the config's checks refuse such a feed
    /// first: ``GatewaySetup/phoneFeedProblems(_:triggers:)``).
    func readPhoneEvents(_ on: Bool) throws {
        let filters = feeds.filter(\.owntracks).map { $0.filter + "/event" }
        if on { for filter in filters { _ = try TopicFilter(filter) } }
        guard phoneEventsSubscribed.exchange(on, ordering: .relaxed) != on else { return }
        for filter in filters {
            if on {
                try client.subscribe(filter, qos: .atLeastOnce)
            } else {
                try client.unsubscribe(filter)
            }
        }
    }

    // MARK: On the network thread

    // Each method checks where it runs in debug builds (`MQTTClient.assertOnNetworkThread`).

    /// Copies a payload only when it can be used: a feed update up to `input.maxPayload`
    /// (a larger one reaches ``take(_:)`` empty and is dropped as `oversize`), a control message
    /// up to the announced packet size (larger ones come only from a v3.1.1 broker).
    func acceptsPayload(size: Int, topic: String) -> Bool {
        client.assertOnNetworkThread()
        return size <= feedPayloadLimit || (size <= controlPayloadLimit && control?.handles(topic) == true)
    }

    /// Takes every message that is not the control plane's. Blocks the network thread while
    /// the committer is full (back-pressure to the broker).
    func take(_ message: MQTTMessage) -> Bool {
        client.assertOnNetworkThread()
        if let control, control.handles(message.topic) {
            guard message.isPayloadOmitted else { return false }
            // Never hand an emptied payload on: an empty fence payload means "delete".
            counters.received.add(1, ordering: .relaxed)
            if limiter.allow("oversizeControl", now: WallClock.coarse()) {
                logger.warning("dropped an oversize control message (logged at most once a minute)",
                               ["mqtt.topic": message.topic, "bytes": "\(message.payloadSize)", "limit": "\(controlPayloadLimit)"])
            }
            return true
        }
        // Only while a trigger has `phones` on: otherwise such a topic is what it always was (a
        // feed message, e.g. of an `owntracks/#` feed, dropped as `ignoredType`).
        if pool.pushesPhoneRegions, let device = phoneEventDevice(message.topic) {
            phoneSaid(message, device: device)
            return true
        }
        counters.received.add(1, ordering: .relaxed)
        counters.feedMessages.add(1, ordering: .relaxed)
        // Fixed header, topic length and the v5 properties' length: about 5 bytes.
        counters.feedBytes.add(message.topic.utf8.count + message.payloadSize + 5, ordering: .relaxed)
        if let update = decode(message) {
            pool.submitInBurst(update.update, receivedAt: MonotonicClock.now(), trackerID: update.trackerID, owntracks: update.owntracks,
                               userLevel: update.userLevel)
        }
        return true
    }

    func afterReads() {
        client.assertOnNetworkThread()
        committer.commitBurst()
    }

    func handle(_ event: MQTTClientEvent) {
        client.assertOnNetworkThread()
        switch event {
        case .acknowledged(let ack):
            // A query reply's part first: its id was recorded when it was published, here.
            if control?.queries.acknowledged(ack) == true { return }
            if statePublisher.acknowledged(ack) { return }
            outbox?.acknowledged(ack)
        case .connection(let change):
            switch connection.record(change) {
            case .down?:
                pool.feedsDown(at: MonotonicClock.now())
                outbox?.disconnected()
            case .up?:
                pool.feedsUp(at: MonotonicClock.now())
                control?.connected()
                status?.publish("started")
                statePublisher.republishAll()
                outbox?.connected()
            case nil:
                break
            }
        }
    }

    /// The phone whose `transition` topic (`FEED/event` of an `owntracks` feed) `topic` is.
    private func phoneEventDevice(_ topic: String) -> String? {
        guard topic.hasSuffix("/event") else { return nil }
        let base = String(topic.dropLast("/event".count))
        for feed in feeds where feed.owntracks {
            if let device = feed.decoder.topicFilter.deviceID(in: base) { return device }
        }
        return nil
    }

    /// A phone's transition (docs/phones.md), judged by its device's shard; never an update. A
    /// broken one is dropped like a broken update; the gateway's own transitions
    /// (`output.owntracks`) come back here and are dropped as `ownEcho`.
    private func phoneSaid(_ message: MQTTMessage, device: String) {
        counters.received.add(1, ordering: .relaxed)
        let now = WallClock.coarse()
        switch PhoneTransition.decode(message.payload) {
        case .success(let transition):
            if transition.isGatewaysOwn {
                counters.drop(.ownEcho)
            } else {
                pool.phoneSaid(transition, device: device, now: MonotonicClock.now())
            }
        case .failure(let failure):
            counters.drop(failure.reason)
            if limiter.allow(failure.reason.rawValue, now: now) {
                logger.warning("dropped a phone's transition (logged at most once a minute per reason)",
                               ["mqtt.topic": message.topic, "reason": failure.reason.rawValue, "detail": failure.detail])
            }
        }
    }

    /// The update in `message` for its feed; nil when it is dropped (counted and logged) or
    /// belongs to another gateway's shard.
    private func decode(_ message: MQTTMessage) -> (update: LocationUpdate, trackerID: String?, owntracks: OwnTracksTopics?, userLevel: Int)? {
        if ownEchoTopics.contains(message.topic) {
            counters.drop(.ownEcho)
            return nil
        }
        // Only for `input.maxFutureSkew` and the once-a-minute log: the coarse clock will do.
        let now = WallClock.coarse()
        var drop: InputDrop?
        for feed in feeds {
            switch message.payload.withUnsafeBytes({ feed.decoder.decode(topic: message.topic, payload: $0, size: message.payloadSize, now: now) }) {
            case .success(let decoded):
                if let shard = feed.shard, !shard.contains(decoded.update.device) { return nil }
                return (decoded.update, decoded.trackerID, feed.owntracksTopics, feed.userLevel)
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
            logger.warning("dropped input (logged at most once a minute per reason)",
                           ["mqtt.topic": message.topic, "reason": failure.reason.rawValue, "detail": failure.detail])
        }
        return nil
    }
}

/// The owner of the upstream broker's network thread (delivery `remote` and `both`): its
/// acknowledgements go to the remote outbox, which delivers what waits on every connect.
final class UpstreamLink: MQTTClientDelegate {
    let connection: BrokerConnection
    let outbox: OutboxPublisher

    init(connection: BrokerConnection, outbox: OutboxPublisher) {
        self.connection = connection
        self.outbox = outbox
    }

    /// The upstream's network thread: checked in debug builds, as ``LocalBrokerLink``'s methods.
    func take(_ message: MQTTMessage) -> Bool {
        connection.client.assertOnNetworkThread()
        return false
    }

    func afterReads() { connection.client.assertOnNetworkThread() }

    func handle(_ event: MQTTClientEvent) {
        connection.client.assertOnNetworkThread()
        switch event {
        case .acknowledged(let ack): outbox.acknowledged(ack)
        case .connection(let change):
            switch connection.record(change) {
            case .up?: outbox.connected()
            case .down?: outbox.disconnected()
            case nil: break
            }
        }
    }
}
