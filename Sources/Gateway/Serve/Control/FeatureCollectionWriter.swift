import GeotriggerCore

/// The `features` query's reply, written straight to bytes as it grows (docs/control-plane.md
/// "Queries"): `{"type": "FeatureCollection", "features": [...], "truncated": bool}`, one
/// GeoJSON Feature per fence, and never more than ``budget`` bytes.
///
/// With ``partBytes`` the reply is split into parts, each such an object with `"part": I,
/// "parts": K` after `truncated` and at most `partBytes` bytes (a feature too large for that goes
/// alone in its part: a feature is never split); all the parts together stay within ``budget``. The features are in the order appended, so the parts' features read in order
/// are those of the one-message reply.
struct FeatureCollectionWriter {
    /// The most bytes a reply may take: under the 1 MiB `message_size_limit` of the shipped broker
    /// config (`deploy/mosquitto/`), with room for the topic and the v5 properties.
    static let replyBudget = 900 * 1024

    /// The most bytes the finished object may take, or all its parts together, each counted
    /// with its ``appended`` bytes.
    let budget: Int
    /// The most bytes a part may take (its ``appended`` bytes included); nil: one message.
    let partBytes: Int?
    /// The bytes the caller adds to every message after it is finished (the query's
    /// correlation), counted against ``budget`` and ``partBytes``.
    let appended: Int
    /// The message (or the part) being written.
    private var bytes: [UInt8] = []
    /// The parts written before ``bytes``, each without its end.
    private var closed: [[UInt8]] = []
    /// The bytes ``closed`` will take, each part counted with ``partTailRoom`` and ``appended``.
    private var closedBytes = 0
    /// The features written so far.
    private(set) var count = 0
    /// The features in ``bytes``.
    private var countInPart = 0

    static let head = #"{"type":"FeatureCollection","features":["#
    /// The longest end ``finish(truncated:)`` writes.
    static let longestTail = #"],"truncated":false}"#.utf8.count

    /// The room a part keeps for its end: `"part"` and `"parts"` each as wide as ``budget``
    /// written out (there are never more parts than bytes), since the count of parts is known
    /// only when the last is written.
    let partTailRoom: Int

    /// The bytes of a part with no feature and its appended bytes: the least `partBytes` that
    /// leaves room for features.
    var emptyPartBytes: Int { Self.head.utf8.count + partTailRoom + appended }

    init(budget: Int = FeatureCollectionWriter.replyBudget, partBytes: Int? = nil, appended: Int = 0) {
        self.budget = budget
        self.partBytes = partBytes
        self.appended = appended
        partTailRoom = Self.partTail(truncated: false, part: budget, parts: budget).count
        bytes.reserveCapacity(min(partBytes ?? budget, 64 * 1024))
        bytes.append(contentsOf: Self.head.utf8)
    }

    static func partTail(truncated: Bool, part: Int, parts: Int) -> [UInt8] {
        Array(#"],"truncated":\#(truncated),"part":\#(part),"parts":\#(parts)}"#.utf8)
    }

    /// Appends `fence` as a Feature: `id` the fence id; `properties` its layer, id, name (null
    /// without one), `buffer` (nil: null, no trigger watches it), `triggers`, its own
    /// properties (as cut to 4 KiB) and `"truncated": true` when its name or properties were
    /// cut; `geometry` as GeoJSON. With ``partBytes`` a feature that would take its part past
    /// that starts the next part. Returns false, writing nothing, when the feature would take
    /// the finished reply (all its parts) past the budget.
    mutating func append(_ fence: Fence, buffer: Double?, triggers: [String]) -> Bool {
        let start = bytes.count
        if countInPart > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: #"{"type":"Feature","id":"#.utf8)
        JSONValue.string(fence.id).write(to: &bytes)
        var properties: JSONObject = [
            "layer": .string(fence.layer), "fence": .string(fence.id), "name": fence.name.map(JSONValue.string) ?? .null,
            "buffer": buffer.map(JSONValue.number) ?? .null, "triggers": .array(triggers.map(JSONValue.string)),
            "properties": .object(fence.properties),
        ]
        if fence.truncated { properties["truncated"] = .bool(true) }
        bytes.append(contentsOf: #","properties":"#.utf8)
        JSONValue.object(properties).write(to: &bytes)
        bytes.append(contentsOf: #","geometry":"#.utf8)
        fence.geometry.writeGeoJSON(to: &bytes)
        bytes.append(UInt8(ascii: "}"))

        guard let partBytes else {
            guard bytes.count + Self.longestTail + appended <= budget else {
                bytes.removeSubrange(start...)
                return false
            }
            count += 1
            countInPart += 1
            return true
        }
        let room = partTailRoom + appended
        if countInPart > 0, bytes.count + room > partBytes {
            // Over the part size: the feature (without its comma) starts the next part.
            let feature = bytes[(start + 1)...]
            let next = Self.head.utf8.count + feature.count + room
            guard closedBytes + start + room + next <= budget else {
                bytes.removeSubrange(start...)
                return false
            }
            var part = Array(Self.head.utf8)
            part.reserveCapacity(min(partBytes, 64 * 1024))
            part.append(contentsOf: feature)
            bytes.removeSubrange(start...)
            closed.append(bytes)
            closedBytes += start + room
            bytes = part
            countInPart = 0
        } else {
            guard closedBytes + bytes.count + room <= budget else {
                bytes.removeSubrange(start...)
                return false
            }
        }
        count += 1
        countInPart += 1
        return true
    }

    /// The finished reply, without ``partBytes``; `truncated`: fences were left out (by the
    /// limit or the budget).
    consuming func finish(truncated: Bool) -> [UInt8] {
        precondition(partBytes == nil, "a reply in parts is finished with finishParts(truncated:)")
        bytes.append(contentsOf: (truncated ? #"],"truncated":true}"# : #"],"truncated":false}"#).utf8)
        return bytes
    }

    /// The finished reply as messages, in order: with ``partBytes`` the parts, each saying
    /// `truncated` (the same in all), `part` and `parts`; without it the one message
    /// ``finish(truncated:)`` writes.
    consuming func finishParts(truncated: Bool) -> [[UInt8]] {
        guard partBytes != nil else { return [finish(truncated: truncated)] }
        return Self.endParts(closed + [bytes], truncated: truncated)
    }

    /// `parts` (each without its end) each ended with ``partTail(truncated:part:parts:)``.
    static func endParts(_ parts: [[UInt8]], truncated: Bool) -> [[UInt8]] {
        var parts = parts
        let count = parts.count
        for i in parts.indices {
            parts[i].append(contentsOf: partTail(truncated: truncated, part: i + 1, parts: count))
        }
        return parts
    }
}
