import GeotriggerCore

/// The state of `geotrigger watch`: devices with the fences they are in (from retained state),
/// occupancy per fence (from the retained occupancy topics, with `output.occupancy`), gateway
/// statuses, and the recent events; renders a full screen (TTY) or one line per change (piped).
struct WatchConsole {
    struct Device {
        var inside: [String]
        var position: String
        var updated: String
    }

    var prefix: String
    var devices: [String: Device] = [:]
    var gateways: [String: String] = [:]
    /// `TRIGGER/LAYER/FENCE` -> (fence name, device count).
    var occupancy: [String: (name: String, count: Int)] = [:]
    var events: [String] = []
    var eventLimit = 15

    /// Takes one message; returns the plain line to print for it (nil: nothing new to say).
    /// Text from the broker (device ids, fence names, messages) reaches the operator's terminal,
    /// so control characters in it are printed as escapes (``Logger/escaped(_:quote:)``).
    mutating func take(topic: String, payload: [UInt8]) -> String? {
        describe(topic: topic, payload: payload).map { Logger.escaped($0) }
    }

    private mutating func describe(topic: String, payload: [UInt8]) -> String? {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let prefixLevels = prefix.split(separator: "/").count
        guard levels.count > prefixLevels else { return nil }
        let kind = levels[prefixLevels]
        let rest = levels.dropFirst(prefixLevels + 1)
        if payload.isEmpty {
            if kind == "devices", rest.last == "state" {
                let device = rest.dropLast().joined(separator: "/")
                devices[device] = nil
                return "forgot   \(device)"
            }
            if kind == "occupancy", occupancy.removeValue(forKey: rest.joined(separator: "/")) != nil {
                return "removed  \(rest.joined(separator: "/"))"
            }
            return nil
        }
        guard let value = try? JSONReader.parse(payload, file: topic, dialect: .json).value, case .object(let o) = value else {
            return "unreadable message on \(topic)"
        }
        switch kind {
        case "events": return event(o)
        case "devices" where rest.last == "state": return state(o, device: rest.dropLast().joined(separator: "/"))
        case "status": return status(o, gateway: rest.joined(separator: "/"))
        case "occupancy": return occupancy(o, key: rest.joined(separator: "/"))
        default: return nil
        }
    }

    private mutating func event(_ o: JSONObject) -> String {
        let fence = o["fence"]?.objectValue
        let name = fence?["name"]?.stringValue ?? fence?["id"]?.stringValue ?? "?"
        let place = "\(fence?["layer"]?.stringValue ?? "?")/\(fence?["id"]?.stringValue ?? "?")"
        let type = o["type"]?.stringValue ?? "?"
        // A trip's event (docs/trips.md "Events") has its trip where a fence event has its fence.
        let subject = fence == nil ? o["trip"]?.stringValue.map { "trip \($0)" } : nil
        var line = "\(shortTime(o["position"]?.objectValue?["time"]?.stringValue))  \(type.padding(toLength: 5)) \(o["device"]?.stringValue ?? "?")  "
            + (subject ?? "\(name) (\(place))")
        if o["inferred"] == .bool(true) { line += " [inferred]" }
        if let reason = o["reason"]?.stringValue, reason != "moved" { line += " [\(reason)]" }
        if let dwell = o["dwellSeconds"]?.numberValue { line += " after \(WatchConsole.whole(dwell)) s" }
        if let message = o["message"]?.stringValue { line += "  \"\(message)\"" }
        events.append(line)
        if events.count > eventLimit { events.removeFirst(events.count - eventLimit) }
        return "event    " + line
    }

