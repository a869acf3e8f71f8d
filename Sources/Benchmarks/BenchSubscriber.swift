import Gateway
import GeotriggerCore
import MQTT
import Synchronization

/// The benchmark's receiving side: one MQTT connection that records what arrives.
///
/// - raw pass-through: counts the updates on the feed's topics and records when each arrived;
/// - gateway: records each event's device, `position.time` and arrival time (for the latency
///   of its crossing update), and the counters of every gateway status;
/// - trips (with `tripsPrefix`): counts the trips' events apart from the others, records when
///   each progress message arrived, the trips' errors and the `trips` query's replies.
final class BenchSubscriber: Sendable {
    /// One status of the gateway, as received.
    struct StatusSample: Sendable {
        var time: Double
        var status: String
        var received: Int
        var accepted: Int
        var dropped: Int
        var events: Int
        var queueDepth: Int
    }

    /// One event, as received.
    struct EventArrival: Sendable {
        var device: Int
        var step: Int
        var time: Double
        /// The event's `emitted` (wall clock, milliseconds), nil if absent.
        var emitted: Double?
    }

    struct State: Sendable {
        var count = 0
        var first = 0.0
        var last = 0.0
        /// Arrival time of every update, in arrival order (raw phase).
        var arrivals: [Double] = []
        var events: [EventArrival] = []
        var unmatchedEvents = 0
        var statuses: [StatusSample] = []
        /// Arrival time of every non-empty message on `PREFIX/trips/+/progress`.
        var progressTimes: [Double] = []
        /// Events on `PREFIX/events/trips/+`, by type.
        var tripEvents: [String: Int] = [:]
        /// `trip: error` of each message on `PREFIX/trips/+/error`.
        var tripErrors: [String] = []
        /// The replies on `PREFIX/query/GATEWAY_ID/reply`, in arrival order.
        var tripReplies: [TripsReply] = []
    }

    /// A reply to the `trips` query: how many are open, and the states of those listed.
    struct TripsReply: Sendable, Equatable {
        var count: Int
        var states: [String: Int]
    }

    let client: MQTTClient
    let generator: LoadGenerator
    let statusTopic: String?
    /// `PREFIX/` of the trip topics and `PREFIX/query/GATEWAY_ID/reply`, when trips are watched.
    let tripsPrefix: String?
    let queryReplyTopic: String?
    let state = Mutex(State())
    private let subscribed = LoadGenerator.CounterBox()

    /// A subscriber with a fresh session; nothing is subscribed until `start(filters:)`.
    init(
        host: String, port: Int, clientID: String, generator: LoadGenerator, statusTopic: String?, tripsPrefix: String? = nil,
        queryReplyTopic: String? = nil
    ) throws {
        var configuration = MQTTConfiguration(host: host, port: port, clientId: clientID, cleanStart: true, inboundCapacity: 4096)
        configuration.sessionExpiry = 0
        // libmosquitto's own reads: the raw pass-through is measured with a stock client.
        configuration.bufferedReads = false
        let counter = subscribed
        client = try MQTTClient(configuration, onConnectionEvent: { event in
            if case .subscribed = event { counter.value.add(1, ordering: .relaxed) }
        })
        self.generator = generator
        self.statusTopic = statusTopic
        self.tripsPrefix = tripsPrefix
        self.queryReplyTopic = queryReplyTopic
    }

    /// Connects, subscribes to `filters` and waits (up to 10 s) for the broker's answers.
    func start(filters: [String], qos: MQTTQoS) async throws {
        client.setInlineHandler { [self] message in
            record(message)
            return true
        }
        for filter in filters { try client.subscribe(filter, qos: qos) }
        try client.start()
        let deadline = MonotonicClock.now() + 10
        while subscribed.value.load(ordering: .relaxed) < 1, MonotonicClock.now() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard subscribed.value.load(ordering: .relaxed) >= 1 else {
            throw UsageError("the broker did not answer the subscription to \(filters.joined(separator: ", ")) within 10 s")
        }
    }

    /// Waits until the client stops (run it in a task of its own). The messages are recorded
    /// on the client's network thread as they arrive (`start` sets that up): the arrival time
    /// is not delayed by a hop to a task, and the subscriber costs no wake-up per message.
    func consume() async {
        for await message in client.messages { record(message) }
    }

