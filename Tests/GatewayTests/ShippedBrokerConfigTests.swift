import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// The shipped mosquitto config (`deploy/mosquitto/`: geotrigger.conf and its roles,
    /// geotrigger-tls.conf) run by the real broker with the test's ports and files put in, and
    /// the real `geotrigger serve` logging in as the shipped ACL's gateway user.
    @Suite struct ShippedBroker {
        static let folder = repositoryRoot + "/deploy/mosquitto"
        static let gatewayUser = "geotrigger-gw-1"
        static let users = [gatewayUser: "gw-secret", gatewayUser + "-failed": "gw-secret", "dispatch": "dispatch-secret", "v17": "v17-secret",
                            "alice": "alice-secret", "bob": "bob-secret"]
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)

        /// Each user's role (deploy/mosquitto/README.md "Users and roles").
        static let roles = [gatewayUser: "gateway", gatewayUser + "-failed": "gateway", "dispatch": "dispatcher",
                            "v17": "device", "alice": "device", "bob": "device", "homeassistant": "homeassistant"]

        /// The shipped broker options; `tls` adds geotrigger-tls.conf; `withoutClientIDBinding`
        /// removes `use_username_as_clientid` (to show what it prevents). Once the broker
        /// listens, deploy/mosquitto/geotrigger-dynsec.sh sets up the roles and ``users``, as
        /// deploy/install.sh and deploy/mosquitto/README.md do.
        static func options(tls: TestCertificates? = nil, withoutClientIDBinding: Bool = false) throws -> MosquittoProcess.Options {
            var text = try String(contentsOfFile: "\(folder)/geotrigger.conf", encoding: .utf8)
            if tls != nil { text += "\n" + (try String(contentsOfFile: "\(folder)/geotrigger-tls.conf", encoding: .utf8)) }
            if withoutClientIDBinding {
                text = text.split(separator: "\n").filter { !$0.hasPrefix("use_username_as_clientid") }.joined(separator: "\n")
            }
            var options = MosquittoProcess.Options(users: users, tls: tls, shipped: text)
            options.afterFirstStart = { broker in
                try dynsec(broker, ["roles"])
                for (user, password) in broker.options.users.sorted(by: { $0.key < $1.key }) {
                    try dynsec(broker, ["add", roles[user] ?? "device", user, password])
                }
            }
            return options
        }

        /// deploy/mosquitto/geotrigger-dynsec.sh `arguments` against `broker`, as its plugin's admin.
        @discardableResult
        static func dynsec(_ broker: MosquittoProcess, _ arguments: [String]) throws -> String {
            try ExternalProgram.run("/usr/bin/env", ["GEOTRIGGER_DYNSEC_CONNECT=\(broker.dynamicSecurityConnect)", "\(folder)/geotrigger-dynsec.sh"] + arguments)
        }

        /// The gateway as the shipped ACL knows it: user and client id `geotrigger-gw-1`, prefix
        /// `geotriggers`, the `devices/+/location` feed.
        static func gatewayConfig(_ h: ServeHarness, port: Int? = nil, tls: String = "", fences: String = ServeHarness.repositoryFences) throws -> String {
            try h.write("password", "gw-secret\n")
            return try h.write("gw.json5", h.config(
                fences: fences, prefix: "geotriggers", port: port,
                broker: "clientId: \"\(gatewayUser)\", username: \"\(gatewayUser)\", passwordFile: \"password\", \(tls)",
                extra: """
                    feeds: [ { name: "fleet", topic: "devices/+/location", format: "json" } ],
                    triggers: [ { name: "sections", fences: ["garden-sections"] } ],
                    """))
        }

        static func credentials(_ user: String) -> (inout MQTTConfiguration) -> Void {
            { $0.username = user; $0.password = users[user] }
        }

        /// Vehicle v17 (its own user, its own topic) walks into the meadow; true when the
        /// dispatcher saw the gateway's enter event.
        static func vehicleEnters(_ h: ServeHarness, watcher: MQTTProbe, vehicle: MQTTProbe, at t0: Double) async throws -> Bool {
            try vehicle.client.publish(topic: "devices/v17/location", payload: Payload.json(lat: outside.lat, lon: outside.lon, time: t0), qos: .atLeastOnce)
            try vehicle.client.publish(topic: "devices/v17/location", payload: Payload.json(lat: meadow.lat, lon: meadow.lon, time: t0 + 10), qos: .atLeastOnce)
            return await poll(timeout: .seconds(60)) {
                receivedEvents(watcher, prefix: "geotriggers").contains { eventKey($0.event) == "sections v17 garden-sections/meadow enter" && $0.event["position"]?.objectValue?["time"]?.stringValue == iso8601(t0 + 10) }
            }
        }

        /// The gateway of `config` started (`started`) and stopped (`stopped`); then, while it is
        /// down, v17 drives into the meadow (two updates queued in the gateway's session). The
        /// dispatcher's watcher of `geotriggers/#` and the status topic.
        static func queueWhileDown(_ h: ServeHarness, config: String) async throws -> (watcher: MQTTProbe, status: String) {
            let watcher = try await h.probe("watcher", subscribe: ["geotriggers/#"], configure: credentials("dispatch"))
            let vehicle = try await h.probe("vehicle", configure: credentials("v17"))
            let status = GatewayStatus.topic(gatewayID: h.gatewayID)
            let first = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(status) { $0.status == "started" }.ok, "\(tail(first.log))")
            #expect(first.terminate() == 0)
            #expect(await watcher.waitStatus(status) { $0.status == "stopped" }.ok)
            let t0 = fixTimeBase()
            try vehicle.client.publish(topic: "devices/v17/location", payload: Payload.json(lat: outside.lat, lon: outside.lon, time: t0), qos: .atLeastOnce)
            try vehicle.client.publish(topic: "devices/v17/location", payload: Payload.json(lat: meadow.lat, lon: meadow.lon, time: t0 + 10), qos: .atLeastOnce)
            return (watcher, status)
        }

        /// What a device saw when it connected with the gateway's client id, and what the broker logged.
        struct Attempt {
            var sessionPresent: [Bool]
            var brokerLines: [String]
            var gatewayLost: Bool
        }

        /// Device `alice` (a valid password of its own) connects with the gateway's client id and
        /// a persistent session while the gateway runs.
        static func takeoverAttempt(_ h: ServeHarness, gateway: GatewayProcess) async throws -> (MQTTProbe, Attempt) {
            let attacker = try MQTTProbe(port: h.broker.port, clientId: gatewayUser) { configuration in
                credentials("alice")(&configuration)
                configuration.reconnect = .init(minimum: .seconds(5), maximum: .seconds(5))
            }
            try attacker.client.start()
            #expect(await attacker.waitConnected(), "\(attacker.events.all)\n\(tail(h.brokerLog))")
            // The broker handles a CONNECT (and closes a replaced connection) before its CONNACK;
            // give the gateway's side of it a moment to show in its log.
            _ = await poll(timeout: .seconds(3)) { gateway.log.contains("lost the local broker") }
            // The device's CONNECT line, the takeover line before it if any, and its CONNACK.
            let log = h.brokerLog.split(separator: "\n").map(String.init)
            var lines: [String] = []
            for (index, line) in log.enumerated() where line.contains("u'alice'") {
                if index > 0, log[index - 1].contains("already connected") { lines.append(log[index - 1]) }
                lines.append(line)
                if let connack = log[(index + 1)...].prefix(5).first(where: { $0.contains("Sending CONNACK") }) { lines.append(connack) }
            }
            return (attacker, Attempt(sessionPresent: attacker.sessionPresentFlags, brokerLines: lines,
                                      gatewayLost: gateway.log.contains("lost the local broker")))
        }

        /// docs/operations.md "Deploying on a Raspberry Pi" (`use_username_as_clientid`): a device with its
        /// own valid password connects with the gateway's client id. With the shipped config its
        /// id becomes its user name: the gateway keeps its connection and session and goes on
        /// handling updates; the device gets a fresh session of its own.
        @Test func aDeviceCannotTakeOverTheGatewaysSession() async throws {
            let h = try ServeHarness("takeover", broker: try Self.options())
            defer { h.close() }
            let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(prefix: "geotriggers"), statusTopic],
                                            configure: Self.credentials("dispatch"))
            let vehicle = try await h.probe("vehicle", configure: Self.credentials("v17"))
            let gateway = try h.startGateway(config: try Self.gatewayConfig(h))
            #expect(await watcher.waitStatus(statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            let t0 = fixTimeBase()
            #expect(try await Self.vehicleEnters(h, watcher: watcher, vehicle: vehicle, at: t0), "\(tail(gateway.log))")

            let (attacker, attempt) = try await Self.takeoverAttempt(h, gateway: gateway)
            defer { attacker.stop() }
            print("takeover attempt with the shipped config: device alice connected as client id \(Self.gatewayUser):",
                  "session present \(attempt.sessionPresent), gateway lost its connection: \(attempt.gatewayLost); broker log:\n  "
                  + attempt.brokerLines.joined(separator: "\n  "))
            #expect(attempt.sessionPresent == [false], "the device must not get the gateway's session")
            #expect(!attempt.gatewayLost, "\(tail(gateway.log))")
            #expect(!h.brokerLog.contains("already connected, closing old connection"), "\(tail(h.brokerLog))")
            #expect(h.brokerLog.contains("as alice ("), "the broker named the device by its user:\n\(tail(h.brokerLog))")
            // The gateway still gets its messages: the vehicle leaves and enters again.
            try vehicle.client.publish(topic: "devices/v17/location", payload: Payload.json(lat: Self.outside.lat, lon: Self.outside.lon, time: t0 + 20), qos: .atLeastOnce)
            #expect(try await Self.vehicleEnters(h, watcher: watcher, vehicle: vehicle, at: t0 + 30), "\(tail(gateway.log))")
            #expect(!watcher.statuses(on: statusTopic).contains { $0.status == "offline" }, "no will: the gateway was never cut off")
            #expect(gateway.log.split(separator: "\n").filter { $0.contains(" connected") && $0.contains("broker=") }.count == 1, "\(tail(gateway.log))")
            print("after the attempt the gateway published the vehicle's second enter; statuses seen: \(watcher.statuses(on: statusTopic).compactMap(\.status).reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } })")
            #expect(gateway.terminate() == 0)
        }

        /// The same attempt against the shipped config without `use_username_as_clientid`: the
        /// device takes the gateway's session and cuts the gateway off (what the line prevents,
        /// and proof that the test above can fail).
        /// A start that fails (a broken fence file) reports `failedToStart` as its own user
        /// (`geotrigger-gw-1-failed`): with the gateway's user name, `use_username_as_clientid`
        /// gave its clean session the gateway's client id and wiped the updates queued for the
        /// gateway while it was down. The next good start handles them.
        @Test func aFailedStartLeavesTheQueuedUpdatesToTheNextStart() async throws {
            var options = try Self.options()
            options.persistence = true
            let h = try ServeHarness("failedstart", broker: options)
            defer { h.close() }
            let fences = try h.copyFences()
            let config = try Self.gatewayConfig(h, fences: fences)
            let (watcher, status) = try await Self.queueWhileDown(h, config: config)
            _ = try h.write("fences/broken.geojson", "{\"type\": \"FeatureCollection\", \"features\": [{\"type\": \"Feature\"}]}")
            let mark = watcher.received(on: status).count
            let failed = try h.startGateway(config: config, log: "failed.log")
            #expect(failed.waitForExit(timeout: 30) == 2, "\(tail(failed.log))")
            let reported = await watcher.waitStatus(status) { $0.status == "failedToStart" }
            #expect(reported.ok, "\(reported.status?.description ?? "no status")\n\(tail(failed.log))\n\(tail(h.brokerLog))")
            #expect(reported.status?.warnings.contains { $0.contains("broken.geojson") } == true)
            // Both from the `-failed` user: `starting` while the fences loaded, then the failure.
            #expect(watcher.statuses(on: status).dropFirst(mark).compactMap(\.status) == ["starting", "failedToStart"])

            try FileManager.default.removeItem(atPath: fences + "/broken.geojson")
            let again = try h.startGateway(config: config, log: "again.log")
            let entered = await poll(timeout: .seconds(30)) {
                receivedEvents(watcher, prefix: "geotriggers").contains { eventKey($0.event) == "sections v17 garden-sections/meadow enter" }
            }
            let handled = await watcher.waitStatus(status) { $0.status == "started" && $0.counter("accepted") >= 2 }.status?.counter("accepted") ?? -1
            print("failed start: the updates queued while the gateway was down -> \(handled) handled at the next good start; enter \(entered ? "published" : "never published")")
            #expect(entered, "the updates queued before the failed start were lost\n\(tail(again.log))\n\(tail(h.brokerLog))")
            #expect(handled == 2)
            #expect(again.terminate() == 0)
        }

        /// A good start says `starting` as the `-failed` user while the fences load, and that
        /// client is gone before the gateway's own connects: the updates queued in the
        /// gateway's session while it was down are handled after the start, and `started` is
        /// what stays retained.
        @Test func startingComesFromTheFailedUserAndLeavesTheQueuedUpdates() async throws {
            var options = try Self.options()
            options.persistence = true
            let h = try ServeHarness("startingshipped", broker: options)
            defer { h.close() }
            let config = try Self.gatewayConfig(h)
            let (watcher, status) = try await Self.queueWhileDown(h, config: config)
            let mark = watcher.received(on: status).count
            let logMark = h.brokerLog.count
            let again = try h.startGateway(config: config, log: "again.log")
            let entered = await poll(timeout: .seconds(30)) {
                receivedEvents(watcher, prefix: "geotriggers").contains { eventKey($0.event) == "sections v17 garden-sections/meadow enter" }
            }
            let handled = await watcher.waitStatus(status) { $0.status == "started" && $0.counter("accepted") >= 2 }.status?.counter("accepted") ?? -1
            let seen = watcher.statuses(on: status).dropFirst(mark).compactMap(\.status)
            // The broker's log of this start: who published to the status topic, who connected when.
            let log = h.brokerLog.dropFirst(logMark).split(separator: "\n").map(String.init)
            let failedPublish = log.firstIndex { $0.contains("Received PUBLISH from \(Self.gatewayUser)-failed") && $0.contains(status) }
            let failedGone = log.firstIndex { $0.contains("Client \(Self.gatewayUser)-failed") && $0.contains("disconnected") }
            let gatewayConnect = log.firstIndex { $0.contains("as \(Self.gatewayUser) (") }
            print("shipped broker, good start: statuses \(seen.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }); broker log lines:",
                  "starting published by \(Self.gatewayUser)-failed #\(failedPublish ?? -1), that client gone #\(failedGone ?? -1),",
                  "gateway connected #\(gatewayConnect ?? -1); queued updates handled \(handled), enter \(entered ? "published" : "never published")")
            #expect(seen.first == "starting", "\(seen)\n\(tail(again.log))")
            #expect(seen.dropFirst().first == "started", "\(seen)")
            #expect(failedPublish != nil && failedGone != nil && gatewayConnect != nil, "\(log.suffix(60).joined(separator: "\n"))")
            if let failedPublish, let failedGone, let gatewayConnect {
                #expect(failedPublish < failedGone && failedGone < gatewayConnect, "\(log.suffix(60).joined(separator: "\n"))")
            }
            #expect(entered, "the updates queued before the start were lost\n\(tail(again.log))\n\(tail(h.brokerLog))")
            #expect(handled == 2)
            // A fresh subscriber gets the retained status (as the same user: the watcher goes first).
            watcher.stop()
            let late = try await h.probe("late", subscribe: [status], cleanStart: true, configure: Self.credentials("dispatch"))
            #expect(await poll(timeout: .seconds(10)) { late.lastStatus(status) != nil })
            #expect(late.lastStatus(status)?.status == "started")
            #expect(again.terminate() == 0)
        }

        @Test func withoutTheClientIDBindingTheSameAttemptTakesOver() async throws {
            let h = try ServeHarness("takeover-open", broker: try Self.options(withoutClientIDBinding: true))
            defer { h.close() }
            let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
            let watcher = try await h.probe("watcher", subscribe: [statusTopic], configure: Self.credentials("dispatch"))
            let gateway = try h.startGateway(config: try Self.gatewayConfig(h))
            #expect(await watcher.waitStatus(statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            let (attacker, attempt) = try await Self.takeoverAttempt(h, gateway: gateway)
            attacker.stop()
            print("takeover attempt without use_username_as_clientid: session present \(attempt.sessionPresent),",
                  "gateway lost its connection: \(attempt.gatewayLost); broker log:\n  " + attempt.brokerLines.joined(separator: "\n  "))
            #expect(attempt.sessionPresent.first == true, "the device got the gateway's session")
            #expect(attempt.gatewayLost, "\(tail(gateway.log))")
            #expect(h.brokerLog.contains("already connected, closing old connection"), "\(tail(h.brokerLog))")
            #expect(gateway.terminate() == 0)
        }

        /// The shipped packet limits: a payload over `message_size_limit` (1 MiB) is refused
        /// with an error PUBACK and not forwarded; a packet over `max_packet_size` disconnects
        /// its sender; a 1 MiB runtime fence passes.
        @Test func shippedPacketLimits() async throws {
            let broker = try MosquittoProcess(try Self.options())
            let dispatcher = try MQTTProbe(port: broker.port, clientId: "dispatch") { configuration in
                Self.credentials("dispatch")(&configuration)
                configuration.cleanStart = true
            }
            defer { dispatcher.stop() }
            dispatcher.collect()
            try dispatcher.client.subscribe("geotriggers/fences/#", qos: .atLeastOnce)
            try dispatcher.client.start()
            #expect(await dispatcher.waitSubscribed("geotriggers/fences/#"), "\(dispatcher.events.all)\n\(broker.log.suffix(2000))")
            let fits = try dispatcher.client.publish(
                topic: "geotriggers/fences/big/a", payload: [UInt8](repeating: 0x20, count: 1 << 20), qos: .atLeastOnce)
            let over = try dispatcher.client.publish(
                topic: "geotriggers/fences/big/b", payload: [UInt8](repeating: 0x20, count: (1 << 20) + 1), qos: .atLeastOnce)
            #expect(await dispatcher.waitAcknowledged([fits, over]))
            let acks = dispatcher.acknowledgements.all
            let fitsAck = try #require(acks.first { $0.messageId == fits })
            let overAck = try #require(acks.first { $0.messageId == over })
            #expect(await dispatcher.waitMessages(1))
            // A packet over max_packet_size: libmosquitto refuses to send it (the broker told it
            // the limit in CONNACK), so this is what a v3.1.1 or misbehaving client meets.
            let hugeOutcome: String
            do {
                let id = try dispatcher.client.publish(
                    topic: "geotriggers/fences/big/c", payload: [UInt8](repeating: 0x20, count: 2 << 20), qos: .atLeastOnce)
                hugeOutcome = "handed to libmosquitto as message \(id)"
            } catch {
                hugeOutcome = "refused by libmosquitto: \(error)"
            }
            _ = await poll(timeout: .seconds(2)) { dispatcher.messages.count > 1 }
            print("shipped packet limits: 1 MiB fence -> PUBACK \(fitsAck.reasonCode) (\(fitsAck.reason)), delivered;",
                  "1 MiB + 1 -> PUBACK 0x\(String(overAck.reasonCode, radix: 16)) (\(overAck.reason));",
                  "2 MiB -> \(hugeOutcome)",
                  "; messages delivered: \(dispatcher.messages.all.map(\.topic))")
            #expect(fitsAck.isSuccess)
            #expect(!overAck.isSuccess, "\(overAck)")
            #expect(dispatcher.messages.all.map(\.topic) == ["geotriggers/fences/big/a"])
        }

        /// geotrigger-tls.conf with a throwaway CA and server certificate: the gateway connects
        /// on the TLS port with only `tls: { ca }` and its password, handles an update, and
        /// `mosquitto_sub --cafile` (the check in deploy/mosquitto/README.md "TLS") reads its retained status over TLS.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
        func tlsListenerExampleWorks() async throws {
            let certificatesFolder = try TemporaryDirectory(prefix: "shipped-tls-certs")
            let certificates = try TestCertificates.make(in: certificatesFolder)
            let h = try ServeHarness("shipped-tls", broker: try Self.options(tls: certificates))
            defer { h.close() }
            let tlsPort = try #require(h.broker.tlsPort)
            let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(prefix: "geotriggers"), statusTopic],
                                            configure: Self.credentials("dispatch"))
            let vehicle = try await h.probe("vehicle", configure: Self.credentials("v17"))
            let gateway = try h.startGateway(config: try Self.gatewayConfig(h, port: tlsPort, tls: "tls: { ca: \"\(certificates.ca)\" },"))
            #expect(await watcher.waitStatus(statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            #expect(gateway.log.contains("connected broker=127.0.0.1:\(tlsPort)"), "\(tail(gateway.log))")
            #expect(try await Self.vehicleEnters(h, watcher: watcher, vehicle: vehicle, at: fixTimeBase()), "\(tail(gateway.log))")
            let status = try ExternalProgram.run("/usr/bin/mosquitto_sub", [
                "-h", "127.0.0.1", "-p", "\(tlsPort)", "--cafile", certificates.ca, "-u", "dispatch", "-P", Self.users["dispatch"]!,
                "-t", statusTopic, "-C", "1", "-W", "20"])
            print("TLS listener on port \(tlsPort): gateway log line:",
                  gateway.log.split(separator: "\n").first { $0.contains("connected broker=") } ?? "none",
                  "| mosquitto_sub over TLS read the status:", status.prefix(60))
            #expect(GatewayStatus(MQTTMessage(topic: statusTopic, payload: Array(status.utf8)))?.status == "started", "\(status)")
            #expect(gateway.terminate() == 0)
        }
    }
}
