import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// One event a serve test expects, with every field docs/topics-and-payloads.md "Events" gives an event.
struct ExpectedEvent: CustomStringConvertible {
    var trigger: String
    var device: String
    var layer: String
    var fence: String
    /// `enter`, `exit` or `dwell`.
    var type: String
    /// Exits only: `moved`, `stale` or `fenceRemoved`.
    var reason: String?
    /// The crossing update (or the last known position).
    var lat: Double
    var lon: Double
    var accuracy: Double?
    var fixTime: Double
    /// Signed metres to the buffered boundary (computed with shapely + pyproj, see the test).
    var distance: Double
    /// Exit and dwell: seconds since the enter crossing.
    var dwellSeconds: Double?
    /// Nil: the trigger has no message expression, so `message` must be absent.
    var message: String?
    var actions: [JSONValue] = []
    var properties: JSONObject = JSONObject()

    var key: String { "\(trigger) \(device) \(layer)/\(fence) \(type)" }
    var description: String { key }

    var notification: String {
        switch type {
        case "enter": "entered"
        case "exit": "exited"
        default: "dwelled"
        }
    }
}

/// The key of a received event, as `ExpectedEvent.key`.
func eventKey(_ event: JSONObject) -> String {
    let fence = event["fence"]?.objectValue
    return "\(event["trigger"]?.stringValue ?? "?") \(event["device"]?.stringValue ?? "?") "
        + "\(fence?["layer"]?.stringValue ?? "?")/\(fence?["id"]?.stringValue ?? "?") \(event["type"]?.stringValue ?? "?")"
}

/// The features of the repository's fence files by layer and id: `properties` of each.
func fenceProperties(folder: String = ServeHarness.repositoryFences) throws -> [String: JSONObject] {
    var result: [String: JSONObject] = [:]
    for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasSuffix(".geojson") {
        let layer = String(file.dropLast(".geojson".count))
        let text = try String(contentsOfFile: "\(folder)/\(file)", encoding: .utf8)
        let document = try JSONReader.parse(text, file: file, dialect: .json)
        for feature in document.value.objectValue?["features"]?.arrayValue ?? [] {
            guard let object = feature.objectValue, let properties = object["properties"]?.objectValue else { continue }
            let id = object["id"]?.stringValue ?? properties["id"]?.stringValue ?? "?"
            result["\(layer)/\(id)"] = properties
        }
    }
    return result
}

/// Checks one received event against docs/topics-and-payloads.md "Events" and what the test expects: the exact
/// key list and order (keys that do not apply omitted), every value, `emitted` within
/// [`after`, `before`].
func checkEvent(
    _ event: JSONObject, topic: String, expected e: ExpectedEvent, gateway: String, prefix: String,
    fenceName: String, fenceProperties: JSONObject, emittedBetween after: Double, and before: Double,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    let context = Comment(rawValue: "\(e.key): \(JSONValue.object(event).serialized())")
    #expect(topic == "\(prefix)/events/\(e.trigger)/\(e.device)", context, sourceLocation: sourceLocation)
    var keys = ["id", "visit", "gateway", "trigger", "device", "type", "notification"]
    if e.reason != nil { keys.append("reason") }
    keys += ["fence", "position", "distance"]
    if e.dwellSeconds != nil { keys.append("dwellSeconds") }
    if e.message != nil { keys.append("message") }
    keys += ["actions", "properties", "emitted"]
    #expect(event.keys == keys, context, sourceLocation: sourceLocation)

    let id = event["id"]?.stringValue ?? ""
    #expect(!id.isEmpty, context, sourceLocation: sourceLocation)
    if e.type == "enter" {
        // A stay's enter is its own visit.
        #expect(event["visit"]?.stringValue == id, context, sourceLocation: sourceLocation)
    }
    #expect(event["gateway"] == .string(gateway), context, sourceLocation: sourceLocation)
    #expect(event["trigger"] == .string(e.trigger), context, sourceLocation: sourceLocation)
    #expect(event["device"] == .string(e.device), context, sourceLocation: sourceLocation)
    #expect(event["type"] == .string(e.type), context, sourceLocation: sourceLocation)
    #expect(event["notification"] == .string(e.notification), context, sourceLocation: sourceLocation)
    #expect(event["reason"] == e.reason.map { .string($0) }, context, sourceLocation: sourceLocation)

    let fence = event["fence"]?.objectValue
    #expect(fence?.keys == ["id", "layer", "name", "properties"], context, sourceLocation: sourceLocation)
    #expect(fence?["id"] == .string(e.fence), context, sourceLocation: sourceLocation)
    #expect(fence?["layer"] == .string(e.layer), context, sourceLocation: sourceLocation)
    #expect(fence?["name"] == .string(fenceName), context, sourceLocation: sourceLocation)
    #expect(fence?["properties"] == .object(fenceProperties), context, sourceLocation: sourceLocation)

    let position = event["position"]?.objectValue
    #expect(position?.keys == (e.accuracy == nil ? ["lat", "lon", "time"] : ["lat", "lon", "accuracy", "time"]),
            context, sourceLocation: sourceLocation)
    #expect(position?["lat"] == .number(e.lat), context, sourceLocation: sourceLocation)
    #expect(position?["lon"] == .number(e.lon), context, sourceLocation: sourceLocation)
    #expect(position?["accuracy"] == e.accuracy.map { .number($0) }, context, sourceLocation: sourceLocation)
    #expect(position?["time"] == .string(iso8601(e.fixTime)), context, sourceLocation: sourceLocation)

    // Signed: negative inside the buffered fence, positive outside.
    let distance = event["distance"]?.numberValue ?? .nan
    #expect(distance.sign == e.distance.sign, context, sourceLocation: sourceLocation)
    #expect(abs(distance - e.distance) <= max(1.0, abs(e.distance) * 0.02), context, sourceLocation: sourceLocation)

    #expect(event["dwellSeconds"] == e.dwellSeconds.map { .number($0) }, context, sourceLocation: sourceLocation)
    #expect(event["message"] == e.message.map { .string($0) }, context, sourceLocation: sourceLocation)
    #expect(event["actions"] == .array(e.actions), context, sourceLocation: sourceLocation)
    #expect(event["properties"] == .object(e.properties), context, sourceLocation: sourceLocation)

    let emittedText = event["emitted"]?.stringValue ?? ""
    // Always with milliseconds: 2026-11-30T12:00:00.120Z
    #expect(emittedText.count == 24 && emittedText.hasSuffix("Z"), context, sourceLocation: sourceLocation)
    let emitted = ISO8601Time.parse(emittedText) ?? 0
    #expect(emitted >= after - 1 && emitted <= before + 1, context, sourceLocation: sourceLocation)
}

/// Received events (parsed) under `prefix/events/`, with their topics.
func receivedEvents(_ probe: MQTTProbe, prefix: String) -> [(topic: String, event: JSONObject)] {
    probe.received(under: "\(prefix)/events/").compactMap { message in json(message).map { (message.topic, $0) } }
}
