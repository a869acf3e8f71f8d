import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct Authorization {
        @Test func aclDeniedV5PublishIsAcknowledgedWithNotAuthorized() async throws {
            let prefix = unique("acl")
            let broker = try MosquittoProcess(
                .init(
                    users: ["gateway": "secret"],
                    acl: "user gateway\ntopic readwrite \(prefix)/allowed/#\n"))
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub")) {
                $0.username = "gateway"
                $0.password = "secret"
            }
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected(), "\(describe(publisher))")
            let allowed = try publisher.client.publish(topic: "\(prefix)/allowed/x", payload: "ok", qos: .atLeastOnce)
            let denied = try publisher.client.publish(topic: "\(prefix)/denied/x", payload: "no", qos: .atLeastOnce)
            #expect(await publisher.waitAcknowledged([allowed, denied]))
            let acknowledgements = publisher.acknowledgements.all
            let allowedAck = try #require(acknowledgements.first { $0.messageId == allowed })
            let deniedAck = try #require(acknowledgements.first { $0.messageId == denied })
            #expect(allowedAck.isSuccess)
            // mosquitto 2.0.11 answers a denied v5 QoS 1 PUBLISH with PUBACK 0x87.
            #expect(deniedAck.reasonCode == 0x87, "\(deniedAck) \(deniedAck.reason)")
            #expect(!deniedAck.isSuccess)
            #expect(deniedAck.reason == "Not authorized")
        }

        @Test(arguments: [MQTTConfiguration.ProtocolVersion.v5, .v311])
        func usernameAndPasswordConnect(version: MQTTConfiguration.ProtocolVersion) async throws {
            let broker = try MosquittoProcess(.init(users: ["alice": "correct horse"]))
            let prefix = unique("auth")
            let client = try MQTTProbe(port: broker.port, clientId: unique("alice"), protocolVersion: version) {
                $0.username = "alice"
                $0.password = "correct horse"
            }
            defer { client.stop() }
            client.collect()
            try client.client.subscribe("\(prefix)/#")
            try client.client.start()
            #expect(await client.waitSubscribed("\(prefix)/#"), "\(describe(client))")
            try client.client.publish(topic: "\(prefix)/echo", payload: "hi", qos: .atLeastOnce)
            #expect(await client.waitMessages(1))
        }

        @Test(arguments: [MQTTConfiguration.ProtocolVersion.v5, .v311])
        func wrongPasswordIsRefusedWithTheReasonAndRetried(version: MQTTConfiguration.ProtocolVersion) async throws {
            let broker = try MosquittoProcess(.init(users: ["alice": "correct horse"]))
            let client = try MQTTProbe(port: broker.port, clientId: unique("alice"), protocolVersion: version) {
                $0.username = "alice"
                $0.password = "battery staple"
                $0.reconnect = .init(minimum: .milliseconds(100), maximum: .milliseconds(400))
            }
            try client.client.start()
            // Refused, then retried after the backoff, refused again: no crash, no give-up.
            let refusals = {
                client.events.all.compactMap { event -> (Int32, String)? in
                    if case .refused(let code, let reason) = event { (code, reason) } else { nil }
                }
            }
            #expect(await poll { refusals().count >= 3 }, "\(describe(client))")
            #expect(client.events.contains { if case .reconnecting = $0 { true } else { false } })
            #expect(client.connectedCount == 0)
            let (code, reason) = try #require(refusals().first)
            switch version {
            case .v5:
                // mosquitto 2.0.11 answers a wrong v5 password with 0x87 "Not authorized"
                // (0x86 "Bad user name or password" is what the spec suggests).
                #expect(code == 0x87 || code == 0x86, "\(code) \(reason)")
                #expect(reason == "Not authorized" || reason == "Bad user name or password")
            case .v311:
                // 4 "bad user name or password" or 5 "not authorised".
                #expect(code == 4 || code == 5, "\(code) \(reason)")
                #expect(reason.lowercased().contains("refused"), "\(reason)")
            }
            client.stop()
            #expect(!client.client.isConnected)
        }
    }
}
