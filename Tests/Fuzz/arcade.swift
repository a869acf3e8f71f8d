// Arcade compile + evaluate: the input is an expression; it is compiled and, if it compiles,
// evaluated in three small fixed contexts (none, a location update, a fence notification) as
// a value, a condition and an event message. `ArcadeLimits` bounds every evaluation (steps,
// nesting, text length), so each run must end with a value or an `ArcadeError`.
import GeotriggerCore

private let update = LocationUpdate(
    device: "alice/phone", lat: 51.5, lon: -0.12, time: fuzzNow - 5, accuracy: 12, speed: 1.4, heading: 90, altitude: 30)
private let fence = Fence(
    id: "cactus", layer: "garden", name: "Cactus",
    properties: ["name": .string("Cactus"), "buffer": .number(5), "tags": .array([.string("dry"), .number(3)]),
                 "owner": .object(["name": .string("Kew"), "since": .number(1759)])],
    geometry: .points([Coordinate(lat: 51.5, lon: -0.12)]), buffer: 5)
private let contexts: [ArcadeContext] = [
    ArcadeContext(),
    ArcadeContext(locationUpdate: update),
    ArcadeContext(fenceFeature: ArcadeValue.fenceFeature(fence), update: update, notificationType: "entered"),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzArcade(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let source = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let expression = try? ArcadeExpression(source) else { return 0 }
    for context in contexts {
        if let value = try? expression.evaluate(context) {
            _ = value.json.serialized()
            _ = value.isTruthy
        }
        _ = try? expression.evaluateCondition(context)
        if let message = try? ArcadeMessage(expression, context) {
            _ = message.message?.utf8.count
        }
    }
    return 0
}
