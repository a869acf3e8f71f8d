/// A message received from the broker: copied out of libmosquitto's buffers, so it is a plain
/// value that any thread may keep.
public struct MQTTMessage: Sendable, Equatable {
    /// The topic it was published to.
    public var topic: String
    /// The payload bytes: empty when the client's delegate declined to copy a payload this
    /// large (``MQTTClientDelegate/acceptsPayload(size:topic:)``; see ``isPayloadOmitted``).
    public var payload: [UInt8]
    /// The payload's length as the broker sent it (`payload.count` unless it was omitted).
    public var payloadSize: Int
    /// The QoS it was delivered with.
    public var qos: MQTTQoS
    /// Whether it came from the broker's retained store (sent on subscribe).
    public var retain: Bool
    /// MQTT v5 response topic, if the publisher set one.
    public var responseTopic: String?
    /// MQTT v5 correlation data, if the publisher set it.
    public var correlationData: [UInt8]?

    /// A message from its parts.
    public init(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, payloadSize: Int? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.payloadSize = max(payloadSize ?? payload.count, payload.count)
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }

    /// Whether the payload was too large to copy: `payload` is empty, `payloadSize` says how
    /// long it was.
    public var isPayloadOmitted: Bool { payloadSize > payload.count }

    /// The payload decoded as UTF-8 (invalid sequences repaired), for logs and tests.
    public var payloadText: String { String(decoding: payload, as: UTF8.self) }
}

/// MQTT v5 properties of an outgoing PUBLISH, for request/response.
public struct MQTTPublishProperties: Sendable, Equatable {
    /// Where the receiver should send its answer.
    public var responseTopic: String?
    /// Opaque bytes the receiver copies into its answer.
    public var correlationData: [UInt8]?

    /// Properties from their parts.
    public init(responseTopic: String? = nil, correlationData: [UInt8]? = nil) {
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }
}
