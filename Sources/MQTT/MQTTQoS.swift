/// MQTT quality of service.
public enum MQTTQoS: Int32, Sendable, Equatable, Comparable {
    /// At most once: no acknowledgement.
    case atMostOnce = 0
    /// At least once: the receiver acknowledges with PUBACK.
    case atLeastOnce = 1
    /// Exactly once (supported by libmosquitto; the gateway uses 0 and 1).
    case exactlyOnce = 2

    public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}
