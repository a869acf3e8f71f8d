import GeotriggerCore
import Store
import Testing
@testable import Gateway

/// ``EventBuilder``: what one notification becomes in the journal and the outbox.
@Suite struct EventBuilderTests {
    static func note(_ type: NotificationType, delivery: Delivery = .local) -> FenceNotification {
        FenceNotification(
            id: "id-\(type.rawValue)", visit: "visit", trigger: "roads", layer: "zones", fenceID: "road", fenceName: "Road",
            fenceProperties: JSONObject(), device: "ann/phone", type: type, reason: type == .exit ? .moved : nil,
            position: LocationUpdate(device: "ann/phone", lat: 1, lon: 2, time: 1_796_040_000), distance: -1,
            dwellSeconds: nil, message: nil, delivery: delivery,
            speed: type == .overspeed || type == .speedOk ? 20 : nil, speedLimit: type == .overspeed || type == .speedOk ? 14 : nil)
    }

    /// Every type goes to the journal and the trigger's event topic; only an enter and an exit
    /// also become an OwnTracks transition (`output.owntracks`): a phone knows no dwell or
    /// overspeed, and would take any other for a leave.
    @Test func onlyEntersAndExitsBecomeOwnTracksTransitions() {
        let builder = EventBuilder(gatewayID: "gw", prefix: "gt", qos: 1, owntracksTransitions: true)
        for type in NotificationType.allCases {
            var item = EventCommitter.Item()
            builder.append(Self.note(type), emitted: 1_796_040_001, trackerID: nil, owntracks: .standard, to: &item)
            #expect(item.events.map(\.type) == [type.rawValue])
            let topics = item.outbox.map(\.topic)
            let expected = ["gt/events/roads/ann/phone"] + (type == .enter || type == .exit ? ["owntracks/ann/phone/event"] : [])
            #expect(topics == expected, "\(type)")
        }
    }
}
