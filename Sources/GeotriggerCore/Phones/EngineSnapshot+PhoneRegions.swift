extension EngineSnapshot {
    /// Some trigger has `phones` on.
    public var pushesPhoneRegions: Bool { !phoneTriggers.isEmpty }

    /// The names of the triggers with `phones` on.
    public var phoneTriggerNames: [String] { phoneTriggers.map(\.name) }

    /// Some trigger with `phones` on applies to `device` (nothing allocated: asked per update
    /// of a phone that has no regions yet).
    public func pushesPhoneRegions(to device: String) -> Bool {
        phoneTriggers.contains { $0.settings.contains { $0.applies(to: device) } }
    }

    /// The triggers with `phones` on that apply to `device`.
    public func phoneTriggerNames(applyingTo device: String) -> [String] {
        phoneTriggers.filter { !$0.watches(applyingTo: device).isEmpty }.map(\.name)
    }

    /// What a phone at `position` should watch: for each trigger with `phones` on that applies
    /// to `device`, its `phones.regions` nearest fences as regions (a fence two triggers give
    /// is one region, the larger circle); at most ``TriggerOptions/maximumPhoneRegions`` in
    /// all, the nearest kept (`capped` says they were more). `leftOutDistance`: metres from
    /// `position` to the nearest fence left out (infinity when none was). `triggers`: those
    /// that applied.
    public func phoneRegions(near position: Coordinate, device: String) -> (
        regions: [PhoneRegion], leftOutDistance: Double, triggers: [String], capped: Bool
    ) {
        var chosen: [String: (region: PhoneRegion, distance: Double)] = [:]
        var leftOut = Double.infinity
        var triggers: [String] = []
        for trigger in phoneTriggers {
            let watches = trigger.watches(applyingTo: device)
            guard !watches.isEmpty else { continue }
            triggers.append(trigger.name)
            let near = nearestFences(to: position, watches: watches, count: trigger.regions + 1)
            if near.count > trigger.regions { leftOut = min(leftOut, near[trigger.regions].distance) }
            for n in near.prefix(trigger.regions) {
                let region = PhoneRegion(fences[n.fence], buffer: n.buffer)
                if let known = chosen[region.rid], known.region.rad >= region.rad { continue }
                chosen[region.rid] = (region, min(n.distance, chosen[region.rid]?.distance ?? .infinity))
            }
        }
        var kept = Array(chosen.values)
        let capped = kept.count > TriggerOptions.maximumPhoneRegions
        if capped {
            kept.sort { ($0.distance, $0.region.rid) < ($1.distance, $1.region.rid) }
            leftOut = min(leftOut, kept[TriggerOptions.maximumPhoneRegions].distance)
            kept.removeLast(kept.count - TriggerOptions.maximumPhoneRegions)
        }
        var regions = kept.map(\.region).sorted { $0.rid < $1.rid }
        // iOS names a region's monitor by its desc: two alike would be one.
        var seen: [String: Int] = [:]
        for region in regions { seen[region.desc, default: 0] += 1 }
        for i in regions.indices where seen[regions[i].desc]! > 1 { regions[i].desc += " (\(regions[i].rid))" }
        return (regions, leftOut, triggers, capped)
    }
}

extension EngineSnapshot {
    /// The triggers watching fence `id` of `layer`; nil when this snapshot has no such fence.
    public func triggerNames(watching layer: String, fence id: String) -> [String]? {
        fenceNumbers[FenceKey(layer: layer, id: id)].map { triggerNames(watchingFence: Int($0)) }
    }
}
