/// A trigger with `phones` on, as a snapshot keeps it: how many regions each phone gets, and
/// the trigger's watches (one per layer) that have `phones` on.
struct PhoneTrigger: Sendable {
    var name: String
    /// The largest `phones.regions` among those watches (a layer's defaults may set it).
    var regions: Int
    /// Watch numbers, with their settings for `devices`.
    var watches: [Int32]
    var settings: [TriggerSettings]

    /// The triggers of `settings` (one entry per watch, in watch order) with `phones` on.
    static func of(_ settings: [TriggerSettings]) -> [PhoneTrigger] {
        var triggers: [PhoneTrigger] = []
        for (w, watch) in settings.enumerated() {
            guard let regions = watch.phoneRegions else { continue }
            if let i = triggers.firstIndex(where: { $0.name == watch.trigger }) {
                triggers[i].regions = max(triggers[i].regions, regions)
                triggers[i].watches.append(Int32(w))
                triggers[i].settings.append(watch)
            } else {
                triggers.append(PhoneTrigger(name: watch.trigger, regions: regions, watches: [Int32(w)], settings: [watch]))
            }
        }
        return triggers
    }

    /// The watches of this trigger that apply to `device` (its `devices` patterns).
    func watches(applyingTo device: String) -> [Int32] {
        zip(watches, settings).compactMap { $0.1.applies(to: device) ? $0.0 : nil }
    }
}
