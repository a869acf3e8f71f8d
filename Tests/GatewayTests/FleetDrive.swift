import Foundation
import MQTT
import Testing
import TestSupport

/// A deterministic drive of `count` devices through `fences/fleet.geojson` (depot, two job
/// sites, the haul road) for the multi-gateway tests: JSON updates on `fleet/v/dN/location`
/// (device id `v/dN`), fix times in the past so none is in the future, the expected events
/// from `geotrigger replay` of the same updates (the single-gateway engine, by fix time).
struct FleetDrive {
    struct Update {
        var device: String
        var lat: Double
        var lon: Double
        var time: Int
        var topic: String { "fleet/\(device)/location" }
        var payload: String { #"{"lat":\#(lat),"lon":\#(lon),"time":\#(time)}"# }
    }

    /// An event reduced to what the comparison counts.
    struct EventKey: Hashable, CustomStringConvertible {
        var device: String
        var trigger: String
        var fence: String
        var type: String
        var description: String { "\(device) \(trigger)/\(fence) \(type)" }
    }

    let devices: [String]
    /// Per device, its updates in fix-time order.
    let updates: [String: [Update]]

    init(count: Int, prefix: String = "v") {
        let outside = (34.4250, -119.7000)
        let places = [(34.42883, -119.69327), (34.4338, -119.6965), (34.43225, -119.68545)]  // depot, north, east
        let base = Int(Date().timeIntervalSince1970) - 7200
        var devices: [String] = []
        var updates: [String: [Update]] = [:]
        for i in 0..<count {
            let device = "\(prefix)/d\(i)"
            devices.append(device)
            var route = [outside, places[i % 3], outside, places[(i + 1) % 3], outside]
            if i % 2 == 0 { route += [places[(i + 2) % 3], outside] }
            updates[device] = route.enumerated().map { step, point in
                Update(device: device, lat: point.0, lon: point.1, time: base + 10 * step)
            }
        }
        self.devices = devices
        self.updates = updates
    }

    /// Step `step` of every device that has one (round-robin across devices).
    func round(_ step: Int) -> [Update] { devices.compactMap { updates[$0]!.count > step ? updates[$0]![step] : nil } }
    var rounds: Int { updates.values.map(\.count).max() ?? 0 }

    /// The updates as JSON lines for `geotrigger replay`.
    var jsonLines: String {
        devices.flatMap { updates[$0]! }.map { #"{"device":"\#($0.device)","lat":\#($0.lat),"lon":\#($0.lon),"time":\#($0.time)}"# }
            .joined(separator: "\n") + "\n"
    }

    /// The events a single gateway produces for this drive: `geotrigger replay --json` with
    /// the same config and fences, counted per (device, trigger, fence, type).
    func expectedEvents(config: String, in directory: TemporaryDirectory) throws -> [EventKey: Int] {
        let track = try directory.write("drive.jsonl", jsonLines)
        let result = try runGeotrigger(["replay", track, "--config", config, "--json"])
        try #require(result.status == 0, "replay failed: \(result.err)")
        var tally: [EventKey: Int] = [:]
        for line in result.out.split(separator: "\n") {
            guard let (_, _, key) = Self.parse(Array(line.utf8)) else { continue }
            tally[key, default: 0] += 1
        }
        return tally
    }

    /// (event id, gateway id, key) of an event payload.
    static func parse(_ payload: [UInt8]) -> (String, String, EventKey)? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
            let id = object["id"] as? String,
            let gateway = object["gateway"] as? String, let device = object["device"] as? String,
            let trigger = object["trigger"] as? String, let type = object["type"] as? String,
            let fence = (object["fence"] as? [String: Any])?["id"] as? String
        else { return nil }
        return (id, gateway, EventKey(device: device, trigger: trigger, fence: fence, type: type))
    }

    /// Copies the repository's fleet fences into `directory/fences`.
    static func installFences(in directory: TemporaryDirectory) throws {
        let folder = directory.file("fences")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: repositoryRoot + "/fences/fleet.geojson", toPath: folder + "/fleet.geojson")
    }
}

/// Events received on `geotriggers/events/#`, by gateway and key; an event delivered again
/// (same id: at-least-once after a reconnect) is counted once, in `redelivered`.
struct EventTally {
    var byGateway: [String: [FleetDrive.EventKey: Int]] = [:]
    var redelivered = 0

    init(_ messages: [MQTTMessage]) {
        var seen: Set<String> = []
        for message in messages {
            guard let (id, gateway, key) = FleetDrive.parse(message.payload) else { continue }
            guard seen.insert(id).inserted else {
                redelivered += 1
                continue
            }
            byGateway[gateway, default: [:]][key, default: 0] += 1
        }
    }

    var total: Int { byGateway.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    /// All gateways' events merged.
    var merged: [FleetDrive.EventKey: Int] {
        byGateway.values.reduce(into: [:]) { merged, tally in for (k, n) in tally { merged[k, default: 0] += n } }
    }

    /// Devices that got events from more than one gateway.
    var devicesOnSeveralGateways: [String] {
        var gateways: [String: Set<String>] = [:]
        for (gateway, tally) in byGateway { for key in tally.keys { gateways[key.device, default: []].insert(gateway) } }
        return gateways.filter { $0.value.count > 1 }.keys.sorted()
    }

    /// The gateway each device's events came from (devices on several gateways excluded).
    var gatewayOfDevice: [String: String] {
        var result: [String: String] = [:]
        for (gateway, tally) in byGateway { for key in tally.keys { result[key.device] = gateway } }
        return result
    }
}

/// Differences between two tallies, for failure messages.
func difference(_ got: [FleetDrive.EventKey: Int], _ want: [FleetDrive.EventKey: Int]) -> String {
    let keys = Set(got.keys).union(want.keys).sorted { $0.description < $1.description }
    return keys.compactMap { key in
        got[key, default: 0] == want[key, default: 0] ? nil : "\(key): got \(got[key, default: 0]), want \(want[key, default: 0])"
    }.prefix(20).joined(separator: "; ")
}
