/// One (trigger, fence) near a point, as `geotrigger locate` reports it.
public struct LocateResult: Sendable, Equatable {
    public var trigger: String
    public var layer: String
    /// The fence id.
    public var fence: String
    public var name: String?
    /// Inside by the trigger's geometry rule: its enter relation (with the accuracy circle when
    /// the trigger uses `useGeometryWithAccuracy`) on the fence's effective buffer.
    public var inside: Bool
    /// Signed metres to the buffered boundary, negative inside.
    public var distance: Double
    /// Whether the trigger's `schedule` (none: always) includes the instant asked about; nil
    /// when no instant was given to ``EngineSnapshot/locate(_:accuracy:within:at:)``.
    public var inSchedule: Bool?

    /// `{"trigger", "layer", "fence", "name", "inside", "distance"}` (`name` null when the fence
    /// has none; distance rounded to 0.1 m), and `"inSchedule"` when known.
    public var json: JSONValue {
        var object: JSONObject = [
            "trigger": .string(trigger), "layer": .string(layer), "fence": .string(fence),
            "name": name.map(JSONValue.string) ?? .null, "inside": .bool(inside),
            "distance": .number(FenceNotification.round(distance, 10)),
        ]
        if let inSchedule { object["inSchedule"] = .bool(inSchedule) }
        return .object(object)
    }
}

extension EngineSnapshot {
    /// Every (trigger, fence) whose buffered boundary is within `max(100 m, accuracy)` of
    /// `point` (or that holds it), nearest first (then by trigger, layer, fence id). `clock`
    /// (epoch seconds): also tell whether each trigger's schedule includes that instant.
    public func locate(_ point: Coordinate, accuracy: Double?, within minimum: Double = 100, at clock: Double? = nil) -> [LocateResult] {
        let within = max(minimum, accuracy ?? 0)
        var results: [LocateResult] = []
        index.query(point, radius: within) { f in
            let fence = fences[f]
            let s = fence.signedDistance(to: point)
            forEachWatch(ofFence: f) { _, w, buffer in
                let d = s - buffer
                guard d <= within else { return }
                let settings = watches[w].settings
                let radius = settings.accuracyMode == .useGeometryWithAccuracy ? max(0, accuracy ?? 0) : 0
                results.append(
                    LocateResult(
                        trigger: settings.trigger, layer: settings.layer, fence: fence.fence.id, name: fence.fence.name,
                        inside: settings.spatialRelationship.enters(distance: d, radius: radius), distance: d,
                        inSchedule: clock.map { settings.schedule?.contains($0) ?? true }))
            }
        }
        return results.sorted {
            ($0.distance, $0.trigger, $0.layer, $0.fence) < ($1.distance, $1.trigger, $1.layer, $1.fence)
        }
    }
}
