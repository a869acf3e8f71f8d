internal import CMosquitto

/// The broker's answer to one publish, reported by the message id `MQTTClient.publish`
/// returned. QoS 1: the PUBACK (with its v5 reason code; v3.1.1 has none and reports 0).
/// QoS 0: reported once the message was written to the socket, always with 0.
public struct MQTTAcknowledgement: Sendable, Equatable {
    /// The message id `publish` returned.
    public var messageId: Int32
    /// The MQTT v5 reason code: below 0x80 success (0 = success, 0x10 = no matching
    /// subscribers), 0x80 and above a failure (0x87 not authorized, 0x97 quota exceeded...).
    public var reasonCode: Int32

    /// An acknowledgement from its parts.
    public init(messageId: Int32, reasonCode: Int32) {
        self.messageId = messageId
        self.reasonCode = reasonCode
    }

    /// Whether the broker accepted the message (reason code below 0x80).
    public var isSuccess: Bool { reasonCode < 0x80 }

    /// The reason code as text (`mosquitto_reason_string`), e.g. "Not authorized".
    public var reason: String { String(cString: mosquitto_reason_string(reasonCode)) }
}
