/// The geotrigger profile variables, built the way the engine needs them.
///
/// - `$locationupdate` (the `filter` profile): `x` (longitude), `y` (latitude), `timestamp`
///   (a date, the fix time), `horizontalaccuracy`, `speed` (m/s), `course` (degrees),
///   `altitude` (m); an unknown value is `null`.
/// - `$feedfeature` (the `message` profile): the same fields plus `device`, the device id.
/// - `$fencefeature` (the `message` and `where` profiles): the fence Feature's properties,
///   plus `id` (the fence id, when the properties have no `id`) and `layer` (when they have no
///   `layer`).
/// - `$fencenotificationtype`: `entered`, `exited` or `dwelled`.
extension ArcadeValue {
    /// `$locationupdate` for one update.
    public static func locationUpdate(_ update: LocationUpdate) -> ArcadeValue {
        .dictionary(ArcadeDictionary(lowercasedUniqueEntries: locationEntries(update)))
    }

    /// `$feedfeature` for one update: the location fields and `device`.
    public static func feedFeature(_ update: LocationUpdate) -> ArcadeValue {
        var entries = locationEntries(update)
        entries.insert((key: "device", value: .string(update.device)), at: 0)
        return .dictionary(ArcadeDictionary(lowercasedUniqueEntries: entries))
    }

    /// `$fencefeature` for one fence: its properties, `id` and `layer` (see the type).
    public static func fenceFeature(_ fence: Fence) -> ArcadeValue {
        var dictionary = ArcadeDictionary(
            fence.properties.entries.map { (key: $0.key, value: ArcadeValue($0.value)) })
        if dictionary["id"] == nil { dictionary["id"] = .string(fence.id) }
        if dictionary["layer"] == nil { dictionary["layer"] = .string(fence.layer) }
        return .dictionary(dictionary)
    }

    private static func locationEntries(_ update: LocationUpdate) -> [(key: String, value: ArcadeValue)] {
        [
            (key: "x", value: .number(update.lon)),
            (key: "y", value: .number(update.lat)),
            (key: "timestamp", value: .date(update.time)),
            (key: "horizontalaccuracy", value: update.accuracy.map(ArcadeValue.number) ?? .null),
            (key: "speed", value: update.speed.map(ArcadeValue.number) ?? .null),
            (key: "course", value: update.heading.map(ArcadeValue.number) ?? .null),
            (key: "altitude", value: update.altitude.map(ArcadeValue.number) ?? .null),
        ]
    }
}

extension ArcadeContext {
    /// The `filter` profile: `$locationupdate`.
    public init(locationUpdate update: LocationUpdate) {
        self.init(lowercasedVariables: [(name: "locationupdate", value: .locationUpdate(update))])
    }

    /// The `where` profile: `$fencefeature` (pass a value from ``ArcadeValue/fenceFeature(_:)``,
    /// built once per fence).
    public init(fenceFeature: ArcadeValue) {
        self.init(lowercasedVariables: [(name: "fencefeature", value: fenceFeature)])
    }

    /// The `message` profile: `$fencefeature`, `$feedfeature`, `$fencenotificationtype`
    /// (`entered`, `exited`, `dwelled`); `$locationupdate` too, for convenience.
    public init(fenceFeature: ArcadeValue, update: LocationUpdate, notificationType: String) {
        self.init(lowercasedVariables: [
            (name: "fencefeature", value: fenceFeature),
            (name: "feedfeature", value: .feedFeature(update)),
            (name: "fencenotificationtype", value: .string(notificationType)),
            (name: "locationupdate", value: .locationUpdate(update)),
        ])
    }
}
