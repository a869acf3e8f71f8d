import GeotriggerCore
import MQTT

/// The dispatcher's control plane on the main broker: runtime fences
/// (`PREFIX/fences/LAYER/FENCE_ID`), expected arrivals (`PREFIX/expect/ID`), trips
/// (`PREFIX/trips/TRIP_ID`) and queries
/// (`PREFIX/query/GATEWAY_ID`). ``LocalBrokerLink``
/// leaves the messages on these topics in the client's queue; this service takes them there,
/// in order, on a task (they need to `await`).
final class ControlPlane: Service, Sendable {
    let name = "control"
    let client: MQTTClient
    let fences: RuntimeFences
    let queries: QueryService
    let counters: GatewayCounters
    let expectations: Expectations?
    let trips: Trips?
    /// Told by ``run()`` when the queue is empty, for ``shutdown()``'s wait.
    private let drained = Changes()

    init(
        client: MQTTClient, fences: RuntimeFences, queries: QueryService, counters: GatewayCounters, expectations: Expectations? = nil,
        trips: Trips? = nil
    ) {
        self.trips = trips
        self.client = client
        self.fences = fences
        self.queries = queries
        self.counters = counters
        self.expectations = expectations
    }

    /// Subscribes to the control topics (again after every reconnect, by the client).
    func subscribe() throws {
        try client.subscribe(fences.filter, qos: .atLeastOnce)
        try client.subscribe(queries.topic, qos: .atLeastOnce)
        if let expectations { try client.subscribe(expectations.filter, qos: .atLeastOnce) }
        if let trips { try client.subscribe(trips.filter, qos: .atLeastOnce) }
    }

    /// On every connect: subscribe to the fence topics afresh so the broker sends every
    /// retained fence again (a persistent v5 session would otherwise skip them), which makes
    /// the broker's retained store the source of truth after a restart or an outage.
    func connected() {
        try? client.unsubscribe(fences.filter)
        try? client.subscribe(fences.filter, qos: .atLeastOnce)
        if let expectations {
            try? client.unsubscribe(expectations.filter)
            try? client.subscribe(expectations.filter, qos: .atLeastOnce)
        }
        if let trips {
            try? client.unsubscribe(trips.filter)
            try? client.subscribe(trips.filter, qos: .atLeastOnce)
        }
    }

    /// Whether `topic` is a control topic (its messages are left to ``run()``).
    func handles(_ topic: String) -> Bool {
        topic == queries.topic || fences.handles(topic) || expectations?.handles(topic) == true || trips?.handles(topic) == true
    }

    /// Takes the control messages from the client's queue.
    func run() async throws {
        for await message in client.messages {
            counters.received.add(1, ordering: .relaxed)
            if message.topic == queries.topic {
                queries.enqueue(message)
            } else if fences.handles(message.topic) {
                await fences.queueChange(message)
            } else if let expectations, expectations.handles(message.topic) {
                expectations.apply(message)
            } else if let trips, trips.handles(message.topic) {
                trips.apply(message)
            }
            if client.inboundDepth == 0 { drained.changed() }
        }
    }

    func shutdown() async {
        // Let what was received drain. The subscriptions stay in the broker's session: while
        // the gateway is down the broker queues the feeds' QoS 1 updates for it, and the next
        // start processes them (unsubscribing here would make the broker drop them).
        _ = await drained.wait(until: { client.inboundDepth == 0 }, by: MonotonicClock.now() + 3)
    }
}
