import GeotriggerCore

/// A confirmed stay read back out of a device state as the shards answer it
/// (``DeviceMonitor/stateJSON(updated:)``): the device, and its entry of `inside` as published.
struct DeviceStateStay {
    var device: String
    /// `{"trigger", "layer", "fence", "name" (when the fence has one), "since", "visit"}`.
    var entry: JSONObject

    /// When the stay began, as the state gives it (to the millisecond); nil if unreadable.
    var since: Double? {
        guard case .string(let text)? = entry["since"] else { return nil }
        return ISO8601Time.parse(text)
    }

    /// The stays in fence `fence` of layer `layer` that `states` list, in their order.
    static func stays(in states: [JSONValue], layer: String, fence: String) -> [DeviceStateStay] {
        var found: [DeviceStateStay] = []
        for case .object(let state) in states {
            guard case .string(let device)? = state["device"], case .array(let stays)? = state["inside"] else { continue }
            for case .object(let entry) in stays where entry["layer"] == .string(layer) && entry["fence"] == .string(fence) {
                found.append(DeviceStateStay(device: device, entry: entry))
            }
        }
        return found
    }
}