    private mutating func state(_ o: JSONObject, device: String) -> String? {
        let inside = (o["inside"]?.arrayValue ?? []).compactMap { item -> String? in
            guard case .object(let stay) = item else { return nil }
            return stay["name"]?.stringValue ?? stay["fence"]?.stringValue
        }
        var position = "-"
        if case .object(let p)? = o["position"], let lat = p["lat"]?.numberValue, let lon = p["lon"]?.numberValue {
            position = "\(format(lat, 5)), \(format(lon, 5))"
        }
        let updated = shortTime(o["position"]?.objectValue?["time"]?.stringValue)
        let old = devices[device]
        devices[device] = Device(inside: inside, position: position, updated: updated)
        guard old?.inside != inside else { return nil }
        return "inside   \(device): " + (inside.isEmpty ? "(no fence)" : inside.joined(separator: ", "))
    }

    private mutating func occupancy(_ o: JSONObject, key: String) -> String? {
        let count = o["count"]?.numberValue.map { Int(exactly: $0.rounded()) ?? 0 } ?? 0
        let name = o["name"]?.stringValue ?? o["fence"]?.stringValue ?? key
        let old = occupancy[key]
        occupancy[key] = (name, count)
        guard old?.count != count else { return nil }
        return "occupied \(name) (\(key)): \(count) device\(count == 1 ? "" : "s")"
    }

    /// A number from a payload as a whole number; one too large for an Int (anyone may publish
    /// 1e300) is written as it is instead of trapping.
    static func whole(_ n: Double) -> String {
        abs(n) < 1e15 ? "\(Int(n.rounded()))" : "\(n)"
    }

    private mutating func status(_ o: JSONObject, gateway: String) -> String? {
        let status = o["status"]?.stringValue ?? "?"
        let counters = o["counters"]?.objectValue
        var text = status
        if let events = counters?["events"]?.numberValue, let devices = counters?["devices"]?.numberValue {
            text += " · \(WatchConsole.whole(devices)) devices · \(WatchConsole.whole(events)) events"
        }
        let warnings = (o["warnings"]?.arrayValue ?? []).compactMap(\.stringValue)
        if !warnings.isEmpty { text += " · \(warnings.count) warning\(warnings.count == 1 ? "" : "s"): " + warnings.joined(separator: "; ") }
        let old = gateways[gateway]
        gateways[gateway] = text
        guard old?.split(separator: "·").first != text.split(separator: "·").first || !warnings.isEmpty && old != text else { return nil }
        return "gateway  \(gateway): \(text)"
    }

    /// The full screen for a terminal of `width` columns.
    func screen(width: Int) -> String {
        var out = "geotrigger watch · \(prefix)/#\n"
        for (gateway, text) in gateways.sorted(by: { $0.key < $1.key }) { out += "gateway \(gateway): \(text)\n" }
        out += "\n" + "DEVICE".padding(toLength: 24) + "POSITION".padding(toLength: 22) + "FIX".padding(toLength: 10) + "INSIDE\n"
        for (device, d) in devices.sorted(by: { $0.key < $1.key }) {
            let line = device.padding(toLength: 24) + d.position.padding(toLength: 22) + d.updated.padding(toLength: 10)
                + (d.inside.isEmpty ? "-" : d.inside.joined(separator: ", "))
            out += String(line.prefix(width)) + "\n"
        }
        if !occupancy.isEmpty {
            out += "\n" + "FENCE".padding(toLength: 46) + "DEVICES\n"
            for (key, o) in occupancy.sorted(by: { $0.key < $1.key }) {
                out += String(("\(o.name) (\(key))".padding(toLength: 46) + "\(o.count)").prefix(width)) + "\n"
            }
        }
        out += "\nRECENT EVENTS\n"
        for e in events.reversed() { out += String(e.prefix(width)) + "\n" }
        return out.split(separator: "\n", omittingEmptySubsequences: false).map { Logger.escaped(String($0)) }.joined(separator: "\n")
    }

    private func shortTime(_ iso: String?) -> String {
        guard let iso, let t = iso.firstIndex(of: "T") else { return "--:--:--" }
        return String(iso[iso.index(after: t)...].prefix(8))
    }

    private func format(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let r = (value * scale).rounded() / scale
        return "\(r)"
    }
}
