import Foundation
import MQTT
import Testing
import TestSupport

extension ServeTests.ShippedBroker {
    /// The shipped config's websockets listener (port 9001, the dispatch console's), with MQTT
    /// over WebSocket as a browser speaks it (TestSupport's `WebSocketMQTTClient`).
    @Suite struct WebSockets {
        typealias Shipped = ServeTests.ShippedBroker
        static let users = Shipped.users.merging(["homeassistant": "ha-secret"]) { $1 }

        /// The shipped broker and its log (written by `log_dest file`, unbuffered).
        final class Broker: Sendable {
            let logs: TemporaryDirectory
            let process: MosquittoProcess
            init(_ options: MosquittoProcess.Options) throws {
                logs = try TemporaryDirectory(prefix: "shipped-ws-log")
                var options = options
                options.extraLines.append("log_dest file \(logs.file("broker.log"))")
                process = try MosquittoProcess(options)
            }
            var log: String { (try? String(contentsOfFile: logs.file("broker.log"), encoding: .utf8)) ?? "" }
            var port: Int { process.port }
            var websocketsPort: Int? { process.websocketsPort }
            var secureWebsocketsPort: Int? { process.secureWebsocketsPort }
            var pid: pid_t? { process.pid }
            var directory: TemporaryDirectory { process.directory }
            var dynamicSecurityConnect: String { process.dynamicSecurityConnect }
        }

        /// The shipped broker (geotrigger.conf and its roles; geotrigger-tls.conf with `tls`)
        /// with `httpDir` as its console folder and a Home Assistant user (a second reader of
        /// the gateway's outputs). `withoutWebSocketsBinding` drops the websockets listener's
        /// `use_username_as_clientid` (the last one of geotrigger.conf).
        static func broker(httpDir: String? = nil, tls: TestCertificates? = nil, withoutWebSocketsBinding: Bool = false) throws -> Broker {
            var options = try Shipped.options(tls: tls)
            options.users = users
            options.httpDir = httpDir
            if withoutWebSocketsBinding, var text = options.shipped {
                let binding = "\nuse_username_as_clientid true\n"
                let websockets = try #require(text.range(of: "\nprotocol websockets\n"))
                let line = try #require(text.range(of: binding, range: websockets.upperBound..<text.endIndex))
                text.replaceSubrange(line, with: "\n")
                options.shipped = text
            }
            return try Broker(options)
        }

