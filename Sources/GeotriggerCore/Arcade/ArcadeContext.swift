/// The profile variables an expression is evaluated with, named without the `$`
/// (`fencefeature`, `feedfeature`, `fencenotificationtype`, `locationupdate`).
///
/// Names are case-insensitive. A variable the context does not hold reads as `null`, so an
/// expression never crashes on a missing profile variable (`ArcadeExpression.variables` tells
/// a checker which ones an expression uses).
///
/// The geotrigger initializers (`init(locationUpdate:)`, `init(fenceFeature:update:notificationType:)`)
/// keep the ``LocationUpdate`` itself rather than a dictionary: `$locationupdate.FIELD` and
/// `$feedfeature.FIELD` then read the field directly, so building a context per update costs
/// no allocation and a `filter` evaluates in tens of nanoseconds.
public struct ArcadeContext: Sendable {
    /// Lower-cased name and value; a handful at most, so a linear scan beats hashing.
    var variables: [(name: String, value: ArcadeValue)]
    /// The update behind `$locationupdate` (and `$feedfeature` when `feedFromUpdate`), when
    /// `variables` does not name them. Plain numbers (no reference counting) so reading a
    /// field copies nothing; the device id is kept beside them.
    var location: Fix?
    var device: String = ""
    var feedFromUpdate = false

    public init(_ variables: [String: ArcadeValue] = [:]) {
        self.variables = variables.map { (name: $0.key.lowercased(), value: $0.value) }
    }

    /// Builds a context from names already lower-case (the engine's hot path).
    init(lowercasedVariables: [(name: String, value: ArcadeValue)], update: LocationUpdate? = nil, feedFromUpdate: Bool = false) {
        self.variables = lowercasedVariables
        if let update {
            self.location = Fix(update)
            self.device = update.device
        }
        self.feedFromUpdate = feedFromUpdate
    }

    /// The value of a profile variable, `null` when absent.
    public subscript(name: String) -> ArcadeValue {
        self[folded: name.lowercased()]
    }

    subscript(folded name: String) -> ArcadeValue {
        for entry in variables where entry.name == name { return entry.value }
        if let location {
            if name == "locationupdate" { return .dictionary(location.dictionary(device: nil)) }
            if feedFromUpdate, name == "feedfeature" { return .dictionary(location.dictionary(device: device)) }
        }
        return .null
    }

    /// A field of the update serving `$locationupdate` (or `$feedfeature`), read in place; nil
    /// when the context holds no update for that variable.
    @inline(__always)
    func read(_ field: ArcadeUpdateField, feed: Bool) -> ArcadeValue? {
        guard let location, !feed || feedFromUpdate else { return nil }
        switch field {
        case .x: return .number(location.lon)
        case .y: return .number(location.lat)
        case .timestamp: return .date(location.time)
        case .horizontalAccuracy: return location.accuracy.map(ArcadeValue.number) ?? .null
        case .speed: return location.speed.map(ArcadeValue.number) ?? .null
        case .course: return location.heading.map(ArcadeValue.number) ?? .null
        case .altitude: return location.altitude.map(ArcadeValue.number) ?? .null
        case .device: return .string(device)
        case .missing: return .null
        }
    }
}

/// `$locationupdate` and `$feedfeature` from the fields of an update (the engine's ``Fix``).
extension Fix {
    /// `$locationupdate` as a dictionary, or `$feedfeature` when a device is given.
    func dictionary(device: String?) -> ArcadeDictionary {
        var entries: [(key: String, value: ArcadeValue)] = []
        entries.reserveCapacity(8)
        if let device { entries.append((key: "device", value: .string(device))) }
        entries.append((key: "x", value: .number(lon)))
        entries.append((key: "y", value: .number(lat)))
        entries.append((key: "timestamp", value: .date(time)))
        entries.append((key: "horizontalaccuracy", value: accuracy.map(ArcadeValue.number) ?? .null))
        entries.append((key: "speed", value: speed.map(ArcadeValue.number) ?? .null))
        entries.append((key: "course", value: heading.map(ArcadeValue.number) ?? .null))
        entries.append((key: "altitude", value: altitude.map(ArcadeValue.number) ?? .null))
        return ArcadeDictionary(lowercasedUniqueEntries: entries)
    }
}
