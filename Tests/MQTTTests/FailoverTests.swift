import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct Failover {
        /// `hosts`: the client starts on the first broker, moves to the second when the first
        /// goes away (subscribing again there), and wraps around to the first when the second
        /// goes away in turn.
        @Test(arguments: [MQTTConfiguration.ProtocolVersion.v5, .v311])
        func reconnectsGoToTheNextHostInTurn(version: MQTTConfiguration.ProtocolVersion) async throws {
            let first = try MosquittoProcess()
            let second = try MosquittoProcess()
            let endpoints = [first.port, second.port].map { MQTTConfiguration.Endpoint(host: "127.0.0.1", port: $0) }
            let prefix = unique("failover")
            let subscriber = try MQTTProbe(port: 1, clientId: unique("sub"), protocolVersion: version) {
                $0.hosts = endpoints
            }
            defer { subscriber.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"), "\(describe(subscriber))")
            #expect(subscriber.client.endpoint == endpoints[0])

            first.stop()
            #expect(await subscriber.waitSubscribed("\(prefix)/#", count: 2), "\(describe(subscriber))")
            #expect(subscriber.client.endpoint == endpoints[1])
            let publisher = try MQTTProbe(port: second.port, clientId: unique("pub"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            try publisher.client.publish(topic: "\(prefix)/on-second", payload: "second", qos: .atLeastOnce)
            #expect(await subscriber.waitMessages(1), "\(describe(subscriber))")

            try first.start()
            second.stop()
            #expect(await subscriber.waitSubscribed("\(prefix)/#", count: 3), "\(describe(subscriber))")
            #expect(subscriber.client.endpoint == endpoints[0])
            #expect(subscriber.messages.all.map(\.payloadText) == ["second"])
        }

        /// The first address is dead from the start: the first attempt fails and the next one
        /// reaches the second broker.
        @Test func deadFirstHostIsSkipped() async throws {
            let broker = try MosquittoProcess()
            let dead = MQTTConfiguration.Endpoint(host: "127.0.0.1", port: try FreePort.next())
            let alive = MQTTConfiguration.Endpoint(host: "127.0.0.1", port: broker.port)
            let probe = try MQTTProbe(port: 1, clientId: unique("skip")) { $0.hosts = [dead, alive] }
            defer { probe.stop() }
            try probe.client.start()
            #expect(await probe.waitConnected(), "\(describe(probe))")
            #expect(probe.client.endpoint == alive)
            #expect(probe.events.all.contains { if case .connectFailed = $0 { true } else { false } })
        }
    }
}