    private func record(_ message: MQTTMessage) {
        let now = MonotonicClock.now()
        if let statusTopic, message.topic == statusTopic {
            if let sample = BenchSubscriber.status(message.payload, time: now) {
                state.withLock { $0.statuses.append(sample) }
            }
            return
        }
        if let tripsPrefix, recordTrips(message, prefix: tripsPrefix, time: now) { return }
        if message.topic.contains("/events/") {
            let arrival = event(message.payload, time: now)
            state.withLock { s in
                if let arrival { s.events.append(arrival) } else { s.unmatchedEvents += 1 }
            }
            return
        }
        state.withLock { s in
            if s.count == 0 { s.first = now }
            s.count += 1
            s.last = now
            s.arrivals.append(now)
        }
    }

    /// Records `message` if it is a trip's (progress, error, event) or a query reply; false
    /// for any other.
    private func recordTrips(_ message: MQTTMessage, prefix: String, time: Double) -> Bool {
        let topic = message.topic
        if topic == queryReplyTopic {
            let object = try? JSONReader.parse(message.payload, file: "reply", dialect: .json).value.objectValue
            var states: [String: Int] = [:]
            for trip in object?["trips"]?.arrayValue ?? [] {
                states[trip.objectValue?["state"]?.stringValue ?? "?", default: 0] += 1
            }
            // A reply that is not a trips list (an error) counts as none open, its text kept.
            let count = object?["count"]?.numberValue.map { Int($0) } ?? -1
            state.withLock { s in
                s.tripReplies.append(TripsReply(count: count, states: states))
                if count < 0 { s.tripErrors.append("query: " + String(decoding: message.payload, as: UTF8.self)) }
            }
            return true
        }
        if topic.hasPrefix(prefix + "events/trips/") {
            let type = (try? JSONReader.parse(message.payload, file: "event", dialect: .json).value.objectValue)?["type"]?.stringValue ?? "?"
            state.withLock { $0.tripEvents[type, default: 0] += 1 }
            return true
        }
        guard topic.hasPrefix(prefix + "trips/") else { return false }
        if topic.hasSuffix("/progress") {
            if !message.payload.isEmpty { state.withLock { $0.progressTimes.append(time) } }
        } else if topic.hasSuffix("/error") {
            let text = String(decoding: message.payload, as: UTF8.self)
            state.withLock { $0.tripErrors.append(text) }
        }
        return true
    }

    /// The device number and step of an event (by `device` and `position.time`).
    private func event(_ payload: [UInt8], time: Double) -> EventArrival? {
        guard let object = try? JSONReader.parse(payload, file: "event", dialect: .json).value.objectValue,
            let device = object["device"]?.stringValue, let number = generator.deviceNumber(device[...]),
            let timeText = object["position"]?.objectValue?["time"]?.stringValue,
            let fixTime = ISO8601Time.parse(timeText)
        else { return nil }
        let emitted = object["emitted"]?.stringValue.flatMap { ISO8601Time.parse($0) }
        return EventArrival(device: number, step: generator.step(fixTime: fixTime), time: time, emitted: emitted)
    }

    /// The counters of a gateway status payload.
    static func status(_ payload: [UInt8], time: Double) -> StatusSample? {
        guard let object = try? JSONReader.parse(payload, file: "status", dialect: .json).value.objectValue else {
            return nil
        }
        let counters = object["counters"]?.objectValue
        func n(_ key: String) -> Int { Int(counters?[key]?.numberValue ?? 0) }
        let dropped = counters?["dropped"]?.objectValue?.entries.reduce(0) { $0 + Int($1.value.numberValue ?? 0) } ?? 0
        return StatusSample(
            time: time, status: object["status"]?.stringValue ?? "", received: n("received"), accepted: n("accepted"),
            dropped: dropped, events: n("events"), queueDepth: n("queueDepth"))
    }

    var count: Int { state.withLock { $0.count } }
    var lastStatus: StatusSample? { state.withLock { $0.statuses.last } }
    var eventCount: Int { state.withLock { $0.events.count + $0.unmatchedEvents } }
}
