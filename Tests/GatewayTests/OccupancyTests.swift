import Foundation
import MQTT
import Testing
import TestSupport
@testable import Gateway

/// Occupancy topics and Home Assistant discovery against the real broker and `geotrigger
/// serve`: a drive of 20 devices through `fences/fleet.geojson`.
extension ServeTests {
    @Suite(.serialized) struct OccupancyTests {
        /// A retained message's payload as a JSON object (nil: empty or not JSON).
        static func object(_ payload: [UInt8]) -> [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        }

        /// The newest message of every topic under `prefix` (an empty payload: cleared).
        static func newest(_ probe: MQTTProbe, under prefix: String) -> [String: [UInt8]] {
            var newest: [String: [UInt8]] = [:]
            for message in probe.received(under: prefix) { newest[message.topic] = message.payload }
            return newest
        }

        /// After every round of the drive: the retained occupancy count of each fence equals
        /// the `inside` query's and the events' (enters minus exits). Then Home Assistant's
        /// discovery configs: one device tracker per device, one sensor per occupied fence,
        /// the gateway's connectivity, each valid for Home Assistant's own schema (when the
        /// `homeassistant` package is installed, see ``HomeAssistantSchema``).
        @Test(.timeLimit(.minutes(4))) func occupancyMatchesInsideAndEventsAtEveryCheckpoint() async throws {
            let h = try ServeHarness("occupancy")
            defer { h.close() }
            try FleetDrive.installFences(in: h.directory)
            let haPrefix = "\(h.prefix)-ha"
            let config = try h.write("gw.json5", h.config(
                fences: h.directory.file("fences"), output: "occupancy: true",
                extra: """
                    feeds: [ { name: "fleet", topic: "fleet/+/+/location", format: "json" } ],
                    homeassistant: { discovery: true, prefix: "\(haPrefix)" },
                    """))
            let drive = FleetDrive(count: 20)
            let probe = try await h.probe("watch", subscribe: [h.eventsFilter(), "\(h.prefix)/occupancy/#", h.statusTopic, "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(gateway.log)")

            let fences = ["depot", "site-north", "site-east", "road"]
            var queries = 0
            func insideCount(_ fence: String) async throws -> Int? {
                queries += 1
                let replyTo = "\(h.prefix)/replies/occupancy/\(queries)"
                try probe.client.publish(topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"inside":{"layer":"fleet","fence":"\#(fence)"},"replyTo":"\#(replyTo)"}"#, qos: .atLeastOnce)
                var reply: [String: Any]?
                _ = await poll(timeout: .seconds(10)) {
                    reply = probe.received(on: replyTo).first.flatMap { Self.object($0.payload) }
                    return reply != nil
                }
                return (reply?["inside"] as? [[String: Any]])?.count
            }
            func eventCount(_ fence: String) -> Int {
                var seen: Set<String> = []
                var count = 0
                for message in probe.received(under: "\(h.prefix)/events/") {
                    guard let (id, _, key) = FleetDrive.parse(message.payload), key.fence == fence, seen.insert(id).inserted else { continue }
                    count += key.type == "enter" ? 1 : key.type == "exit" ? -1 : 0
                }
                return count
            }
            func occupancy(_ fence: String) -> (count: Int, devices: [String])? {
                guard let payload = Self.newest(probe, under: "\(h.prefix)/occupancy/")["\(h.prefix)/occupancy/fleet/fleet/\(fence)"],
                    let o = Self.object(payload)
                else { return nil }
                return (o["count"] as? Int ?? -1, o["devices"] as? [String] ?? [])
            }

            var sent = 0
            var occupiedFences: Set<String> = []
            for step in 0..<drive.rounds {
                var ids: [Int32] = []
                for update in drive.round(step) {
                    ids.append(try probe.client.publish(topic: update.topic, payload: update.payload, qos: .atLeastOnce))
                }
                sent += ids.count
                #expect(await probe.waitAcknowledged(ids))
                #expect(await probe.waitStatus(h.statusTopic) { $0.counter("accepted") == sent }.ok, "round \(step)")
                var line: [String] = []
                var consistent = false
                for _ in 0..<40 where !consistent {
                    line = []
                    consistent = true
                    for fence in fences {
                        let inside = try await insideCount(fence) ?? -1
                        let events = eventCount(fence)
                        let retained = occupancy(fence)
                        let count = retained?.count ?? 0
                        if count > 0 { occupiedFences.insert(fence) }
                        line.append("\(fence) \(count)/\(inside)/\(events)")
                        if count != inside || inside != events || (retained.map { $0.devices.count != min(count, 100) } ?? false) {
                            consistent = false
                        }
                    }
                    if !consistent { try await Task.sleep(for: .milliseconds(250)) }
                }
                print("occupancy round \(step) (retained/inside/events): \(line.joined(separator: ", "))")
                #expect(consistent, "round \(step): \(line)")
            }
            #expect(occupiedFences.count >= 3, "the drive should occupy the depot and both sites: \(occupiedFences)")

            // Home Assistant: what a fresh subscriber to the discovery prefix finds retained.
            let ha = try await h.probe("ha", subscribe: ["\(haPrefix)/#"], cleanStart: true)
            let expectedConfigs = drive.devices.count + occupiedFences.count + 1
            #expect(await poll(timeout: .seconds(20)) { Self.newest(ha, under: "\(haPrefix)/").count >= expectedConfigs })
            let configs = Self.newest(ha, under: "\(haPrefix)/")
            let trackers = configs.keys.filter { $0.hasPrefix("\(haPrefix)/device_tracker/") }
            let sensors = configs.keys.filter { $0.hasPrefix("\(haPrefix)/sensor/") }
            #expect(trackers.count == drive.devices.count, "\(trackers.sorted())")
            #expect(sensors.count >= occupiedFences.count)
            #expect(configs.keys.contains("\(haPrefix)/binary_sensor/geotrigger_\(h.gatewayID)/connectivity/config"))
            // Each tracker's attributes topic holds the device's position and fence names.
            let attributes = try await h.probe("ha-attributes", subscribe: ["\(h.prefix)/devices/+/+/attributes"], cleanStart: true)
            #expect(await poll(timeout: .seconds(20)) { Self.newest(attributes, under: "\(h.prefix)/devices/").count == drive.devices.count })
            for (topic, payload) in Self.newest(attributes, under: "\(h.prefix)/devices/") {
                let o = try #require(Self.object(payload), "\(topic)")
                #expect(o["latitude"] is Double && o["longitude"] is Double && o["fences"] is [String], "\(topic): \(o)")
            }
            try HomeAssistantSchema.check(configs)
        }

        /// A removed fence's occupancy topic and Home Assistant sensor are cleared; a forgotten
        /// device's tracker config and attributes are cleared.
        @Test(.timeLimit(.minutes(3))) func removedFenceAndForgottenDeviceAreCleared() async throws {
            let h = try ServeHarness("occupancy-clear")
            defer { h.close() }
            let haPrefix = "\(h.prefix)-ha"
            // forgetAfter 10 s of the gateway's running time: the device is forgotten about 10 s
            // after its last update, once the fence is gone.
            let config = try h.write("gw.json5", h.config(
                output: "occupancy: true", gateway: "hibernateAfter: 1, forgetAfter: 10",
                extra: #"homeassistant: { discovery: true, prefix: "\#(haPrefix)" },"#))
            let probe = try await h.probe("watch", subscribe: ["\(h.prefix)/occupancy/#", h.statusTopic, "\(haPrefix)/#", "\(h.prefix)/devices/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(gateway.log)")

            // A runtime fence, one device in it.
            let feature = #"{"type":"Feature","id":"pad","properties":{"name":"Pad"},"geometry":{"type":"Polygon","coordinates":[[[-119.70,34.42],[-119.69,34.42],[-119.69,34.43],[-119.70,34.43],[-119.70,34.42]]]}}"#
            try probe.client.publish(topic: "\(h.prefix)/fences/pads/pad", payload: feature, qos: .atLeastOnce, retain: true)
            let topic = "\(h.prefix)/occupancy/pads/pads/pad"
            let time = Date().timeIntervalSince1970 - 7200
            #expect(await poll(timeout: .seconds(20)) {
                // Until the fence is in place, the update may find nothing; send it again.
                _ = try? probe.client.publish(topic: "devices/truck/location", payload: Payload.json(lat: 34.425, lon: -119.695, time: time + Double(probe.messages.count)), qos: .atLeastOnce)
                return Self.newest(probe, under: topic)[topic].flatMap(Self.object)?["count"] as? Int == 1
            }, "\(gateway.log)")
            #expect(await poll(timeout: .seconds(10)) { !Self.newest(probe, under: "\(haPrefix)/sensor/").isEmpty })
            let sensor = Self.newest(probe, under: "\(haPrefix)/sensor/").first
            #expect(sensor.map { !$0.value.isEmpty } == true)

            // The fence goes: its occupancy topic and sensor are cleared (empty retained).
            try probe.client.publish(topic: "\(h.prefix)/fences/pads/pad", payload: [UInt8](), qos: .atLeastOnce, retain: true)
            #expect(await poll(timeout: .seconds(20)) { Self.newest(probe, under: topic)[topic]?.isEmpty == true })
            if let sensor {
                #expect(await poll(timeout: .seconds(20)) { Self.newest(probe, under: sensor.key)[sensor.key]?.isEmpty == true })
            }
            // The device is forgotten: its tracker config and attributes are cleared too.
            let tracker = "\(haPrefix)/device_tracker/geotrigger_\(HomeAssistantDiscovery.objectID(h.gatewayID))/truck/config"
            #expect(await poll(timeout: .seconds(30)) {
                let newest = Self.newest(probe, under: "")
                return newest[tracker]?.isEmpty == true && newest["\(h.prefix)/devices/truck/attributes"]?.isEmpty == true
                    && newest[h.stateTopic("truck")]?.isEmpty == true
            }, "\(gateway.log)")
        }
    }
}

/// Runs `Tests/Fixtures/homeassistant/check_discovery.py` (Home Assistant's own discovery
/// schemas) over discovery configs, with the Python of a virtual environment that has the
/// `homeassistant` package: `GEOTRIGGER_HA_PYTHON`, else `/opt/ha-venv/bin/python`. Without
/// one the check is skipped with a note (CI does not install Home Assistant).
enum HomeAssistantSchema {
    static func check(_ configs: [String: [UInt8]]) throws {
        let python = ProcessInfo.processInfo.environment["GEOTRIGGER_HA_PYTHON"] ?? "/opt/ha-venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            print("home assistant schema check skipped: no \(python) (see Tests/Fixtures/homeassistant/check_discovery.py)")
            return
        }
        let pairs = configs.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }.map { [$0.key, String(decoding: $0.value, as: UTF8.self)] }
        let input = try JSONSerialization.data(withJSONObject: pairs)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [repositoryRoot + "/Tests/Fixtures/homeassistant/check_discovery.py"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let output = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print(output)
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.contains("0 invalid"))
    }
}
