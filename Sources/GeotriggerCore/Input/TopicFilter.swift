/// An MQTT topic filter (`fleet/+/+/location`, `owntracks/#`) that matches topics and yields
/// the levels its wildcards matched: a feed's device id is those levels joined with `/`.
public struct TopicFilter: Sendable, Equatable, CustomStringConvertible {
    enum Level: Sendable, Equatable {
        /// A level without wildcards, as UTF-8: topic levels are compared with it byte for byte.
        case literal([UInt8])
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
                levels.append(.literal(Array(part.utf8)))
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

    /// The topic that this filter gives the id `device` (``deviceID(in:)`` backwards): each `+`
    /// takes one level of the id, a final `#` the rest; nil when the id's levels do not fill the
    /// filter's wildcards. Not on the per-update path (a phone's command, a transition).
    public func topic(ofDevice device: String) -> String? {
        guard !device.isEmpty else { return nil }
        var parts = device.split(separator: "/", omittingEmptySubsequences: false)[...]
        var topic: [Substring] = []
        for (written, level) in zip(description.split(separator: "/", omittingEmptySubsequences: false), levels) {
            switch level {
            case .literal: topic.append(written)
            case .single:
                guard let part = parts.popFirst() else { return nil }
                topic.append(part)
            case .multi:
                topic.append(contentsOf: parts)
                parts = []
            }
        }
        return parts.isEmpty ? topic.joined(separator: "/") : nil
    }

    /// The device id for `topic`: the levels matched by the wildcards joined with `/`,
    /// or nil if the topic does not match. Topics starting with `$` never match a leading wildcard.
    ///
    /// It runs for every received message, so it walks the topic's UTF-8 once, in place, and
    /// makes only the result string.
    public func deviceID(in topic: String) -> String? {
        var topic = topic  // withUTF8 needs a mutable string; a native one is not copied
        return topic.withUTF8 { deviceID(inUTF8: $0) }
    }

    private func deviceID(inUTF8 topic: UnsafeBufferPointer<UInt8>) -> String? {
        var matched = MatchedLevels()
        var start = 0  // of the topic level that filter level `n` is matched against
        for (n, level) in levels.enumerated() {
            if case .multi = level {
                if n == 0, start < topic.count, topic[start] == UInt8(ascii: "$") { return nil }
                matched.add(start..<topic.count, in: topic)
                return matched.joined(in: topic)
            }
            var end = start
            while end < topic.count, topic[end] != UInt8(ascii: "/") { end += 1 }
            if case .literal(let text) = level {
                guard end - start == text.count, UnsafeBufferPointer(rebasing: topic[start..<end]).elementsEqual(text) else {
                    return nil
                }
            } else {
                if n == 0, end > start, topic[start] == UInt8(ascii: "$") { return nil }
                matched.add(start..<end, in: topic)
            }
            if end == topic.count {
                // Topic ended: it matches only if this was the last level, or if a final `#`
                // follows (which also matches the parent level).
                let rest = levels.count - (n + 1)
                if rest == 0 || (rest == 1 && levels[n + 1] == .multi) { return matched.joined(in: topic) }
                return nil
            }
            start = end + 1
        }
        return nil  // the topic has more levels than the filter
    }

    /// The topic levels matched by wildcards so far, to be joined with `/`. Wildcard levels
    /// next to each other in the filter (`owntracks/+/+`, `fleet/#`) are next to each other in
    /// the topic too, so their join is one slice of it, `/` and all, and costs nothing until
    /// the result is made. Only a literal level between wildcards (`a/+/b/+`) ends a slice.
    private struct MatchedLevels {
        /// The current slice of adjacent matched levels.
        var run: Range<Int>?
        /// The slices before `run`, joined, once a literal level has separated two.
        var earlier: String?

        mutating func add(_ level: Range<Int>, in topic: UnsafeBufferPointer<UInt8>) {
            guard let current = run else {
                run = level
                return
            }
            if level.lowerBound == current.upperBound + 1 {  // only the `/` between them
                run = current.lowerBound..<level.upperBound
            } else {
                earlier = TopicFilter.join(earlier, current, in: topic)
                run = level
            }
        }

        func joined(in topic: UnsafeBufferPointer<UInt8>) -> String {
            guard let run else { return "" }
            return TopicFilter.join(earlier, run, in: topic)
        }
    }

    private static func join(_ earlier: String?, _ slice: Range<Int>, in topic: UnsafeBufferPointer<UInt8>) -> String {
        let text = String(decoding: UnsafeBufferPointer(rebasing: topic[slice]), as: UTF8.self)
        guard let earlier else { return text }
        return earlier + "/" + text
    }
}
