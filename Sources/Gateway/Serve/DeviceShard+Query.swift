import GeotriggerCore

extension DeviceShard {
    /// A question about devices, answered by the shard that owns their monitors (so no monitor
    /// is read from another thread).
    enum Query: Sendable {
        /// Devices with a confirmed stay in (layer, fence).
        case inside(layer: String, fence: String)
        /// One device's state.
        case device(String)
    }

    /// A shard's answer: device state payloads (for `inside`, the whole state of each device
    /// inside) and the hibernated devices it would have to wake to answer (read from the store
    /// by the asker).
    struct QueryAnswer: Sendable {
        var states: [JSONValue] = []
        var hibernated: [String] = []
    }

    /// Answers `query` from the shard's own slots (called on the shard's worker).
    func answer(_ query: Query, slots: [String: Slot], hibernated: [String: Double], now: Double) -> QueryAnswer {
        var answer = QueryAnswer()
        switch query {
        case .device(let device):
            if let slot = slots[device] {
                answer.states.append(slot.monitor.stateJSON(updated: now))
            } else if hibernated[device] != nil {
                answer.hibernated.append(device)
            }
        case .inside(let layer, let fence):
            for slot in slots.values where slot.monitor.stays.contains(where: { $0.layer == layer && $0.fence == fence }) {
                answer.states.append(slot.monitor.stateJSON(updated: now))
            }
            answer.hibernated = Array(hibernated.keys)
        }
        return answer
    }
}
