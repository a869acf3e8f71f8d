import GeotriggerCore
import MQTT

/// One kind of dispatcher control topic: `PREFIX/KIND/` and then a fixed number of levels
/// (`PREFIX/expect/ID`, `PREFIX/fences/LAYER/FENCE_ID`). A message the gateway refuses is
/// answered on its own topic plus `/error`, and stands as a status warning.
struct ControlTopics: Sendable {
    /// `PREFIX/KIND/` as UTF-8.
    let base: [UInt8]
    /// How many levels follow `PREFIX/KIND/`.
    let levels: Int
    let client: MQTTClient
    let warnings: Warnings

    init(prefix: String, kind: String, levels: Int, client: MQTTClient, warnings: Warnings) {
        base = Array("\(prefix)/\(kind)/".utf8)
        self.levels = levels
        self.client = client
        self.warnings = warnings
    }

    /// The topic filter the gateway subscribes to: `PREFIX/KIND/` and a `+` for each level.
    var filter: String {
        String(decoding: base, as: UTF8.self) + Array(repeating: "+", count: levels).joined(separator: "/")
    }

    /// Clears the retained message on `PREFIX/KIND/NAME`: the gateway's own clear of a request
    /// it settled (an expected arrival's result, a trip's end).
    func clearRetained(_ name: String) throws {
        _ = try client.publish(topic: String(decoding: base, as: UTF8.self) + name, payload: [UInt8](), qos: .atLeastOnce, retain: true)
    }

    /// Whether `topic` is one of these (see ``matches(_:base:levels:)``).
    func matches(_ topic: String) -> Bool { Self.matches(topic, base: base, levels: levels) }

    /// Whether `topic` is `base` and then exactly `levels` levels (empty ones count).
    /// Compared as bytes, as the broker compares topics: the network thread asks this of every
    /// message, and building `PREFIX/KIND/` for each cost more than the comparison.
    static func matches(_ topic: String, base: [UInt8], levels: Int) -> Bool {
        var topic = topic
        return topic.withUTF8 { bytes in
            guard bytes.count >= base.count, bytes.starts(with: base) else { return false }
            var separators = 0
            for byte in bytes[base.count...] where byte == UInt8(ascii: "/") {
                separators += 1
                if separators == levels { return false }
            }
            return separators == levels - 1
        }
    }

    /// The levels of `topic` (one of these) after `PREFIX/KIND/`, as they stand.
    func name(of topic: String) -> String {
        String(decoding: topic.utf8.dropFirst(base.count), as: UTF8.self)
    }

    /// Publishes why the message on `PREFIX/KIND/name` was rejected on `PREFIX/KIND/name/error`
    /// (not retained): `fields`, then `error` (the reason) and `time` (now), as one JSON object;
    /// and sets the status warning `key` with `text`, as a client's doing.
    func reject(_ name: String, _ fields: JSONObject, reason: String, warning key: String, _ text: String) {
        var object = fields
        object["error"] = .string(reason)
        object["time"] = .string(ISO8601Time.format(WallClock.now(), milliseconds: true))
        let topic = String(decoding: base, as: UTF8.self) + name + "/error"
        _ = try? client.publish(topic: topic, payload: JSONValue.object(object).serializedBytes(), qos: .atLeastOnce, retain: false)
        warnings.set(key, text, origin: .client)
    }
}
