import GeotriggerCore

/// Home Assistant MQTT discovery payloads (docs/occupancy-and-home-assistant.md):
/// a `device_tracker` per device, a `sensor` per occupied fence, and the gateway's
/// connectivity `binary_sensor`, each under
/// `HA_PREFIX/COMPONENT/geotrigger_GATEWAYID/OBJECT/config`, retained. Every entity is
/// available only while the gateway's status is `started` (the status topic, whose will is
/// `offline`).
package struct HomeAssistantDiscovery: Sendable {
    let discoveryPrefix: String
    /// `geotrigger_` + the gateway id, as a discovery node id.
    let node: String
    let outputPrefix: String
    let statusTopic: String
    let gatewayID: String

    init(config: GatewayConfig) {
        discoveryPrefix = config.homeassistant.prefix
        node = "geotrigger_" + Self.objectID(config.gateway.id)
        outputPrefix = config.output.prefix
        statusTopic = "\(config.output.prefix)/status/\(config.gateway.id)"
        gatewayID = config.gateway.id
    }

    /// A discovery object id for `text`, stable across runs. A text of 1 to 48 characters of
    /// `[a-zA-Z0-9_-]` is its own object id (`truck-7_a`), unless it ends in `_` and 8 lowercase
    /// hex digits. Any other text is cleaned (its characters outside that set become `_`, cut
    /// to 48) and gets `_` and 8 hex digits of a hash of the whole text (`workers/alice` ->
    /// `workers_alice_c76e7038`; a device literally named `workers_alice_c76e7038` ->
    /// `workers_alice_c76e7038_` and its own hash). So an id that is a text itself never ends
    /// like a hashed one, and two texts share an object id only if they clean alike and their
    /// 32-bit hashes are equal.
    static func objectID(_ text: String) -> String {
        var clean = ""
        var changed = false
        for scalar in text.unicodeScalars {
            if scalar.isASCII, let c = Character(scalar).asciiValue,
                (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 95
            {
                clean.unicodeScalars.append(scalar)
            } else {
                clean.append("_")
                changed = true
            }
        }
        if clean.count > 48 {
            clean = String(clean.prefix(48))
            changed = true
        }
        guard changed || clean.isEmpty || looksHashed(clean) else { return clean }
        let hash = String(StableHash.of(text) & 0xffff_ffff, radix: 16)
        return clean + "_" + String(repeating: "0", count: 8 - hash.count) + hash
    }

    /// Whether `id` ends like an object id with a hash: `_` and 8 lowercase hex digits.
    private static func looksHashed(_ id: String) -> Bool {
        let tail = id.utf8.suffix(9)
        return tail.count == 9 && tail.first == UInt8(ascii: "_")
            && tail.dropFirst().allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    // MARK: Topics

    func configTopic(_ component: String, _ object: String) -> String {
        "\(discoveryPrefix)/\(component)/\(node)/\(object)/config"
    }

    /// The retained attributes of a device's tracker (kept by the gateway beside its state).
    func attributesTopic(device: String) -> String { "\(outputPrefix)/devices/\(device)/attributes" }

    func trackerConfigTopic(device: String) -> String { configTopic("device_tracker", Self.objectID(device)) }

    func occupancyConfigTopic(_ key: OccupancyKey) -> String {
        configTopic("sensor", Self.objectID("\(key.trigger)/\(key.layer)/\(key.fence)"))
    }

    var gatewayConfigTopic: String { configTopic("binary_sensor", "connectivity") }

    // MARK: Payloads

    /// The availability every entity shares: available while the status is `started`.
    private var availability: JSONValue {
        .array([.object([
            "topic": .string(statusTopic),
            "value_template": .string("{{ 'online' if value_json.status == 'started' else 'offline' }}"),
        ])])
    }

    private var gatewayDevice: JSONObject {
        ["identifiers": .array([.string(node)]), "name": .string("geotrigger \(gatewayID)"),
         "manufacturer": .string("geotrigger"), "model": .string("geotrigger gateway"),
         "sw_version": .string(GatewayVersion.current)]
    }

    /// A tracked device: a GPS `device_tracker` whose location and fences come from its
    /// attributes topic.
    func trackerConfig(device: String) -> [UInt8] {
        let object = Self.objectID(device)
        let config: JSONObject = [
            "name": .null,
            "unique_id": .string("\(node)_\(object)"),
            "object_id": .string("geotrigger_\(object)"),
            "json_attributes_topic": .string(attributesTopic(device: device)),
            "source_type": .string("gps"),
            "availability": availability,
            "qos": .number(1),
            "device": .object([
                "identifiers": .array([.string("\(node)_\(object)")]), "name": .string(device),
                "via_device": .string(node),
            ]),
        ]
        return JSONValue.object(config).serializedBytes()
    }

    /// A fence's occupancy: a `sensor` counting the devices in it, its occupancy payload as
    /// attributes.
    func occupancyConfig(_ key: OccupancyKey, name: String?) -> [UInt8] {
        let object = Self.objectID("\(key.trigger)/\(key.layer)/\(key.fence)")
        let topic = OccupancyKey.topic(key, prefix: outputPrefix)
        let config: JSONObject = [
            "name": .string("\(name ?? key.fence) occupancy (\(key.trigger))"),
            "unique_id": .string("\(node)_occupancy_\(object)"),
            "state_topic": .string(topic),
            "value_template": .string("{{ value_json.count }}"),
            "json_attributes_topic": .string(topic),
            "unit_of_measurement": .string("devices"),
            "state_class": .string("measurement"),
            "icon": .string("mdi:map-marker-radius"),
            "availability": availability,
            "qos": .number(1),
            "device": .object(gatewayDevice),
        ]
        return JSONValue.object(config).serializedBytes()
    }

    /// The gateway itself: a connectivity `binary_sensor` on its status.
    func gatewayConfig() -> [UInt8] {
        let config: JSONObject = [
            "name": .string("Connectivity"),
            "unique_id": .string("\(node)_connectivity"),
            "device_class": .string("connectivity"),
            "state_topic": .string(statusTopic),
            "value_template": .string("{{ 'ON' if value_json.status == 'started' else 'OFF' }}"),
            "availability": availability,
            "qos": .number(1),
            "device": .object(gatewayDevice),
        ]
        return JSONValue.object(config).serializedBytes()
    }

    /// A device tracker's attributes from its state payload: `latitude`, `longitude`,
    /// `gps_accuracy` (when known) and `fences`, the names of the fences it is in.
    func attributes(ofState state: JSONValue) -> JSONValue {
        var attributes = JSONObject()
        if case .object(let o) = state, case .object(let position)? = o["position"] {
            attributes["latitude"] = position["lat"]
            attributes["longitude"] = position["lon"]
            if let accuracy = position["accuracy"] { attributes["gps_accuracy"] = accuracy }
        }
        var names: Set<String> = []
        if case .object(let o) = state, case .array(let inside)? = o["inside"] {
            for case .object(let stay) in inside {
                if case .string(let name)? = stay["name"] ?? stay["fence"] { names.insert(name) }
            }
        }
        attributes["fences"] = .array(names.sorted().map { .string($0) })
        return .object(attributes)
    }
}
