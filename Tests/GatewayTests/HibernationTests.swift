import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// `gateway.hibernateAfter`: an idle device's monitor leaves memory and comes back from the
/// database on its next update. That update, and every one published right behind it, goes
/// through its shard's task (the state is read first), so they must keep their order and the
/// monitor must carry on where it was: no second enter, the exit closes the same visit.
extension ServeTests {
@Suite struct Hibernation {
    @Test(.timeLimit(.minutes(2))) func aHibernatedDeviceWakesWithItsStateAndItsUpdatesInOrder() async throws {
        let harness = try ServeHarness("hibernate")
        defer { harness.close() }
        let config = try harness.write("gw.json5", harness.config(
            gateway: "hibernateAfter: 1",
            extra: #"triggers: [ { name: "sections", fences: ["garden-sections"] } ],"#))
        let gateway = try harness.startGateway(config: config, environment: ["GEOTRIGGER_LOG_LEVEL": "debug"])
        let subscriber = try await harness.probe("sub", subscribe: [harness.eventsFilter(), harness.statusTopic])
        #expect(await poll { subscriber.lastStatus(harness.statusTopic)?.status == "started" }, "\(gateway.log)")
        let publisher = try await harness.probe("pub", cleanStart: true)
        let topic = "devices/h1/location"
        let t0 = fixTimeBase(secondsAgo: 300)
        func send(_ lat: Double, _ lon: Double, _ time: Double) throws -> Int32 {
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: lat, lon: lon, time: time), qos: .atLeastOnce)
        }
        func events() -> [JSONObject] { subscriber.received(under: "\(harness.prefix)/events/").compactMap(json) }

        // Inside the Redwood section: one enter.
        let first = try send(34.4561, -119.7067, t0)
        #expect(await publisher.waitAcknowledged([first]))
        #expect(await poll { events().count == 1 }, "\(gateway.log)")
        #expect(events().first?["type"]?.stringValue == "enter")

        // Idle past hibernateAfter: the monitor leaves memory.
        #expect(await poll { gateway.log.contains("hibernated a device") }, "\(gateway.log)")

        // Back, five updates at once: still inside twice, then out of every section.
        var ids: [Int32] = []
        for (index, point) in [(34.4561, -119.7067), (34.4561, -119.7067), (34.4500, -119.7000), (34.4500, -119.7000), (34.4500, -119.7000)]
            .enumerated()
        {
            ids.append(try send(point.0, point.1, t0 + 10 + Double(index)))
        }
        #expect(await publisher.waitAcknowledged(ids))
        #expect(await poll { events().count >= 2 }, "\(gateway.log)")
        let status = await subscriber.waitStatus(harness.statusTopic) { $0.counter("accepted") == 6 }
        #expect(status.ok, "accepted: \(String(describing: status.status?.counter("accepted")))")
        #expect(status.status?.dropped("outOfOrder") == 0)
        #expect(status.status?.dropped("duplicate") == 0)

        let all = events()
        #expect(all.map { $0["type"]?.stringValue } == ["enter", "exit"], "\(all)")
        #expect(all.count == 2 && all[0]["visit"] == all[1]["visit"], "the exit closes the visit the enter opened: \(all)")
    }
}
}
