import Foundation
import MQTT
import Testing
import TestSupport

extension DurabilityIntegrationTests {
    /// A pending crossing lives in memory until a decision, a hibernation or a stop (docs/configuration.md
    /// "Durability"): a `kill -9` during an `exitAfter` hold loses the hold's start, not the exit.
    @Suite(.serialized) struct HoldKillTests {
        static let meadow = (lat: 34.4574423, lon: -119.7090841)
        static let outside = (lat: 34.4600, lon: -119.7070)

        /// A device enters the meadow, leaves it, and the gateway is killed 10 s of fix time
        /// into its 30 s exit hold. After the restart the device goes on reporting from
        /// outside: the exit comes, once, and the enter is not fired again.
        @Test(.timeLimit(.minutes(3)))
        func killNineDuringAnExitHoldStillExitsOnceAfterTheRestart() async throws {
            let broker = try MosquittoProcess(.init(maxQueuedMessages: 1_000_000))
            defer { broker.stop() }
            let id = unique("gw-hold")
            let fences = try TemporaryDirectory(prefix: "fences")
            let gateway = try GatewayUnderTest(config: """
                {
                  gateway: { id: "\(id)", database: "gw.db", fences: "\(try DurabilityRig.sectionsOnlyFolder(in: fences))" },
                  broker: { port: \(broker.port) },
                  output: { statusInterval: 1 },
                  triggers: [ { name: "sections", fences: ["garden-sections"], enterAfter: 0, exitAfter: 30 } ],
                }
                """)
            let statusTopic = GatewayStatus.topic(gatewayID: id)
            let subscriber = try await DurabilityRig.subscriber(port: broker.port, clientId: unique("dispatch"), filter: "geotriggers/#")
            defer { subscriber.stop() }
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("devices"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            try gateway.start()
            try await KillTests().waitUntilTakingUpdates(gateway, subscriber: subscriber, publisher: publisher, statusTopic: statusTopic)

            let t0 = (Date().timeIntervalSince1970 - 3600).rounded()
            func report(_ at: (lat: Double, lon: Double), _ t: Double) throws {
                try publisher.client.publish(topic: "devices/holder/location", payload: "{\"lat\":\(at.lat),\"lon\":\(at.lon),\"time\":\(t0 + t)}")
            }
            func events(_ type: String) -> Set<String> {
                Set(subscriber.receivedEvents.filter { $0.device == "holder" && $0.type == type }.map(\.id))
            }
            try report(Self.meadow, 0)
            #expect(await poll(timeout: .seconds(30)) { events("enter").count == 1 }, "no enter\n\(gateway.logTail)")
            // Out of the meadow: the exit hold starts. Killed once the gateway took that fix.
            let accepted = subscriber.lastStatus(statusTopic)?.counter("accepted") ?? 0
            try report(Self.outside, 10)
            #expect(await poll(timeout: .seconds(30)) { (subscriber.lastStatus(statusTopic)?.counter("accepted") ?? 0) > accepted },
                    "the gateway never took the fix that started the hold\n\(gateway.logTail)")
            gateway.kill()
            #expect(events("exit").isEmpty, "the exit came before its hold ended")
            try report(Self.outside, 20)  // held by the gateway's persistent session
            try gateway.start()
            for t in [30.0, 45, 60, 75] { try report(Self.outside, t) }
            #expect(await poll(timeout: .seconds(60)) { events("exit").count == 1 }, "no exit after the restart\n\(gateway.logTail)")
            // More fixes outside: still one exit, one enter.
            for t in [90.0, 105] { try report(Self.outside, t) }
            let exitStatus = gateway.terminate()
            #expect(exitStatus == 0, "\(gateway.logTail)")
            #expect(events("exit").count == 1, "exits: \(events("exit"))")
            #expect(events("enter").count == 1, "enters: \(events("enter"))")
            let journal = try DurabilityRig.journalEventIDs(database: gateway.database, in: gateway.directory.path)
            #expect(Set(journal) == events("enter").union(events("exit")))
        }
    }
}
