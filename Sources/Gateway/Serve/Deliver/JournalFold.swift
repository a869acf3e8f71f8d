import GeotriggerCore
import Store

/// How a device's stored state takes the journal's later events (``GatewayStore/foldJournal(batch:transactions:)``):
/// the engine replays them onto the state's bytes (``DeviceMonitor/replay(_:onto:)``), as the
/// shard counted on when it wrote no state for them (`DeviceShard.settleState(of:in:)`).
enum JournalFold {
    static let fold: StateFold = { state, events in
        let decisions = events.compactMap { event -> JournaledDecision? in
            guard let type = JournaledDecision.Kind(rawValue: event.type) else { return nil }
            var position: (lat: Double, lon: Double, time: Double, accuracy: Double?)?
            if let lat = event.latitude, let lon = event.longitude, let time = event.positionTime.flatMap({ ISO8601Time.parse($0) }) {
                position = (lat, lon, time, event.accuracy)
            }
            return JournaledDecision(type: type, trigger: event.trigger, layer: event.layer, fence: event.fence,
                                     fixTime: event.fixTime, position: position, distance: event.distance)
        }
        return try? DeviceMonitor.replay(decisions, onto: state)
    }
}
