import GeotriggerCore
import Store

extension DeviceShard {
    /// A question about devices, answered by the shard that owns their monitors (so no monitor
    /// is read from another thread).
    enum Query: Sendable {
        /// Devices with a confirmed stay in (layer, fence).
        case inside(layer: String, fence: String)
        /// One device's state.
        case device(String)
        /// Open trips, of one device (nil: every device).
        case trips(device: String?)
        /// One device's recent track (DeviceShard+Track.swift): positions from `since` (nil: the
        /// last 24 hours), `offset` of them skipped, at most `limit`.
        case track(device: String, since: Double?, offset: Int, limit: Int)
    }

    /// A shard's answer: device state payloads (for `inside`, the whole state of each device
    /// inside) and the hibernated devices it would have to wake to answer (read from the store
    /// by the asker).
    struct QueryAnswer: Sendable {
        var states: [JSONValue] = []
        var hibernated: [String] = []
        /// Open trips with their progress (``Query/trips(device:)``).
        var trips: [JSONValue] = []
        /// A page of the device's recent track and whether more follow (``Query/track(device:since:offset:limit:)``;
        /// nil: the device is not known).
        var track: (positions: [RecentTrack.Position], more: Bool)?

        /// `states` and those of the hibernated devices, restored from `store` with `snapshot`.
        func allStates(store: GatewayStore, snapshot: EngineSnapshot) async -> [JSONValue] {
            var all = states
            for device in hibernated {
                guard let bytes = try? await store.deviceState(device),
                    let (monitor, _) = try? DeviceMonitor.restore(from: bytes, snapshot: snapshot, now: MonotonicClock.now())
                else { continue }
                all.append(monitor.stateJSON(updated: WallClock.now()))
            }
            return all
        }
    }

    /// A question about one device from outside the pool (``MonitorPool`` reads them from a
    /// stream and hands each to the device's shard), with where its answer goes.
    package struct DeviceQuestion: Sendable {
        var device: String
        var reply: CheckedContinuation<QueryAnswer, Never>
    }

    /// Answers `query` from the shard's own slots (called on the shard's worker).
    func answer(_ query: Query, slots: [String: SlotBox], hibernated: [String: Double], trips: [String: [TripRun]] = [:], now: Double) -> QueryAnswer {
        var answer = QueryAnswer()
        switch query {
        case .device(let device):
            if let box = slots[device] {
                answer.states.append(box.slot.monitor.stateJSON(updated: now))
            } else if hibernated[device] != nil || saved.contains(device) {
                // Hibernated, or saved by the last run and not restored yet (the restores
                // and the questions reach the shard in no set order): its state is the stored one.
                answer.hibernated.append(device)
            }
        case .inside(let layer, let fence):
            for box in slots.values where box.slot.monitor.stays.contains(where: { $0.layer == layer && $0.fence == fence }) {
                answer.states.append(box.slot.monitor.stateJSON(updated: now))
            }
            answer.hibernated = Array(hibernated.keys)
        case .trips(let device):
            answer.trips = Self.tripList(trips, device: device, emission: tripEmission)
        case .track:
            break  // answered with the state in hand: ``track(of:since:offset:limit:state:now:)``
        }
        return answer
    }
}
