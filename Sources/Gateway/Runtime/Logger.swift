#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A logger in swift-log's shape: `Logger(label:)`, levels, `key=value` metadata, one line per
/// record on standard error (journald adds the time stamp).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }

        var name: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }
    }

    public typealias Metadata = KeyValuePairs<String, String>

    public let label: String

    /// The lowest level written, for every logger (`GEOTRIGGER_LOG_LEVEL`, default `info`).
    public static let threshold: Mutex<Level> = Mutex(Logger.levelFromEnvironment())

    public init(label: String) { self.label = label }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ metadata: Metadata = [:]) {
        guard level >= Logger.threshold.withLock({ $0 }) else { return }
        var line = "\(level.name) [\(label)] " + Logger.escaped(message())
        for (key, value) in metadata {
            line += " \(key)=" + Logger.quoted(value)
        }
        printError(line)
    }

    /// `value` as one metadata value: as it is, or in double quotes when it is empty or holds a
    /// space, `"`, `=`, `\` or a control character. Values often come from clients (topics,
    /// payload details), so none can end the line or forge a `key=value` of its own.
    static func quoted(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { $0 != " " && $0 != "\"" && $0 != "=" && $0 != "\\" && !isControl($0) }
        return plain ? value : "\"" + escaped(value, quote: true) + "\""
    }

    /// `text` with control characters written as escapes (`\n`, `\u{1b}`), and with `quote`
    /// also `"` and `\`: a record stays one line.
    static func escaped(_ text: String, quote: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || (quote && ($0 == "\"" || $0 == "\\")) }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"" where quote: out += "\\\""
            case "\\" where quote: out += "\\\\"
            case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// C0 and C1 control characters, DEL, and the Unicode line and paragraph separators.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool { ControlCharacters.contains(scalar) }

    public func trace(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.trace, m(), md) }
    public func debug(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.debug, m(), md) }
    public func info(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.info, m(), md) }
    public func notice(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.notice, m(), md) }
    public func warning(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.warning, m(), md) }
    public func error(_ m: @autoclosure () -> String, _ md: Metadata = [:]) { log(.error, m(), md) }

    private static func levelFromEnvironment() -> Level {
        guard let raw = getenv("GEOTRIGGER_LOG_LEVEL") else { return .info }
        let name = String(decoding: UnsafeRawBufferPointer(start: raw, count: strlen(raw)), as: UTF8.self)
        return Level.allCases.first { $0.name == name.lowercased() } ?? .info
    }
}

/// Lets a repeated complaint through at most once per interval per key (docs/topics-and-payloads.md "Inputs": bad
/// input is "logged at most once per reason per minute"). Thread-safe.
public final class LogLimiter: Sendable {
    private let interval: Double
    private let last = Mutex<[String: Double]>([:])

    public init(interval: Double = 60) { self.interval = interval }

    /// True if a message for `key` may be logged at `now` (seconds); records it if so.
    public func allow(_ key: String, now: Double) -> Bool {
        last.withLock { seen in
            if let t = seen[key], now - t < interval { return false }
            seen[key] = now
            return true
        }
    }
}
