import MQTT

/// The dispatcher's control plane on the main broker: runtime fences
/// (`PREFIX/fences/LAYER/FENCE_ID`) and queries (`PREFIX/query/GATEWAY_ID`). The ingest hands
/// it every message first; it takes the ones on its topics.
struct ControlPlane: Sendable {
    let fences: RuntimeFences
    let queries: QueryService

    /// Subscribes to the control topics (again after every reconnect, by the client).
    func subscribe(_ client: MQTTClient) throws {
        try client.subscribe(fences.filter, qos: .atLeastOnce)
        try client.subscribe(queries.topic, qos: .atLeastOnce)
    }

    /// On every connect: subscribe to the fence topics afresh so the broker sends every
    /// retained fence again (a persistent v5 session would otherwise skip them), which makes
    /// the broker's retained store the source of truth after a restart or an outage.
    func connected(_ client: MQTTClient) {
        try? client.unsubscribe(fences.filter)
        try? client.subscribe(fences.filter, qos: .atLeastOnce)
    }

    /// Whether `topic` is a control topic (its messages go to ``take(_:)``).
    func handles(_ topic: String) -> Bool {
        topic == queries.topic || fences.handles(topic)
    }

    /// Takes `message` if it is on a control topic; false leaves it to the feeds.
    func take(_ message: MQTTMessage) async -> Bool {
        if message.topic == queries.topic {
            await queries.take(message)
            return true
        }
        if fences.handles(message.topic) {
            fences.take(message)
            return true
        }
        return false
    }
}
