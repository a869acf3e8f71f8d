/// The settings one trigger applies to one of its layers: the trigger's keys, else the layer's
/// `geotrigger` defaults, else the built-in defaults. (`buffer` here is the trigger-or-layer
/// value; a fence's `properties.buffer` still comes first, see ``EngineSnapshot``.)
public struct TriggerSettings: Sendable, Equatable {
    public var trigger: String
    public var layer: String
    public var whereClause: String?
    public var devices: [DeviceGlob]?
    public var buffer: Double
    public var rule: TriggerRule
    public var dwell: Double?
    public var accuracyMode: AccuracyMode
    public var spatialRelationship: SpatialRelationship
    public var enterAfter: Double
    public var exitAfter: Double
    public var exitMargin: Double
    public var filter: String?
    public var initial: InitialMode
    public var staleAfter: Double?
    public var message: String?
    public var delivery: Delivery
    /// `schedule`: nil means always.
    public var schedule: Schedule?
    /// Infer stays between sparse fixes (default false) no more than `crossingMaxGap` seconds
    /// apart (default 300).
    public var crossings: Bool
    public var crossingMaxGap: Double
    /// `phones.regions`: how many of the nearest fences each OwnTracks phone is given as
    /// regions; nil: no regions are pushed.
    public var phoneRegions: Int?
    /// `speedLimit`: nil means none (no `overspeed` / `speedOk`).
    public var speedLimit: SpeedLimit?

    /// Merges `trigger`'s options over `layerDefaults` and the built-in defaults.
    public init(trigger: Trigger, layer: String, layerDefaults: TriggerOptions) {
        let o = trigger.options.merged(over: layerDefaults)
        self.trigger = trigger.name
        self.layer = layer
        whereClause = o.whereClause
        devices = o.devices
        buffer = o.buffer ?? 0
        rule = o.rule ?? .enterOrExit
        dwell = o.dwell
        accuracyMode = o.accuracyMode ?? .useGeometry
        spatialRelationship = o.spatialRelationship ?? .enterIntersectsAndExitDoesNotIntersect
        enterAfter = o.enterAfter ?? 0
        exitAfter = o.exitAfter ?? 0
        exitMargin = o.exitMargin ?? 0
        filter = o.filter
        initial = o.initial ?? .enter
        staleAfter = o.staleAfter
        message = o.message
        delivery = o.delivery ?? .local
        schedule = o.schedule
        crossings = o.crossings ?? false
        crossingMaxGap = o.crossingMaxGap ?? 300
        phoneRegions = o.phoneRegions
        speedLimit = o.speedLimit
    }

    /// True if the trigger applies to `device` (no `devices` key: every device).
    public func applies(to device: String) -> Bool {
        guard let devices else { return true }
        return devices.contains { $0.matches(device) }
    }
}
