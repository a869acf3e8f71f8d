extension FenceNotification {
    /// The event published on `PREFIX/events/TRIGGER/DEVICE`, exactly as docs/topics-and-payloads.md "Events" shows
    /// it: keys in that order; `reason` only on exits, `dwellSeconds` only on exit and
    /// dwell, `speed` and `speedLimit` only on overspeed and speedOk, `message` only when the
    /// expression gave one, `accuracy` only when known, the fence
    /// `name` only when it has one, `inferred` (true) only on a stay inferred between sparse
    /// fixes. `actions` and `properties` are always present (empty without
    /// a message expression). `distance` is rounded to 0.1 m, `dwellSeconds` to 1 ms, the
    /// speeds to 0.01 m/s; position
    /// times are ISO-8601 UTC (milliseconds when not whole), `emitted` always with milliseconds.
    public func eventJSON(gateway: String, emitted: Double) -> JSONValue {
        var event = JSONObject()
        event["id"] = .string(id)
        event["visit"] = .string(visit)
        event["gateway"] = .string(gateway)
        event["trigger"] = .string(trigger)
        event["device"] = .string(device)
        event["type"] = .string(type.rawValue)
        event["notification"] = .string(type.notificationName)
        if let reason { event["reason"] = .string(reason.rawValue) }
        if inferred { event["inferred"] = .bool(true) }
        var fence = JSONObject()
        fence["id"] = .string(fenceID)
        fence["layer"] = .string(layer)
        if let fenceName { fence["name"] = .string(fenceName) }
        fence["properties"] = .object(fenceProperties)
        if fenceTruncated { fence["truncated"] = .bool(true) }
        event["fence"] = .object(fence)
        event["position"] = FenceNotification.positionJSON(position)
        event["distance"] = .number(FenceNotification.round(distance, 10))
        if let dwellSeconds { event["dwellSeconds"] = .number(FenceNotification.round(dwellSeconds, 1000)) }
        if let speed { event["speed"] = .number(FenceNotification.round(speed, 100)) }
        if let speedLimit { event["speedLimit"] = .number(FenceNotification.round(speedLimit, 100)) }
        if let text = message?.message { event["message"] = .string(text) }
        event["actions"] = .array(message?.actions ?? [])
        event["properties"] = .object(message?.properties ?? JSONObject())
        event["emitted"] = .string(ISO8601Time.format(emitted, milliseconds: true))
        return .object(event)
    }

    /// `{"lat", "lon", "accuracy" (when known), "time"}`.
    static func positionJSON(_ update: LocationUpdate) -> JSONValue {
        var position = JSONObject()
        position["lat"] = .number(update.lat)
        position["lon"] = .number(update.lon)
        if let accuracy = update.accuracy { position["accuracy"] = .number(accuracy) }
        position["time"] = .string(ISO8601Time.format(update.time))
        return .object(position)
    }

    static func round(_ value: Double, _ scale: Double) -> Double {
        guard value.isFinite else { return value }
        let r = (value * scale).rounded() / scale
        return r == 0 ? 0 : r
    }
}

extension DeviceMonitor {
    /// The retained device state for `PREFIX/devices/DEVICE/state`: `{"device", "position"
    /// (the last accepted update, null before any), "inside": [{"trigger", "layer", "fence",
    /// "name" (when the fence has one), "since", "visit"}], "updated"}`. Only confirmed stays
    /// are listed (a pending enter is not inside yet; a pending exit still is).
    public func stateJSON(updated: Double) -> JSONValue {
        var state = JSONObject()
        state["device"] = .string(device)
        state["position"] = lastUpdate.map(FenceNotification.positionJSON) ?? .null
        var inside: [JSONValue] = []
        for entry in entries where entry.inside {
            var item = JSONObject()
            item["trigger"] = .string(entry.trigger)
            item["layer"] = .string(entry.layer)
            item["fence"] = .string(entry.fenceID)
            if let name = entry.fenceName { item["name"] = .string(name) }
            item["since"] = .string(ISO8601Time.format(entry.since))
            item["visit"] = .string(visit(of: entry))
            inside.append(.object(item))
        }
        state["inside"] = .array(inside)
        state["updated"] = .string(ISO8601Time.format(updated, milliseconds: true))
        return .object(state)
    }

    /// One confirmed stay of the device.
    public struct Stay: Sendable, Equatable {
        public var trigger: String
        public var layer: String
        public var fence: String
        public var since: Double
        public var visit: String

        public init(trigger: String, layer: String, fence: String, since: Double, visit: String) {
            (self.trigger, self.layer, self.fence, self.since, self.visit) = (trigger, layer, fence, since, visit)
        }
    }

    /// The confirmed stays, in the order they began (for the state payload and tests).
    public var stays: [Stay] {
        entries.filter(\.inside).map {
            Stay(trigger: $0.trigger, layer: $0.layer, fence: $0.fenceID, since: $0.since, visit: visit(of: $0))
        }
    }

    /// The number of crossings waiting for confirmation.
    public var pendingCount: Int { entries.count { $0.pending != nil } }
}
