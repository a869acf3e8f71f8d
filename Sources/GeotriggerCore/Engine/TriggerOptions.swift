/// The trigger keys as written in one place (a config trigger or a layer's `geotrigger`
/// defaults): every key optional. ``TriggerSettings`` merges a trigger's options over its
/// layer's and fills in the defaults.
public struct TriggerOptions: Sendable, Equatable {
    /// `where`: an Arcade boolean over `$fencefeature`.
    public var whereClause: String?
    /// `devices`: the device id patterns; nil means every device.
    public var devices: [DeviceGlob]?
    public var buffer: Double?
    public var rule: TriggerRule?
    public var dwell: Double?
    public var accuracyMode: AccuracyMode?
    public var spatialRelationship: SpatialRelationship?
    public var enterAfter: Double?
    public var exitAfter: Double?
    public var exitMargin: Double?
    /// `filter`: an Arcade boolean over `$locationupdate`.
    public var filter: String?
    public var initial: InitialMode?
    public var staleAfter: Double?
    /// `message`: an Arcade expression.
    public var message: String?
    public var delivery: Delivery?
    /// `schedule`: the local-time windows its events are published in (nil: always).
    public var schedule: Schedule?
    /// `crossings`: infer stays between sparse fixes (docs/crossings.md).
    public var crossings: Bool?
    /// `crossingMaxGap`: seconds; fixes further apart are never interpolated.
    public var crossingMaxGap: Double?
    /// `phones: {regions: N}`: the N fences nearest to each OwnTracks phone are pushed to it as
    /// regions (docs/phones.md); nil: off.
    public var phoneRegions: Int?
    /// `speedLimit`: `overspeed` / `speedOk` inside its fences (docs/trips.md "Speed limits").
    public var speedLimit: SpeedLimit?

    public init() {}

    /// Every trigger key (docs/configuration.md "Trigger keys"), in the order the unknown-key error lists them.
    public static let keys = [
        "name", "fences", "where", "devices", "buffer", "rule", "dwell", "accuracyMode",
        "spatialRelationship", "enterAfter", "exitAfter", "exitMargin", "filter", "initial",
        "staleAfter", "message", "delivery", "schedule",
        "crossings", "crossingMaxGap", "phones", "speedLimit",
    ]

    /// Reads every key of `object` except `name` and `fences` (the caller reads those, and
    /// names them in `handledKeys`); an unknown key or a wrong value is reported through
    /// `report(keyPath relative to object, message)`. `null` means "not set" for every key.
    /// `zones`: where a `schedule`'s `timezone` is looked up.
    static func parse(
        _ object: JSONObject, handledKeys: Set<String>, zones: TimeZoneSource,
        report: (_ path: [JSONPathComponent], _ message: String) -> Void
    ) -> TriggerOptions {
        var options = TriggerOptions()
        for (key, value) in object.entries {
            if handledKeys.contains(key) { continue }
            if case .null = value { continue }
            let path: [JSONPathComponent] = [.key(key)]
            func fail(_ message: String) { report(path, message) }
            switch key {
            case "where": options.whereClause = string(value, fail)
            case "filter": options.filter = string(value, fail)
            case "message": options.message = string(value, fail)
            case "devices":
                guard case .array(let items) = value else {
                    fail("expected an array of device patterns, found \(value.typeName)")
                    continue
                }
                var globs: [DeviceGlob] = []
                for (i, item) in items.enumerated() {
                    guard case .string(let text) = item else {
                        report([.key(key), .index(i)], "expected a device pattern string, found \(item.typeName)")
                        continue
                    }
                    do throws(GlobError) {
                        globs.append(try DeviceGlob(text))
                    } catch {
                        report([.key(key), .index(i)], error.message)
                    }
                }
                options.devices = globs
            case "buffer": options.buffer = number(value, atLeast: 0, fail)
            case "exitMargin": options.exitMargin = number(value, atLeast: 0, fail)
            case "enterAfter": options.enterAfter = number(value, atLeast: 0, fail)
            case "exitAfter": options.exitAfter = number(value, atLeast: 0, fail)
            case "dwell": options.dwell = number(value, above: 0, fail)
            case "staleAfter": options.staleAfter = number(value, above: 0, fail)
            case "rule": options.rule = choice(value, fail)
            case "accuracyMode": options.accuracyMode = choice(value, fail)
            case "spatialRelationship": options.spatialRelationship = choice(value, fail)
            case "initial": options.initial = choice(value, fail)
            case "delivery": options.delivery = choice(value, fail)
            case "schedule": options.schedule = Schedule.parse(value, zones: zones) { report(path + $0, $1) }
            case "crossings":
                if case .bool(let b) = value { options.crossings = b } else { fail("expected true or false, found \(describe(value))") }
            case "crossingMaxGap":
                if case .number(let n) = value, n.isFinite, n > 0 {
                    options.crossingMaxGap = n
                } else {
                    fail("expected a number of seconds > 0, found \(describe(value))")
                }
            case "phones": options.phoneRegions = phoneRegions(value, at: path, report)
            case "speedLimit":
                let (limit, problem) = SpeedLimit.parse(value)
                if let problem { fail(problem) }
                options.speedLimit = limit
            case "name", "fences":
                fail("not allowed here: a layer's defaults apply to the trigger named after the layer")
            default:
                fail("unknown key; expected one of \(keys.joined(separator: ", "))")
            }
        }
        return options
    }

