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

    /// Throws a `MosquittoError` unless `code` is `MOSQ_ERR_SUCCESS`. Every libmosquitto
    /// return code goes through here. `call` is built only for an error (a publish names its
    /// topic: no string is made per publish).
    static func check(_ code: Int32, _ call: @autoclosure () -> String) throws {
        if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
            throw MosquittoError(code: code, call: call())
        }
    }
}
