import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct TLS {
        @Test func clientCertificateSignedByTestCAConnects() async throws {
            let files = try TemporaryDirectory(prefix: "certs")
            let certificates = try TestCertificates.make(in: files)
            let broker = try MosquittoProcess(.init(tls: certificates))
            let tlsPort = try #require(broker.tlsPort)
            let prefix = unique("tls")
            let client = try MQTTProbe(port: tlsPort, clientId: unique("tls")) {
                $0.tls = .init(ca: certificates.ca, cert: certificates.clientCertificate, key: certificates.clientKey)
            }
            defer { client.stop() }
            client.collect()
            try client.client.subscribe("\(prefix)/#")
            try client.client.start()
            #expect(await client.waitSubscribed("\(prefix)/#"), "\(describe(client))\n\(broker.log.suffix(2000))")
            try client.client.publish(topic: "\(prefix)/x", payload: "secret", qos: .atLeastOnce)
            #expect(await client.waitMessages(1))
            #expect(client.messages.all.first?.payloadText == "secret")
            #expect(!client.client.readsBuffered, "OpenSSL reads the socket itself: a TLS socket keeps the plain read")
        }

        @Test func withoutClientCertificateTheHandshakeFailsAndIsRetried() async throws {
            let files = try TemporaryDirectory(prefix: "certs")
            let certificates = try TestCertificates.make(in: files)
            let broker = try MosquittoProcess(.init(tls: certificates))
            let tlsPort = try #require(broker.tlsPort)
            let client = try MQTTProbe(port: tlsPort, clientId: unique("tls")) {
                $0.tls = .init(ca: certificates.ca)
                $0.reconnect = .init(minimum: .milliseconds(100), maximum: .milliseconds(300))
            }
            defer { client.stop() }
            try client.client.start()
            let failures = {
                client.events.all.filter { if case .connectFailed = $0 { true } else { false } }.count
            }
            #expect(await poll { failures() >= 3 }, "\(describe(client))")
            #expect(client.connectedCount == 0)
        }

        @Test func unreadableCAFileIsAnErrorNamingIt() throws {
            let error = #expect(throws: MosquittoError.self) {
                try MQTTClient(
                    MQTTConfiguration(clientId: unique("tls"), tls: .init(ca: "/nonexistent/ca.crt")))
            }
            #expect(error?.call.contains("/nonexistent/ca.crt") == true)
        }
    }
}
