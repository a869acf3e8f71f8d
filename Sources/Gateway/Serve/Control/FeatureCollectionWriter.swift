import GeotriggerCore

/// The `features` query's reply, written straight to bytes as it grows (README "Runtime fences
/// and queries"): `{"type": "FeatureCollection", "features": [...], "truncated": bool}`, one
/// GeoJSON Feature per fence, and never more than ``budget`` bytes.
struct FeatureCollectionWriter {
    /// The most bytes a reply may take: under the 1 MiB `message_size_limit` of the shipped broker
    /// config (`deploy/mosquitto/`), with room for the topic and the v5 properties.
    static let replyBudget = 900 * 1024

    /// The most bytes the finished object may take.
    let budget: Int
    private var bytes: [UInt8] = []
    /// The features written so far.
    private(set) var count = 0

    static let head = #"{"type":"FeatureCollection","features":["#
    /// The longest end ``finish(truncated:)`` writes.
    static let longestTail = #"],"truncated":false}"#.utf8.count

    init(budget: Int = FeatureCollectionWriter.replyBudget) {
        self.budget = budget
        bytes.reserveCapacity(min(budget, 64 * 1024))
        bytes.append(contentsOf: Self.head.utf8)
    }

    /// Appends `fence` as a Feature: `id` the fence id; `properties` its layer, id, name (null
    /// without one), `buffer` (nil: null, no trigger watches it), `triggers`, its own
    /// properties (as cut to 4 KiB) and `"truncated": true` when its name or properties were
    /// cut; `geometry` as GeoJSON. Returns false, writing nothing, when the feature would take
    /// the finished reply past the budget.
    mutating func append(_ fence: Fence, buffer: Double?, triggers: [String]) -> Bool {
        let start = bytes.count
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
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
        guard bytes.count + Self.longestTail <= budget else {
            bytes.removeSubrange(start...)
            return false
        }
        count += 1
        return true
    }

    /// The finished reply; `truncated`: fences were left out (by the limit or the budget).
    consuming func finish(truncated: Bool) -> [UInt8] {
        bytes.append(contentsOf: (truncated ? #"],"truncated":true}"# : #"],"truncated":false}"#).utf8)
        return bytes
    }
}
