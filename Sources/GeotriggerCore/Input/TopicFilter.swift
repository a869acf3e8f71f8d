/// An MQTT topic filter (`fleet/+/+/location`, `owntracks/#`) that matches topics and yields
/// the levels its wildcards matched: a feed's device id is those levels joined with `/`.
public struct TopicFilter: Sendable, Equatable, CustomStringConvertible {
    enum Level: Sendable, Equatable {
        case literal(String)
        case single
        case multi
    }

    public let description: String
    let levels: [Level]

    /// Parses `filter`; a `#` must be the last level and `+`/`#` must fill a whole level.
    public init(_ filter: String) throws(InputDrop) {
        guard !filter.isEmpty else { throw InputDrop(.badDeviceId, "a topic filter cannot be empty") }
        var levels: [Level] = []
        let parts = filter.split(separator: "/", omittingEmptySubsequences: false)
        for (i, part) in parts.enumerated() {
            switch part {
            case "+": levels.append(.single)
            case "#":
                guard i == parts.count - 1 else {
                    throw InputDrop(.badDeviceId, "'#' must be the last level of topic filter '\(filter)'")
                }
                levels.append(.multi)
            default:
                guard !part.contains("+"), !part.contains("#") else {
                    throw InputDrop(.badDeviceId, "'+' and '#' must fill a whole level in topic filter '\(filter)'")
                }
                levels.append(.literal(String(part)))
            }
        }
        self.description = filter
        self.levels = levels
    }

    /// True if the filter has a wildcard (so that it can yield a device id).
    public var hasWildcard: Bool {
        levels.contains {
            if case .literal = $0 { return false }
            return true
        }
    }

    /// The device id for `topic`: the levels matched by the wildcards joined with `/`,
    /// or nil if the topic does not match. Topics starting with `$` never match a leading wildcard.
    public func deviceID(in topic: String) -> String? {
        var utf8 = topic.utf8[...]
        var matched: [Substring.UTF8View] = []
        for (i, level) in levels.enumerated() {
            switch level {
            case .multi:
                if i == 0, utf8.first == UInt8(ascii: "$") { return nil }
                matched.append(utf8)
                return TopicFilter.join(matched)
            case .single, .literal:
                let end = utf8.firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
                let part = utf8[utf8.startIndex..<end]
                if case .literal(let text) = level {
                    guard part.elementsEqual(text.utf8) else { return nil }
                } else {
                    if i == 0, part.first == UInt8(ascii: "$") { return nil }
                    matched.append(Substring(part).utf8)
                }
                if end == utf8.endIndex {
                    // Topic ended: it matches only if this was the last level, or if a final `#`
                    // follows (which also matches the parent level).
                    let rest = levels.dropFirst(i + 1)
                    if rest.isEmpty || (rest.count == 1 && rest.first == .multi) {
                        return TopicFilter.join(matched)
                    }
                    return nil
                }
                utf8 = utf8[utf8.index(after: end)...]
            }
        }
        return nil  // the topic has more levels than the filter
    }

    private static func join(_ parts: [Substring.UTF8View]) -> String {
        var result = ""
        for (i, part) in parts.enumerated() {
            if i > 0 { result += "/" }
            result += String(Substring(part))
        }
        return result
    }
}
