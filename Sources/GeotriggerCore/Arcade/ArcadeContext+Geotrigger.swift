/// The geotrigger profile variables, built the way the engine needs them.
///
/// - `$locationupdate` (the `filter` profile): `x` (longitude), `y` (latitude), `timestamp`
///   (a date, the fix time), `horizontalaccuracy`, `speed` (m/s), `course` (degrees),
///   `altitude` (m); an unknown value is `null`.
/// - `$feedfeature` (the `message` profile): the same fields plus `device`, the device id.
/// - `$fencefeature` (the `message` and `where` profiles): the fence Feature's properties,
///   plus `id` (the fence id, when the properties have no `id`) and `layer` (when they have no
///   `layer`).
/// - `$fencenotificationtype`: `entered`, `exited`, `dwelled`, `overspeed` or `speedOk`.
extension ArcadeValue {
    /// `$locationupdate` for one update.
    public static func locationUpdate(_ update: LocationUpdate) -> ArcadeValue {
        .dictionary(Fix(update).dictionary(device: nil))
    }

    /// `$feedfeature` for one update: the location fields and `device`.
    public static func feedFeature(_ update: LocationUpdate) -> ArcadeValue {
        .dictionary(Fix(update).dictionary(device: update.device))
    }

    /// `$fencefeature` for one fence: its properties, `id` and `layer` (see the type).
    public static func fenceFeature(_ fence: Fence) -> ArcadeValue {
        var dictionary = ArcadeDictionary(
            fence.properties.entries.map { (key: $0.key, value: ArcadeValue($0.value)) })
        if dictionary["id"] == nil { dictionary["id"] = .string(fence.id) }
        if dictionary["layer"] == nil { dictionary["layer"] = .string(fence.layer) }
        return .dictionary(dictionary)
    }
}

extension ArcadeContext {
    /// The `filter` profile: `$locationupdate`.
    public init(locationUpdate update: LocationUpdate) {
        self.init(lowercasedVariables: [], update: update)
    }

    /// The `where` profile: `$fencefeature` (pass a value from ``ArcadeValue/fenceFeature(_:)``,
    /// built once per fence).
    public init(fenceFeature: ArcadeValue) {
        self.init(lowercasedVariables: [(name: "fencefeature", value: fenceFeature)])
    }

    /// The `message` profile: `$fencefeature`, `$feedfeature`, `$fencenotificationtype`
    /// (`entered`, `exited`, `dwelled`, `overspeed`, `speedOk`); `$locationupdate` too, for convenience.
    public init(fenceFeature: ArcadeValue, update: LocationUpdate, notificationType: String) {
        self.init(
            lowercasedVariables: [
                (name: "fencefeature", value: fenceFeature),
                (name: "fencenotificationtype", value: .string(notificationType)),
            ], update: update, feedFromUpdate: true)
    }
}

/// A field of `$locationupdate` or `$feedfeature`, resolved at compile time so evaluation
/// reads the ``LocationUpdate`` directly (see ``ArcadeContext``).
enum ArcadeUpdateField {
    case x, y, timestamp, horizontalAccuracy, speed, course, altitude, device, missing

    /// The field a lower-cased member name means; `device` only on `$feedfeature`.
    init(folded name: String, feed: Bool) {
        switch name {
        case "x": self = .x
        case "y": self = .y
        case "timestamp": self = .timestamp
        case "horizontalaccuracy": self = .horizontalAccuracy
        case "speed": self = .speed
        case "course": self = .course
        case "altitude": self = .altitude
        case "device" where feed: self = .device
        default: self = .missing
        }
    }

}
