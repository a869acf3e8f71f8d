import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// docs/configuration.md "Timing": `staleAfter` counts on the gateway's clock and pauses while the feed's
/// broker connection is down. A device that went quiet just before a broker outage must not
/// be declared stale because of the outage: its stale exit comes only after the gateway is
/// back and the rest of staleAfter has passed.
@Suite(.serialized) struct StalePauseTests {
    @Test func brokerOutageDoesNotMakeDevicesStale() async throws {
        let broker = try MosquittoProcess(.init(persistence: true))
        try broker.start()
        defer { broker.stop() }
        let directory = try TemporaryDirectory(prefix: "stale-pause")
        // Long enough that a loaded 2-core CI machine (where the first enter has taken 8 s to
        // arrive) still leaves a clear remainder of staleAfter after the outage.
        let stale = 16.0
        let config = try directory.write("gw.json5", """
            { gateway: { id: "gw-stale", fences: "\(repositoryRoot)/fences", database: "\(directory.file("gw.db"))" },
              broker: { port: \(broker.port), clientId: "gw-stale" },
              output: { prefix: "stale", statusInterval: 60 },
              triggers: [ { name: "sections", fences: ["garden-sections"], staleAfter: \(stale) } ] }
            """)
        let gateway = try GatewayProcess(["serve", "--config", config], directory: directory.path, logFile: directory.file("gw.log"))
        defer { gateway.terminate() }

        let subscriber = try MQTTProbe(port: broker.port, clientId: "stale-subscriber")
        try subscriber.client.subscribe("stale/events/#")
        try subscriber.client.subscribe("stale/status/+")
        subscriber.collect()
        try subscriber.client.start()
        defer { subscriber.stop() }
        #expect(await subscriber.waitSubscribed("stale/events/#"))

        func arrivals(_ match: (MQTTMessage) -> Bool) -> Int { subscriber.messages.all.filter(match).count }
        let statusTopic = GatewayStatus.topic(prefix: "stale", gatewayID: "gw-stale")
        func isStaleExit(_ m: MQTTMessage) -> Bool { m.topic.hasPrefix("stale/events/") && m.payloadText.contains("\"reason\":\"stale\"") }
        #expect(await poll(until: { subscriber.statusCount(statusTopic, saying: "started") >= 1 }), "the gateway never said started: \(gateway.log)")

        let publisher = try MQTTProbe(port: broker.port, clientId: "stale-publisher") { $0.cleanStart = true }
        try publisher.client.start()
        #expect(await publisher.waitConnected())
        let time = Int(Date().timeIntervalSince1970)
        let id = try publisher.client.publish(
            topic: "devices/t1/location", payload: #"{"lat":34.4561,"lon":-119.7067,"time":\#(time)}"#, qos: .atLeastOnce)
        #expect(await publisher.waitAcknowledged([id]))
        let quietFrom = Date()
        publisher.stop()
        #expect(await poll(until: { subscriber.messages.all.contains { $0.payloadText.contains("\"type\":\"enter\"") } }))
        // How long the device was quiet before the outage (longer on a loaded machine).
        let quietBefore = Date().timeIntervalSince(quietFrom)
        #expect(quietBefore < stale - 3, "the enter took \(quietBefore) s: too slow to tell a paused clock")

        // The broker goes away for longer than staleAfter, at once.
        // The gateway's own reconnect, as its log says it (the clocks go on at the same connect
        // event): the subscriber reconnects on its own schedule, so the status it sees can come
        // seconds later on a loaded machine.
        func gatewayConnects() -> Int { gateway.log.components(separatedBy: "] connected broker=").count - 1 }
        let connectsBefore = gatewayConnects()
        broker.stop()
        try await Task.sleep(for: .seconds(stale + 4))
        try broker.restart()
        let restarted = Date().timeIntervalSince1970
        #expect(await poll(timeout: .seconds(60), until: { gatewayConnects() > connectsBefore }), "no reconnect: \(gateway.log)")
        // The subscriber's own reconnect backs off up to 32 s, and the exit waits for it in its
        // session: when it arrives says little. When the gateway decided it says it all: its
        // `emitted`, on the gateway's wall clock, against the broker's restart on the test's
        // (the same clock), whenever a loaded machine lets the test look.
        #expect(await poll(timeout: .seconds(90), until: { arrivals(isStaleExit) == 1 }), "no stale exit: \(gateway.log)")
        let exit = subscriber.messages.all.first(where: isStaleExit)
        let emitted = exit.flatMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
            .flatMap { $0["emitted"] as? String }.flatMap(ISO8601Time.parse)
        // staleAfter minus the quiet time before the outage remains after the gateway's
        // reconnect (which comes after the restart); without the pause the exit would be
        // decided during the outage, before the restart. Half of it tells them apart.
        let waited = (emitted ?? -.infinity) - restarted
        print("stale pause: the stale exit was decided \(waited) s after the broker's restart (quiet \(quietBefore) s before the outage)")
        #expect(waited >= (stale - quietBefore) / 2,
                "the stale exit was decided \(waited) s after the broker's restart (quiet \(quietBefore) s before the outage): the outage counted as silence")
    }
}
