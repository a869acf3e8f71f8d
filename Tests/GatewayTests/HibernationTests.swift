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
    @Test(.timeLimit(.minutes(5))) func aHibernatedDeviceWakesWithItsStateAndItsUpdatesInOrder() async throws {
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

extension ServeTests {
    /// `gateway.forgetAfter` counts the time the gateway was running since the device last
    /// reported: a gateway switched off for longer than that forgets nothing at its next start,
    /// and forgets the device once it has run that long since.
    @Suite struct Forgetting {
        @Test(.timeLimit(.minutes(5))) func timeSwitchedOffDoesNotCount() async throws {
            let h = try ServeHarness("forget")
            defer { h.close() }
            let forgetAfter = 8.0
            let config = try h.write("gw.json5", h.config(
                gateway: "hibernateAfter: 1, forgetAfter: \(Int(forgetAfter))",
                extra: #"triggers: [ { name: "sections", fences: ["garden-sections"] } ],"#))
            let probe = try await h.probe("watch", subscribe: [h.statusTopic, "\(h.prefix)/devices/#"])
            let first = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(first.log))")
            let state = h.stateTopic("truck")
            func stateCleared() -> Bool { probe.received(on: state).last?.payload.isEmpty == true }
            try probe.client.publish(topic: "devices/truck/location", payload: Payload.json(lat: 34.4561, lon: -119.7067, time: fixTimeBase(secondsAgo: 60)), qos: .atLeastOnce)
            #expect(await poll(timeout: .seconds(20)) { !(probe.received(on: state).last?.payload.isEmpty ?? true) }, "\(tail(first.log))")
            let reported = Date()
            try await Task.sleep(for: .seconds(2))
            #expect(first.terminate() == 0)
            let ranBefore = Date().timeIntervalSince(reported)

            // Switched off for longer than forgetAfter.
            try await Task.sleep(for: .seconds(forgetAfter + 2))
            let second = try h.startGateway(config: config, log: "second.log")
            let started = Date()
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" && $0.since != nil }.ok, "\(tail(second.log))")
            // Longer than its first ticks: the old rule (wall clock minus fix time) forgot it at once.
            let forgottenEarly = await poll(timeout: .seconds(3)) { stateCleared() }
            #expect(!forgottenEarly, "forgotten at the start, after \(String(format: "%.1f", ranBefore)) s of running: \(tail(second.log))")
            // It is forgotten once the gateway has run forgetAfter in all since its report.
            #expect(await poll(timeout: .seconds(30)) { stateCleared() }, "\(tail(second.log))")
            let ranAfter = Date().timeIntervalSince(started)
            print("forgetAfter \(forgetAfter) s: ran \(String(format: "%.1f", ranBefore)) s before the stop, switched off \(Int(forgetAfter + 2)) s, forgotten \(String(format: "%.1f", ranAfter)) s after the start (\(forgottenEarly ? "at once" : "not at the start"))")
            #expect(ranBefore + ranAfter >= forgetAfter - 1, "forgotten after \(ranBefore) + \(ranAfter) s of running")
            #expect(second.terminate() == 0)
        }
    }
}
