import GeotriggerCore

/// What a shard keeps for one OwnTracks phone while triggers with `phones` on apply to it
/// (docs/phones.md): the regions it was given and its transitions waiting to be judged. A
/// class, so a slot without one carries only a nil reference; only the shard's lock reaches it.
final class PhoneSlot {
    var plan = PhoneRegionPlan()
    var ledger: PhoneTransitionLedger
    /// The triggers with `phones` on that apply to the device, in the snapshot of `generation`.
    private(set) var triggers: Set<String>
    private var generation: UInt64

    /// A phone whose monitor holds `stays` now (its starting point: not decisions).
    init(device: String, stays: [DeviceMonitor.Stay], snapshot: EngineSnapshot) {
        triggers = Set(snapshot.phoneTriggerNames(applyingTo: device))
        generation = snapshot.generation
        ledger = PhoneTransitionLedger(inside: PhoneSlot.keys(stays, of: triggers))
    }

    /// Follows a new snapshot: the triggers that apply may have changed.
    func adopt(_ snapshot: EngineSnapshot, device: String) {
        guard snapshot.generation != generation else { return }
        triggers = Set(snapshot.phoneTriggerNames(applyingTo: device))
        generation = snapshot.generation
    }

    /// The stays of the phones' triggers, as the ledger compares them.
    func keys(_ stays: [DeviceMonitor.Stay]) -> Set<PhoneTransitionLedger.StayKey> { PhoneSlot.keys(stays, of: triggers) }

    private static func keys(_ stays: [DeviceMonitor.Stay], of triggers: Set<String>) -> Set<PhoneTransitionLedger.StayKey> {
        var keys: Set<PhoneTransitionLedger.StayKey> = []
        for stay in stays where triggers.contains(stay.trigger) {
            keys.insert(PhoneTransitionLedger.StayKey(trigger: stay.trigger, rid: PhoneRegion.rid(layer: stay.layer, fence: stay.fence)))
        }
        return keys
    }

    /// The region a phone's transition names: its `rid` (iOS), else the region in the slot of
    /// its `wtst` (Android), else the region pushed with its `desc`.
    func region(of transition: PhoneTransition) -> String? {
        if let rid = transition.rid { return rid }
        if let wtst = transition.wtst, let rid = plan.rid(ofSlotTime: wtst) { return rid }
        if let desc = transition.desc { return plan.regions.first { $0.desc == desc }?.rid }
        return nil
    }
}
