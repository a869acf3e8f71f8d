internal import CMosquitto

/// A failure reported by libmosquitto: the raw code, libmosquitto's message for it, and the
/// call that returned it. Unknown codes are kept as they are.
public struct MosquittoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The raw `MOSQ_ERR_*` code (or a CONNACK / reason code where `call` says so).
    public var code: Int32
    /// libmosquitto's text for it (`mosquitto_strerror`, which reads errno for
    /// `MOSQ_ERR_ERRNO`, or the CONNACK / reason string).
    public var message: String
    /// The libmosquitto call that failed, e.g. `mosquitto_publish_v5`.
    public var call: String

    /// An error from its parts.
    public init(code: Int32, message: String, call: String) {
        self.code = code
        self.message = message
        self.call = call
    }

    /// An error for a `MOSQ_ERR_*` code, with `mosquitto_strerror`'s text.
    init(code: Int32, call: String) {
        self.init(code: code, message: String(cString: mosquitto_strerror(code)), call: call)
    }

    public var description: String { "\(call): \(message) (\(code))" }

    /// Whether the code is `MOSQ_ERR_NO_CONN` (not connected to the broker right now).
    public var isNoConnection: Bool { code == Int32(MOSQ_ERR_NO_CONN.rawValue) }

    /// Whether a publish that failed with this code would fail again with the same message
    /// whatever the connection's state: too large for libmosquitto or for the broker's Maximum
    /// Packet Size, a topic or property libmosquitto refuses, a QoS the broker does not
    /// support. (Not connected, out of memory or a socket error are worth another try.)
    public var isPermanentForPublish: Bool {
        [MOSQ_ERR_INVAL, MOSQ_ERR_PAYLOAD_SIZE, MOSQ_ERR_OVERSIZE_PACKET, MOSQ_ERR_MALFORMED_UTF8,
         MOSQ_ERR_QOS_NOT_SUPPORTED, MOSQ_ERR_NOT_SUPPORTED, MOSQ_ERR_DUPLICATE_PROPERTY]
            .contains { code == Int32($0.rawValue) }
    }

    /// Throws a `MosquittoError` unless `code` is `MOSQ_ERR_SUCCESS`. Every libmosquitto
    /// return code goes through here. `call` is built only for an error (a publish names its
    /// topic: no string is made per publish).
    static func check(_ code: Int32, _ call: @autoclosure () -> String) throws {
        if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
            throw MosquittoError(code: code, call: call())
        }
    }
}
