internal import CGPS

#if canImport(Glibc)
import Glibc
#endif

/// A failed libgps call: the raw code, libgps's (or the C library's) text for it, and the call.
///
/// Negative codes are libgps's own (`NL_NOCONNECT` = -6: "can't connect to host/port pair");
/// positive codes are `errno` values; 0 means gpsd closed the connection.
public struct GPSDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The raw code libgps reported (kept even when unknown to this wrapper).
    public var code: Int32
    /// The text for `code`: `gps_errstr` for libgps codes, `strerror` for `errno` values.
    public var message: String
    /// The call that failed, with its target, e.g. `gps_open(127.0.0.1:2947)`.
    public var call: String

    public init(code: Int32, message: String, call: String) {
        self.code = code
        self.message = message
        self.call = call
    }

    /// The error for `code` as returned by `call`, with the text libgps gives it.
    init(code: Int32, call: String) {
        self.init(code: code, message: GPSDError.text(for: code), call: call)
    }

    public var description: String { "gpsd: \(call) failed: \(message) (code \(code))" }

    /// Checks a libgps return value: 0 or more is success; below 0 throws with the code libgps
    /// left in `errno` (libgps stores its own negative codes there), or `result` if `errno` is 0.
    @discardableResult
    static func check(_ result: Int32, _ call: @autoclosure () -> String) throws(GPSDError) -> Int32 {
        guard result < 0 else { return result }
        let code = errno
        throw GPSDError(code: code != 0 ? code : result, call: call())
    }

    private static func text(for code: Int32) -> String {
        if code == 0 { return "connection closed by gpsd" }
        if code > 0, let text = strerror(code) { return String(cString: text) }
        guard let text = gps_errstr(code) else { return "unknown libgps error" }
        return String(cString: text)
    }
}