        /// deploy/mosquitto/README.md "Adding a dispatcher", run as written there on the test's
        /// broker: the line that adds a user with the dispatcher role (the password given as
        /// its last argument instead of asked for). The plugin applies it at once.
        static func addDispatcher(_ name: String, password: String, to broker: Broker) throws {
            let readme = try String(contentsOfFile: Shipped.folder + "/README.md", encoding: .utf8)
            let add = try #require(readme.split(separator: "\n").first { $0.hasPrefix("    geotrigger-dynsec add dispatcher \"$name\"") },
                                   "deploy/mosquitto/README.md's recipe adds the dispatcher with geotrigger-dynsec")
            let command = "name=\(name); GEOTRIGGER_DYNSEC_CONNECT='\(broker.dynamicSecurityConnect)' "
                + add.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "geotrigger-dynsec", with: Shipped.folder + "/geotrigger-dynsec.sh")
                    .split(separator: "#").first!.trimmingCharacters(in: .whitespaces)
                + " '\(password)'"
            let output = try ExternalProgram.run("/bin/sh", ["-c", command])
            #expect(try Shipped.dynsec(broker.process, ["show", name]).contains("dispatcher"), "\(output)")
        }

        /// A libmosquitto client of the broker's plain listener, connected (and subscribed to
        /// `filters` at QoS 1), collecting its messages.
        static func probe(_ broker: Broker, user: String, clientId: String? = nil, subscribe filters: [String] = []) async throws -> MQTTProbe {
            let probe = try MQTTProbe(port: broker.port, clientId: clientId ?? user) { configuration in
                configuration.username = user
                configuration.password = users[user]
            }
            probe.collect()
            for filter in filters { try probe.client.subscribe(filter, qos: .atLeastOnce) }
            try probe.client.start()
            #expect(await probe.waitConnected(), "\(describe(probe))\n\(broker.log.suffix(3000))")
            for filter in filters { #expect(await probe.waitSubscribed(filter), "\(filter)\n\(describe(probe))") }
            return probe
        }

        /// A browser's connection to the websockets listener, logged in.
        static func browser(_ broker: Broker, clientID: String, user: String, password: String, cleanSession: Bool = true) async throws
            -> (WebSocketMQTTClient, WebSocketMQTTClient.ConnAck) {
            let client = try WebSocketMQTTClient(port: try #require(broker.websocketsPort))
            let connack = try await client.connect(clientID: clientID, username: user, password: password, cleanSession: cleanSession)
            return (client, connack)
        }

        /// GET / on the websockets listener returns index.html of `http_dir`; a file beside it
        /// is served too, and nothing outside the folder.
        @Test func consoleListenerServesItsHttpDir() async throws {
            let console = try TemporaryDirectory(prefix: "console")
            try console.write("index.html", "<!doctype html><title>geotrigger console stub</title>\n")
            try FileManager.default.createDirectory(atPath: console.file("leaflet"), withIntermediateDirectories: true)
            try console.write("leaflet/leaflet.js", "/* leaflet stub */\n")
            let broker = try Self.broker(httpDir: console.path)
            let port = try #require(broker.websocketsPort)
            let index = try httpGet(port: port, path: "/")
            let script = try httpGet(port: port, path: "/leaflet/leaflet.js")
            let outside = try httpGet(port: port, path: "/../passwords")
            print("console listener on port \(port): GET / -> \(index.status) \(index.body.count) bytes;",
                  "GET /leaflet/leaflet.js -> \(script.status) (\(script.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-type") } ?? "no content type"));",
                  "GET /../passwords -> \(outside.status)")
            #expect(index.status == 200, "\(index.head)\n\(broker.log.suffix(2000))")
            #expect(String(decoding: index.body, as: UTF8.self).contains("geotrigger console stub"))
            #expect(script.status == 200 && String(decoding: script.body, as: UTF8.self).contains("leaflet stub"), "\(script.head)")
            #expect(outside.status != 200 && !String(decoding: outside.body, as: UTF8.self).contains("dispatch"), "\(outside.head)")
        }

        /// Two dispatchers (the shipped `dispatch` and one added by deploy/mosquitto/README.md's recipe) in two
        /// browsers at once: both read the gateway's outputs, both publish a query the gateway
        /// gets, neither replaces the other.
        @Test func twoDispatchersWorkAtOnceOverWebSockets() async throws {
            let broker = try Self.broker()
            try Self.addDispatcher("dispatch-2", password: "second-secret", to: broker)
            let gateway = try await Self.probe(broker, user: Shipped.gatewayUser, subscribe: ["geotriggers/query/+"])
            defer { gateway.stop() }
            // After the reload the new user logs in (the broker reads the files on SIGHUP).
            var second: (WebSocketMQTTClient, WebSocketMQTTClient.ConnAck)?
            _ = await poll(timeout: .seconds(10)) {
                second = try? await Self.browser(broker, clientID: "console-b", user: "dispatch-2", password: "second-secret")
                return second?.1.returnCode == 0
            }
            let (first, firstAck) = try await Self.browser(broker, clientID: "console-a", user: "dispatch", password: Shipped.users["dispatch"]!)
            let (other, otherAck) = try #require(second)
            #expect(firstAck.returnCode == 0 && otherAck.returnCode == 0, "\(firstAck) \(otherAck)\n\(broker.log.suffix(3000))")
            let outputs = ["geotriggers/events/#", "geotriggers/status/+", "geotriggers/query/+/reply"]
            let firstGranted = try await first.subscribe(outputs)
            let otherGranted = try await other.subscribe(outputs)
            #expect(firstGranted == [1, 1, 1] && otherGranted == [1, 1, 1], "\(firstGranted) \(otherGranted)")

            let event = try gateway.client.publish(topic: "geotriggers/events/sections/v17", payload: Array("{\"event\":\"enter\"}".utf8), qos: .atLeastOnce)
            #expect(await gateway.waitAcknowledged([event]))
            try await first.publish(topic: "geotriggers/query/\(Shipped.gatewayUser)", payload: Array("{\"id\":\"a\"}".utf8))
            try await other.publish(topic: "geotriggers/query/\(Shipped.gatewayUser)", payload: Array("{\"id\":\"b\"}".utf8))
            let firstEvent = await first.waitMessage { $0.topic == "geotriggers/events/sections/v17" }
            let otherEvent = await other.waitMessage { $0.topic == "geotriggers/events/sections/v17" }
            #expect(await gateway.waitMessages(2), "\(gateway.messages.all)\n\(broker.log.suffix(3000))")
            let queries = gateway.messages.all.map { String(decoding: $0.payload, as: UTF8.self) }.sorted()
            print("two dispatchers over WebSockets: SUBACKs \(firstGranted) / \(otherGranted); event seen by both: \(firstEvent != nil && otherEvent != nil);",
                  "queries the gateway got: \(queries); connections open: \(!first.isClosed), \(!other.isClosed)")
            #expect(firstEvent != nil && otherEvent != nil)
            #expect(queries == ["{\"id\":\"a\"}", "{\"id\":\"b\"}"])
            #expect(!first.isClosed && !other.isClosed)
            #expect(broker.log.contains("as dispatch (") && broker.log.contains("as dispatch-2 ("), "\(broker.log.suffix(3000))")
            first.disconnect()
            other.disconnect()

            // docs/operations.md "Troubleshooting", "The console's login is refused": what a wrong password meets.
            let (refused, refusedAck) = try await Self.browser(broker, clientID: "console-c", user: "dispatch-2", password: "wrong")
            await refused.settle(for: .milliseconds(300))
            print("a wrong password over WebSockets: CONNACK return code \(refusedAck.returnCode), closed: \(refused.isClosed);",
                  "broker log:\n  " + broker.log.split(separator: "\n").suffix(4).joined(separator: "\n  "))
            #expect(refusedAck.returnCode == 5, "\(refusedAck)")
            #expect(broker.log.contains(" (0, 5)") && broker.log.contains("Client <unknown> closed its connection."), "\(broker.log.suffix(2000))")
        }

        /// A browser connecting over the websockets listener with the gateway's client id and a
        /// dispatcher's password: its id becomes `dispatch`, so the gateway stays connected, its
        /// persistent session keeps the updates queued while it is away, and the browser gets
        /// only a dispatcher's rights.
        @Test func aBrowserCannotTakeTheGatewaysSessionOrRights() async throws {
            let broker = try Self.broker()
            let locations = "devices/+/location"
            let gateway = try await Self.probe(broker, user: Shipped.gatewayUser, subscribe: [locations])
            let watcher = try await Self.probe(broker, user: "homeassistant", subscribe: ["geotriggers/#"])
            defer { watcher.stop() }
            let vehicle = try await Self.probe(broker, user: "v17")
            defer { vehicle.stop() }

            // While the gateway is connected.
            let (browser, connack) = try await Self.browser(broker, clientID: Shipped.gatewayUser, user: "dispatch",
                                                            password: Shipped.users["dispatch"]!, cleanSession: true)
            #expect(connack == .init(sessionPresent: false, returnCode: 0), "\(connack)\n\(broker.log.suffix(3000))")
            let granted = try await browser.subscribe([locations])
            try await browser.publish(topic: "geotriggers/status/\(Shipped.gatewayUser)", payload: Array("{\"status\":\"offline\"}".utf8))
            let update = try vehicle.client.publish(topic: "devices/v17/location", payload: Array("{\"n\":1}".utf8), qos: .atLeastOnce)
            #expect(await vehicle.waitAcknowledged([update]))
            #expect(await gateway.waitMessages(1), "\(broker.log.suffix(3000))")
            await browser.settle(for: .seconds(1))
            print("browser as client id \(Shipped.gatewayUser) with dispatch's password over WebSockets: CONNACK \(connack);",
                  "SUBACK for \(locations): \(granted); messages it got: \(browser.messages.map(\.topic));",
                  "gateway disconnected: \(gateway.events.all.contains { if case .disconnected = $0 { true } else { false } });",
                  "status messages the watcher got: \(watcher.messages.all.map(\.topic))")
            #expect(!gateway.events.all.contains { if case .disconnected = $0 { true } else { false } }, "\(describe(gateway))")
            #expect(!broker.log.contains("already connected, closing old connection"), "\(broker.log.suffix(3000))")
            #expect(broker.log.contains("as dispatch ("), "the broker named the browser by its user:\n\(broker.log.suffix(3000))")
            #expect(granted == [0x80] || browser.messages.isEmpty, "the browser read the devices' locations: \(browser.messages)")
            #expect(!browser.messages.contains { $0.topic == "devices/v17/location" })
            #expect(watcher.messages.all.isEmpty, "the browser published as the gateway: \(watcher.messages.all.map(\.topic))")
            browser.disconnect()

            // While the gateway is away: its session queues an update; the browser connects with
            // its client id and a clean session again; the gateway comes back to the update.
            gateway.stop()
            let queued = try vehicle.client.publish(topic: "devices/v17/location", payload: Array("{\"n\":2}".utf8), qos: .atLeastOnce)
            #expect(await vehicle.waitAcknowledged([queued]))
            let (again, againAck) = try await Self.browser(broker, clientID: Shipped.gatewayUser, user: "dispatch",
                                                           password: Shipped.users["dispatch"]!, cleanSession: true)
            #expect(againAck == .init(sessionPresent: false, returnCode: 0), "\(againAck)")
            again.disconnect()
            let back = try await Self.probe(broker, user: Shipped.gatewayUser)
            defer { back.stop() }
            let delivered = await back.waitMessages(1, timeout: .seconds(10))
            print("gateway back after the browser's clean session: session present \(back.sessionPresentFlags),",
                  "queued update delivered: \(back.messages.all.map { String(decoding: $0.payload, as: UTF8.self) })")
            #expect(back.sessionPresentFlags == [true])
            #expect(delivered && back.messages.all.map(\.topic) == ["devices/v17/location"], "\(broker.log.suffix(3000))")
        }

        /// What the websockets listener's own `use_username_as_clientid` prevents (and proof
        /// the test above can fail): without it a browser with the gateway's client id and a
        /// dispatcher's password cuts the gateway off and is handed its session.
        @Test func withoutTheBindingOnTheWebSocketsListenerABrowserTakesOver() async throws {
            let broker = try Self.broker(withoutWebSocketsBinding: true)
            let gateway = try await Self.probe(broker, user: Shipped.gatewayUser, subscribe: ["devices/+/location"])
            defer { gateway.stop() }
            let (browser, connack) = try await Self.browser(broker, clientID: Shipped.gatewayUser, user: "dispatch",
                                                            password: Shipped.users["dispatch"]!, cleanSession: false)
            let lost = await gateway.waitDisconnected(timeout: .seconds(5))
            print("without use_username_as_clientid on the websockets listener: CONNACK \(connack); gateway cut off: \(lost)")
            #expect(connack.sessionPresent, "the browser got the gateway's session: \(connack)")
            #expect(lost, "\(describe(gateway))")
            #expect(broker.log.contains("already connected, closing old connection"), "\(broker.log.suffix(2000))")
            browser.disconnect()
        }

        /// geotrigger-tls.conf's console listener: a WebSocket upgrade with subprotocol mqtt
        /// over TLS (curl over HTTP/1.1, trusting the test CA).
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"),
                       "needs openssl and curl"))
        func tlsConsoleListenerUpgradesToMQTT() async throws {
            let folder = try TemporaryDirectory(prefix: "shipped-wss-certs")
            let certificates = try TestCertificates.make(in: folder)
            let broker = try Self.broker(tls: certificates)
            let port = try #require(broker.secureWebsocketsPort)
            let url = "https://127.0.0.1:\(port)/mqtt"
            // curl waits for data after the 101 until --max-time: its exit status is not the test.
            let upgrade = try ExternalProgram.run("/bin/sh", ["-c", """
                curl -sS -i --http1.1 --max-time 3 --cacert "$1" -H 'Upgrade: websocket' -H 'Connection: Upgrade' \
                    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Version: 13' \
                    -H 'Sec-WebSocket-Protocol: mqtt' "$2" 2>/dev/null; true
                """, "sh", certificates.ca, url])
            let status = upgrade.split(separator: "\r\n").first.map(String.init) ?? upgrade
            print("TLS console listener on port \(port): WebSocket upgrade over TLS ->", status)
            #expect(status.hasPrefix("HTTP/1.1 101"), "\(upgrade)\n\(broker.log.suffix(2000))")
            #expect(upgrade.lowercased().contains("sec-websocket-protocol: mqtt"), "\(upgrade)")
            #expect(broker.log.contains("Opening websockets listen socket on port \(port)"), "\(broker.log.suffix(2000))")
        }
    }
}