    /// The most regions a phone is given (Android watches at most 100 per app), and the default.
    public static let maximumPhoneRegions = 100
    public static let defaultPhoneRegions = 20

    /// `phones`: `{regions: N}` with N in 1...100 (default 20).
    private static func phoneRegions(
        _ value: JSONValue, at path: [JSONPathComponent], _ report: (_ path: [JSONPathComponent], _ message: String) -> Void
    ) -> Int? {
        guard case .object(let object) = value else {
            report(path, "expected an object {regions: N} (or null for off), found \(describe(value))")
            return nil
        }
        var regions = defaultPhoneRegions
        for (key, item) in object.entries {
            guard key == "regions" else {
                report(path + [.key(key)], "unknown key; expected regions")
                continue
            }
            guard case .number(let n) = item, n.rounded() == n, n >= 1, n <= Double(maximumPhoneRegions) else {
                report(path + [.key(key)], "expected a whole number of regions from 1 to \(maximumPhoneRegions), found \(describe(item))")
                return nil
            }
            regions = Int(n)
        }
        return regions
    }

    private static func string(_ value: JSONValue, _ fail: (String) -> Void) -> String? {
        guard case .string(let s) = value else {
            fail("expected an Arcade expression string, found \(value.typeName)")
            return nil
        }
        return s
    }

    private static func number(_ value: JSONValue, atLeast low: Double, _ fail: (String) -> Void) -> Double? {
        guard case .number(let n) = value, n.isFinite, n >= low else {
            fail("expected a number of \(low == 0 ? "0 or more" : "at least \(low)"), found \(describe(value))")
            return nil
        }
        return n
    }

    private static func number(_ value: JSONValue, above low: Double, _ fail: (String) -> Void) -> Double? {
        guard case .number(let n) = value, n.isFinite, n > low else {
            fail("expected a number of seconds > \(Int(low)) (or null for off), found \(describe(value))")
            return nil
        }
        return n
    }

    private static func choice<T: RawRepresentable & CaseIterable>(_ value: JSONValue, _ fail: (String) -> Void) -> T?
    where T.RawValue == String {
        if case .string(let s) = value, let v = T(rawValue: s) { return v }
        fail("expected one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), found \(describe(value))")
        return nil
    }

    /// A value as an error message shows it: strings quoted, numbers as written, others by type.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string, .number, .bool, .null: value.serialized()
        case .array, .object: value.typeName
        }
    }

    /// `self`'s values where set, else `fallback`'s.
    func merged(over fallback: TriggerOptions) -> TriggerOptions {
        var o = self
        o.whereClause = whereClause ?? fallback.whereClause
        o.devices = devices ?? fallback.devices
        o.buffer = buffer ?? fallback.buffer
        o.rule = rule ?? fallback.rule
        o.dwell = dwell ?? fallback.dwell
        o.accuracyMode = accuracyMode ?? fallback.accuracyMode
        o.spatialRelationship = spatialRelationship ?? fallback.spatialRelationship
        o.enterAfter = enterAfter ?? fallback.enterAfter
        o.exitAfter = exitAfter ?? fallback.exitAfter
        o.exitMargin = exitMargin ?? fallback.exitMargin
        o.filter = filter ?? fallback.filter
        o.initial = initial ?? fallback.initial
        o.staleAfter = staleAfter ?? fallback.staleAfter
        o.message = message ?? fallback.message
        o.delivery = delivery ?? fallback.delivery
        o.schedule = schedule ?? fallback.schedule
        o.crossings = crossings ?? fallback.crossings
        o.crossingMaxGap = crossingMaxGap ?? fallback.crossingMaxGap
        o.phoneRegions = phoneRegions ?? fallback.phoneRegions
        o.speedLimit = speedLimit ?? fallback.speedLimit
        return o
    }
}
