import GeotriggerCore
import Store

/// Turns a monitor's notifications into what is committed and delivered: the journal row,
/// the event for each destination of its trigger's `delivery`, and the OwnTracks transition.
package struct EventBuilder: Sendable {
    let gatewayID: String
    let prefix: String
    let qos: Int
    let owntracksTransitions: Bool

    package init(gatewayID: String, prefix: String, qos: Int, owntracksTransitions: Bool) {
        self.gatewayID = gatewayID
        self.prefix = prefix
        self.qos = qos
        self.owntracksTransitions = owntracksTransitions
    }

    /// `PREFIX/events/TRIGGER/DEVICE`
    func topic(trigger: String, device: String) -> String { "\(prefix)/events/\(trigger)/\(device)" }

    /// `owntracks`: the `owntracks` feed of the device (nil: another format); its devices get
    /// the OwnTracks transition (`output.owntracks`) on `owntracks/DEVICE/event`.
    func append(_ note: FenceNotification, emitted: Double, trackerID: String?, owntracks: OwnTracksTopics?, to item: inout EventCommitter.Item) {
        let payload = note.eventJSON(gateway: gatewayID, emitted: emitted).serializedBytes()
        item.events.append(JournalEvent(
            id: note.id, device: note.device, trigger: note.trigger, layer: note.layer, fence: note.fenceID,
            type: note.type.rawValue, fixTime: note.position.time, emittedTime: emitted,
            payload: String(decoding: payload, as: UTF8.self)))
        let topic = topic(trigger: note.trigger, device: note.device)
        let destinations: [OutboxDestination] =
            switch note.delivery {
            case .local: [.local]
            case .remote: [.remote]
            case .both: [.local, .remote]
            }
        for destination in destinations {
            item.outbox.append(OutboxMessage(
                destination: destination, eventID: note.id, topic: topic, payload: payload, qos: qos, payloadInJournal: true))
        }
        if owntracksTransitions, owntracks != nil, note.type.isCrossing, note.delivery != .remote {
            item.outbox.append(OutboxMessage(
                destination: .local, eventID: note.id + "-t", topic: "owntracks/\(note.device)/event",
                payload: transition(note, trackerID: trackerID).serializedBytes(), qos: qos))
        }
    }

    /// An OwnTracks `_type: transition` for an enter or exit. `rid` is `LAYER/FENCE`; OwnTracks
    /// keys regions by their creation time `wtst`, so it is a stable number derived from `rid`.
    func transition(_ note: FenceNotification, trackerID: String?) -> JSONValue {
        let rid = "\(note.layer)/\(note.fenceID)"
        var object: JSONObject = [
            "_type": .string("transition"),
            "event": .string(note.type == .enter ? "enter" : "leave"),
            "desc": .string(note.fenceName ?? note.fenceID),
            "rid": .string(rid),
            "wtst": .number(PhoneTransition.gatewayWaypointTime(rid: rid)),
            "tst": .number(note.position.time.rounded(.down)),
            "lat": .number(note.position.lat),
            "lon": .number(note.position.lon),
        ]
        if let accuracy = note.position.accuracy { object["acc"] = .number(accuracy.rounded()) }
        object["tid"] = .string(trackerID ?? String(note.device.suffix(2)))
        object["t"] = .string("c")
        return .object(object)
    }
}
