/// A device id pattern from a trigger's `devices` list.
///
/// `*` matches any run of characters within one topic level (no `/`), `**` any run across
/// levels (`/` included), `?` exactly one character other than `/`; everything else matches
/// itself. Matching is over Unicode scalars and takes O(pattern × id) time, never backtracks.
/// `fleet/**` matches `fleet/a` and `fleet/a/b` but not `fleet`.
public struct DeviceGlob: Sendable, Equatable, CustomStringConvertible {
    enum Token: Equatable {
        case scalar(Unicode.Scalar)
        case one
        case level
        case any
    }

    /// The pattern as written.
    public let pattern: String
    let tokens: [Token]

    /// Reads `pattern`; refuses an empty pattern and three or more `*` in a row.
    public init(_ pattern: String) throws(GlobError) {
        guard !pattern.isEmpty else { throw GlobError("a device pattern must not be empty") }
        var tokens: [Token] = []
        let scalars = Array(pattern.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if s == "*" {
                var run = 0
                while i < scalars.count, scalars[i] == "*" { run += 1; i += 1 }
                guard run <= 2 else {
                    throw GlobError("\"\(pattern)\": use * (one level) or ** (any levels), not \(run) stars in a row")
                }
                tokens.append(run == 2 ? .any : .level)
                continue
            }
            tokens.append(s == "?" ? .one : .scalar(s))
            i += 1
        }
        self.pattern = pattern
        self.tokens = tokens
    }

    public var description: String { pattern }

    /// True if `device` matches the whole pattern.
    public func matches(_ device: String) -> Bool {
        let text = Array(device.unicodeScalars)
        // reach[j]: the pattern prefix read so far can match text[0..<j].
        var reach = [Bool](repeating: false, count: text.count + 1)
        reach[0] = true
        for token in tokens {
            var next = [Bool](repeating: false, count: text.count + 1)
            switch token {
            case .scalar(let s):
                for j in 0..<text.count where reach[j] && text[j] == s { next[j + 1] = true }
            case .one:
                for j in 0..<text.count where reach[j] && text[j] != "/" { next[j + 1] = true }
            case .level:
                for j in 0...text.count {
                    if reach[j] { next[j] = true }
                    if j > 0, next[j - 1], text[j - 1] != "/" { next[j] = true }
                }
            case .any:
                var seen = false
                for j in 0...text.count {
                    if reach[j] { seen = true }
                    next[j] = seen
                }
            }
            reach = next
        }
        return reach[text.count]
    }
}

/// Why a device pattern cannot be used.
public struct GlobError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
