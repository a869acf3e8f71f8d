import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// On every (re)connect the gateway subscribes again, publishes `started` and republishes the
    /// retained device states (docs/topics-and-payloads.md "Gateway status", "Device state"): the broker stopped for
    /// 10 s and started again.
    @Suite struct BrokerOutage {
        /// The walker's positions: outside, meadow, desert (see ServeDriveTests for the distances).
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)
        static let desert = (lat: 34.4579, lon: -119.7062)

        static func config(_ h: ServeHarness) -> String {
            h.config(extra: """
                feeds: [ { name: "devices", topic: "\(h.prefix)-in/devices/+/location", format: "json" } ],
                triggers: [ { name: "sections", fences: ["garden-sections"] } ],
                """)
        }

        /// Brings `walker` into the meadow and `idle` into the desert (where it stays), and waits
        /// for their enter events and retained states.
        static func prepare(_ h: ServeHarness, watcher: MQTTProbe, publisher: MQTTProbe, t0: Double) async throws {
            let input = "\(h.prefix)-in/devices"
            try publisher.client.publish(topic: "\(input)/walker/location", payload: Payload.json(lat: outside.lat, lon: outside.lon, time: t0))
            try publisher.client.publish(topic: "\(input)/walker/location", payload: Payload.json(lat: meadow.lat, lon: meadow.lon, time: t0 + 10))
            try publisher.client.publish(topic: "\(input)/idle/location", payload: Payload.json(lat: desert.lat, lon: desert.lon, time: t0 + 10))
            let ready = await poll(timeout: .seconds(60)) {
                receivedEvents(watcher, prefix: h.prefix).count >= 2
                    && watcher.received(on: h.stateTopic("walker")).contains { $0.payloadText.contains("\"meadow\"") }
                    && watcher.received(on: h.stateTopic("idle")).contains { $0.payloadText.contains("\"desert\"") }
            }
            #expect(ready, "before the outage: \(watcher.messages.all.map(\.topic))")
        }

        /// `persistence true`, a persistent watcher and a persistent publisher that publishes
        /// while the broker is down: the gateway reconnects by itself, says `started` again,
        /// republishes the retained states and processes the update queued during the outage.
        @Test func gatewayComesBackAfterAPersistentBrokerRestart() async throws {
            let h = try ServeHarness("outage-persist", broker: .init(persistence: true))
            defer { h.close() }
            let configPath = try h.write("gw.json5", Self.config(h))
            let watcher = try await h.probe(
                "watcher", subscribe: [h.eventsFilter(), h.statusTopic, "\(h.prefix)/devices/#"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase()
            try await Self.prepare(h, watcher: watcher, publisher: publisher, t0: t0)
            let idleState = try #require(watcher.received(on: h.stateTopic("idle")).last)
            let startedBefore = watcher.statusCount(h.statusTopic, saying: "started")
            let mark = watcher.messages.count

            h.broker.stop()
            #expect(await publisher.waitDisconnected())
            #expect(await watcher.waitDisconnected())
            // Published during the outage: libmosquitto keeps the QoS 1 message and sends it
            // after the publisher reconnects (its session is persistent).
            try publisher.client.publish(
                topic: "\(h.prefix)-in/devices/walker/location", payload: Payload.json(lat: Self.desert.lat, lon: Self.desert.lon, time: t0 + 30))
            try await Task.sleep(for: .seconds(10))  // the outage itself, not an assertion
            #expect(gateway.isRunning)
            try h.broker.start()

            // Reconnected by itself: `started` again (the watcher's session kept its subscription).
            let restarted = await poll(timeout: .seconds(90)) {
                watcher.statusCount(h.statusTopic, saying: "started") > startedBefore
            }
            #expect(restarted, "no new started status\n\(tail(gateway.log))\n\(tail(h.brokerLog))")
            // Resubscribed: the update sent during the outage gives its events.
            let crossed = await poll(timeout: .seconds(60)) {
                let keys = receivedEvents(watcher, prefix: h.prefix).map { eventKey($0.event) }
                return keys.contains("sections walker garden-sections/meadow exit")
                    && keys.contains("sections walker garden-sections/desert enter")
            }
            #expect(crossed, "events: \(receivedEvents(watcher, prefix: h.prefix).map { eventKey($0.event) })\n\(tail(gateway.log))")
            // Republished: the unchanged state of the idle device came again after the reconnect.
            let republished = await poll(timeout: .seconds(30)) {
                watcher.messages.all.dropFirst(mark).contains { $0.topic == idleState.topic && $0.payload == idleState.payload }
            }
            #expect(republished)
            #expect(gateway.log.components(separatedBy: "connected broker=").count - 1 >= 2)
            #expect(gateway.terminate() == 0)
        }

        /// A broker without persistence loses every session, subscription and retained message
        /// in a restart: the gateway subscribes again and republishes its retained state.
        @Test func subscriptionsAndRetainedStateComeBackAfterAnAmnesicBrokerRestart() async throws {
            let h = try ServeHarness("outage-plain")
            defer { h.close() }
            let configPath = try h.write("gw.json5", Self.config(h))
            let watcher = try await h.probe(
                "watcher", subscribe: [h.eventsFilter(), h.statusTopic, "\(h.prefix)/devices/#"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase()
            try await Self.prepare(h, watcher: watcher, publisher: publisher, t0: t0)
            let walkerState = try #require(watcher.received(on: h.stateTopic("walker")).last)
            let idleState = try #require(watcher.received(on: h.stateTopic("idle")).last)

            h.broker.stop()
            #expect(await publisher.waitDisconnected())
            try await Task.sleep(for: .seconds(10))  // the outage itself, not an assertion
            #expect(gateway.isRunning)
            try h.broker.start()

            // A new subscriber gets the retained `started` and both retained device states back:
            // the new broker only has them because the gateway published them again.
            let late = try await h.probe(
                "late", subscribe: [h.eventsFilter(), h.statusTopic, "\(h.prefix)/devices/#"], cleanStart: true)
            let back = await poll(timeout: .seconds(90)) {
                late.lastStatus(h.statusTopic)?.status == "started"
                    && late.received(on: walkerState.topic).contains { $0.payload == walkerState.payload }
                    && late.received(on: idleState.topic).contains { $0.payload == idleState.payload }
            }
            #expect(back, "late subscriber saw \(late.messages.all.map(\.topic))\n\(tail(gateway.log))")

            // Subscribed again: an update published now gives its events.
            #expect(await publisher.waitConnected(count: 2))
            try publisher.client.publish(
                topic: "\(h.prefix)-in/devices/walker/location", payload: Payload.json(lat: Self.desert.lat, lon: Self.desert.lon, time: t0 + 30))
            let crossed = await poll(timeout: .seconds(60)) {
                let keys = receivedEvents(late, prefix: h.prefix).map { eventKey($0.event) }
                return keys.contains("sections walker garden-sections/meadow exit")
                    && keys.contains("sections walker garden-sections/desert enter")
            }
            #expect(crossed, "events: \(receivedEvents(late, prefix: h.prefix).map { eventKey($0.event) })\n\(tail(gateway.log))")
            #expect(gateway.terminate() == 0)
        }
    }
}
