import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// `broker.username` / `passwordFile` and `broker.tls` against a mosquitto configured for
    /// them, end to end; a wrong password is retried with backoff, never a crash loop.
    @Suite struct Security {
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)

        /// Drives `walker` into the meadow through `publisher` and waits for the enter event on `watcher`.
        static func expectEnter(_ h: ServeHarness, watcher: MQTTProbe, publisher: MQTTProbe, gateway: GatewayProcess) async throws {
            let topic = "\(h.prefix)-in/devices/walker/location"
            let t0 = fixTimeBase()
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: outside.lat, lon: outside.lon, time: t0))
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: meadow.lat, lon: meadow.lon, time: t0 + 10))
            let entered = await poll(timeout: .seconds(60)) {
                receivedEvents(watcher, prefix: h.prefix).contains { eventKey($0.event) == "sections walker garden-sections/meadow enter" }
            }
            #expect(entered, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
        }

        static func feeds(_ h: ServeHarness) -> String {
            """
            feeds: [ { name: "devices", topic: "\(h.prefix)-in/devices/+/location", format: "json" } ],
            triggers: [ { name: "sections", fences: ["garden-sections"] } ],
            """
        }

        /// A password file and a broker that refuses anonymous clients (MQTT 3.1.1 here, so both
        /// protocol versions run end to end across the suite).
        @Test func usernameAndPasswordFileWork() async throws {
            let h = try ServeHarness("auth", broker: .init(users: ["gateway": "gw-s3cret", "probe": "probe-pw"]))
            defer { h.close() }
            try h.write("password", "gw-s3cret\n")
            let configPath = try h.write("gw.json5", h.config(
                broker: "username: \"gateway\", passwordFile: \"password\", protocol: \"v311\"", extra: Self.feeds(h)))
            func credentials(_ c: inout MQTTConfiguration) {
                c.username = "probe"
                c.password = "probe-pw"
            }
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic], configure: credentials)
            let publisher = try await h.probe("publisher", configure: credentials)
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            try await Self.expectEnter(h, watcher: watcher, publisher: publisher, gateway: gateway)
            #expect(gateway.terminate() == 0)
        }

        /// TLS with the test's own CA, the broker's certificate and a client certificate.
        @Test func tlsWithClientCertificateWorks() async throws {
            let certificatesFolder = try TemporaryDirectory(prefix: "serve-tls-certs")
            let certificates = try TestCertificates.make(in: certificatesFolder)
            let h = try ServeHarness("tls", broker: .init(tls: certificates))
            defer { h.close() }
            let tlsPort = try #require(h.broker.tlsPort)
            let configPath = try h.write("gw.json5", h.config(
                port: tlsPort,
                broker: """
                    tls: { ca: "\(certificates.ca)", cert: "\(certificates.clientCertificate)", key: "\(certificates.clientKey)" }
                    """,
                extra: Self.feeds(h)))
            // The probes use the plain listener; only the gateway speaks TLS.
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            try await Self.expectEnter(h, watcher: watcher, publisher: publisher, gateway: gateway)
            #expect(gateway.log.contains("connected broker=127.0.0.1:\(tlsPort)"))
            #expect(gateway.terminate() == 0)
        }

        /// A wrong password: one clear log line naming the broker and the refusal, connection
        /// attempts repeated with growing delays (seen in the broker's log and the gateway's debug
        /// log), and the same process still running.
        @Test func wrongPasswordIsLoggedAndRetriedWithBackoff() async throws {
            let h = try ServeHarness("badpass", broker: .init(users: ["gateway": "right-password"]))
            defer { h.close() }
            try h.write("password", "wrong-password\n")
            let configPath = try h.write("gw.json5", h.config(
                broker: "username: \"gateway\", passwordFile: \"password\"", extra: Self.feeds(h)))
            let gateway = try h.startGateway(config: configPath)
            let pid = gateway.pid
            // Only the gateway connects to this broker (mosquitto logs a refused client as <unknown>):
            // its `-failed` client once, refused as well when it says `starting` during the
            // load, then its own client, three times at least.
            func attempts() -> Int {
                h.brokerLog.split(separator: "\n").filter { $0.contains("not authorised") }.count
            }
            let retried = await poll(timeout: .seconds(60)) { attempts() >= 4 }
            #expect(retried, "broker log:\n\(tail(h.brokerLog))\ngateway log:\n\(tail(gateway.log))")
            #expect(gateway.isRunning && gateway.pid == pid)
            let log = gateway.log
            let refusals = log.split(separator: "\n").filter { $0.contains("refused the connection") }
            #expect(refusals.count == 1, "the refusal is logged once per change of state:\n\(tail(log))")
            #expect(refusals.first?.contains("127.0.0.1:\(h.broker.port)") == true)
            #expect(refusals.first.map { $0.contains("Not authorized") && $0.contains("broker.passwordFile") } == true, "\(refusals)")
            // Each attempt's delay is in the debug log, growing (1 s, 2 s, 4 s ...).
            let delays = log.split(separator: "\n").filter { $0.contains("next connection attempt") }
                .compactMap { line in line.split(separator: " ").first { $0.hasPrefix("delay.seconds=") }.flatMap { Double($0.dropFirst(14)) } }
            #expect(delays.count >= 2 && zip(delays, delays.dropFirst()).allSatisfy { $0 < $1 }, "\(delays)\n\(tail(log))")
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
        }
    }
}
