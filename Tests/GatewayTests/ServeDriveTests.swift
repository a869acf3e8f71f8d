import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/topics-and-payloads.md end to end: three devices driven through the repository's
    /// fences.
    @Suite struct Drive {
        /// One scripted update.
        struct Step {
            var topic: String
            var payload: String
        }

        /// alice (`json` on PREFIX-in/devices/+/location), vehicles/v17 (`json` on
        /// PREFIX-in/fleet/+/+/location) and carol/phone (`owntracks`) through garden-sections,
        /// garden-poi and fleet; triggers with a message dictionary, with the layers' messages and
        /// with none (`fleet-plain`: a copy of fleet.geojson without its `geotrigger` defaults).
        ///
        /// Distances were computed with shapely + pyproj (azimuthal equidistant projection around
        /// 34.445, -119.70; POI buffers as geodesic-ish planar buffers):
        /// a2 meadow -11.1, a3 meadow +157.3, a3 desert -51.8, a4 desert +178.2;
        /// v1 depot -65.2 (road corridor +45 away), v2 depot +191.4, v3 site-east -55.4;
        /// c2 entrance -10.0, c2 arroyo -58.0, c3 entrance +252.4, c3 arroyo +168.1.
        @Test func threeDevicesYieldExactlyTheExpectedEvents() async throws {
            let h = try ServeHarness("drive")
            defer { h.close() }
            let fences = try h.copyFences()
            // fleet-plain: the fleet layer without its layer defaults, so its trigger has no message.
            var fleet = try #require(try JSONReader.parse(
                String(contentsOfFile: "\(fences)/fleet.geojson", encoding: .utf8), file: "fleet", dialect: .json).value.objectValue)
            fleet["geotrigger"] = nil
            try JSONValue.object(fleet).serialized().write(toFile: "\(fences)/fleet-plain.geojson", atomically: true, encoding: .utf8)

            let input = "\(h.prefix)-in"
            let sectionsMessage =
                "return {message: Decode($fencenotificationtype, 'entered', 'Into ', 'Out of ') + $fencefeature.name + ' (' + $feedfeature.device + ')', actions: ['notify'], zone: $fencefeature.id}"
            func configText(gatewayID: String, prefix: String, database: String) -> String {
                h.config(
                    fences: fences, database: database, gatewayID: gatewayID, prefix: prefix, output: "owntracks: true, stateInterval: 10",
                    extra: """
                        feeds: [
                          { name: "phones", topic: "owntracks/+/+", format: "owntracks" },
                          { name: "devices", topic: "\(input)/devices/+/location", format: "json" },
                          { name: "fleet", topic: "\(input)/fleet/+/+/location", format: "json" },
                        ],
                        triggers: [
                          { name: "sections", fences: ["garden-sections"], message: "\(sectionsMessage)" },
                          { name: "poi", fences: ["garden-poi"] },
                          { name: "fleet", fences: ["fleet"] },
                          { name: "fleet-plain", fences: ["fleet-plain"] },
                        ],
                        """)
            }
            let configPath = try h.write("gw.json5", configText(gatewayID: h.gatewayID, prefix: h.prefix, database: "gw.db"))

            let watcher = try await h.probe(
                "watcher", subscribe: [h.eventsFilter(), h.statusTopic, "owntracks/+/+/event"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            let started = await watcher.waitStatus(h.statusTopic) { $0.status == "started" }
            #expect(started.ok, "no started status:\n\(tail(gateway.log))")

            // The script: fix times from a whole-second base in the past.
            let t0 = fixTimeBase()
            let alice = "\(input)/devices/alice/location"
            let v17 = "\(input)/fleet/vehicles/v17/location"
            let carol = "owntracks/carol/phone"
            let steps: [Step] = [
                Step(topic: alice, payload: Payload.json(lat: 34.4570, lon: -119.7125, time: t0)),  // a1: outside
                Step(topic: carol, payload: Payload.owntracks(lat: 34.4525, lon: -119.7102, tst: t0 + 3, acc: 5, tid: "cp")),  // c1
                Step(topic: v17, payload: Payload.json(lat: 34.4288197, lon: -119.6932719, timeText: iso8601(t0 + 5), accuracy: 8)),  // v1: depot
                Step(topic: alice, payload: Payload.json(lat: 34.4573, lon: -119.7102, time: t0 + 10, accuracy: 4)),  // a2: meadow
                Step(topic: alice, payload: Payload.json(lat: 34.4579, lon: -119.7062, time: t0 + 20)),  // a3: desert
                Step(topic: carol, payload: Payload.owntracks(lat: 34.4548652, lon: -119.7102201, tst: t0 + 33, acc: 5, tid: "cp")),  // c2: entrance
                Step(topic: alice, payload: Payload.json(lat: 34.4600, lon: -119.7062, time: t0 + 45, accuracy: 12.5)),  // a4: outside
                Step(topic: v17, payload: Payload.json(lat: 34.4265, lon: -119.6932, timeText: iso8601(t0 + 65), accuracy: 8)),  // v2: outside
                Step(topic: carol, payload: Payload.owntracks(lat: 34.4525, lon: -119.7102, tst: t0 + 93, acc: 5, tid: "cp")),  // c3
                // v3: site-east, time in epoch milliseconds (> 1e11).
                Step(topic: v17, payload: Payload.json(lat: 34.4322901, lon: -119.6854609, time: (t0 + 125) * 1000, accuracy: 8)),
            ]

            // The expected events, exactly.
            func sections(_ device: String, _ fence: String, _ name: String, _ type: String) -> (String?, [JSONValue], JSONObject) {
                ((type == "enter" ? "Into " : "Out of ") + name + " (\(device))", [.string("notify")], ["zone": .string(fence)])
            }
            var expected: [ExpectedEvent] = []
            func add(
                _ trigger: String, _ device: String, _ layer: String, _ fence: String, _ name: String, _ type: String,
                lat: Double, lon: Double, accuracy: Double?, time: Double, distance: Double, dwell: Double? = nil
            ) {
                var event = ExpectedEvent(
                    trigger: trigger, device: device, layer: layer, fence: fence, type: type, reason: type == "exit" ? "moved" : nil,
                    lat: lat, lon: lon, accuracy: accuracy, fixTime: time, distance: distance, dwellSeconds: dwell, message: nil)
                switch trigger {
                case "sections": (event.message, event.actions, event.properties) = sections(device, fence, name, type)
                case "poi": event.message = (type == "exit" ? "Leaving " : "Nearby: ") + name
                case "fleet": event.message = (type == "enter" ? "Arrived at " : "Left ") + name
                default: break  // fleet-plain: no expression, no message
                }
                expected.append(event)
            }
            add("sections", "alice", "garden-sections", "meadow", "Meadow Section", "enter",
                lat: 34.4573, lon: -119.7102, accuracy: 4, time: t0 + 10, distance: -11.1)
            add("sections", "alice", "garden-sections", "meadow", "Meadow Section", "exit",
                lat: 34.4579, lon: -119.7062, accuracy: nil, time: t0 + 20, distance: 157.3, dwell: 10)
            add("sections", "alice", "garden-sections", "desert", "Desert Section", "enter",
                lat: 34.4579, lon: -119.7062, accuracy: nil, time: t0 + 20, distance: -51.8)
            add("sections", "alice", "garden-sections", "desert", "Desert Section", "exit",
                lat: 34.4600, lon: -119.7062, accuracy: 12.5, time: t0 + 45, distance: 178.2, dwell: 25)
            for trigger in ["fleet", "fleet-plain"] {
                add(trigger, "vehicles/v17", trigger, "depot", "Depot", "enter",
                    lat: 34.4288197, lon: -119.6932719, accuracy: 8, time: t0 + 5, distance: -65.2)
                add(trigger, "vehicles/v17", trigger, "depot", "Depot", "exit",
                    lat: 34.4265, lon: -119.6932, accuracy: 8, time: t0 + 65, distance: 191.4, dwell: 60)
                add(trigger, "vehicles/v17", trigger, "site-east", "East Job Site", "enter",
                    lat: 34.4322901, lon: -119.6854609, accuracy: 8, time: t0 + 125, distance: -55.4)
            }
            add("poi", "carol/phone", "garden-poi", "entrance", "Entrance Gate", "enter",
                lat: 34.4548652, lon: -119.7102201, accuracy: 5, time: t0 + 33, distance: -10)
            add("sections", "carol/phone", "garden-sections", "arroyo", "Arroyo Section", "enter",
                lat: 34.4548652, lon: -119.7102201, accuracy: 5, time: t0 + 33, distance: -58.0)
            add("poi", "carol/phone", "garden-poi", "entrance", "Entrance Gate", "exit",
                lat: 34.4525, lon: -119.7102, accuracy: 5, time: t0 + 93, distance: 252.4, dwell: 60)
            add("sections", "carol/phone", "garden-sections", "arroyo", "Arroyo Section", "exit",
                lat: 34.4525, lon: -119.7102, accuracy: 5, time: t0 + 93, distance: 168.1, dwell: 60)
            #expect(expected.count == 14)

            let before = Date().timeIntervalSince1970
            for step in steps { try publisher.client.publish(topic: step.topic, payload: step.payload, qos: .atLeastOnce) }

            // Everything processed: all updates accepted, the 14 events committed and delivered
            // (no outbox rows left), so no further event can still come.
            let settled = await watcher.waitStatus(h.statusTopic) {
                $0.counter("accepted") == 10 && $0.counter("events") == 14
                    && $0.outbox("local") == 0
            }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none")\n\(tail(gateway.log))")
            #expect(await poll(timeout: .seconds(30)) { receivedEvents(watcher, prefix: h.prefix).count >= 14 })
            let after = Date().timeIntervalSince1970

            let received = receivedEvents(watcher, prefix: h.prefix)
            #expect(received.count == 14, "\(received.map { eventKey($0.event) })")
            let properties = try fenceProperties()
            var ids: [String: String] = [:]
            for e in expected {
                let matches = received.filter { eventKey($0.event) == e.key }
                #expect(matches.count == 1, "\(e.key): \(matches.count) events")
                guard let (topic, event) = matches.first else { continue }
                let sourceLayer = e.layer == "fleet-plain" ? "fleet" : e.layer
                checkEvent(
                    event, topic: topic, expected: e, gateway: h.gatewayID, prefix: h.prefix,
                    fenceName: properties["\(sourceLayer)/\(e.fence)"]?["name"]?.stringValue ?? "?",
                    fenceProperties: properties["\(sourceLayer)/\(e.fence)"] ?? JSONObject(),
                    emittedBetween: before, and: after)
                ids[e.key] = event["id"]?.stringValue
            }
            // An exit's visit is the id of its enter; every id differs.
            for e in expected where e.type == "exit" {
                let exit = received.first { eventKey($0.event) == e.key }?.event
                let enterKey = e.key.replacingOccurrences(of: " exit", with: " enter")
                #expect(exit?["visit"]?.stringValue == ids[enterKey], "\(e.key)")
            }
            #expect(Set(ids.values).count == 14)

            // OwnTracks transitions for carol/phone only (output.owntracks: true).
            #expect(await poll { watcher.messages.all.filter { $0.topic.hasSuffix("/event") }.count >= 4 })
            let transitions = watcher.received(on: "owntracks/carol/phone/event").compactMap(json)
            #expect(watcher.messages.all.filter { $0.topic.hasSuffix("/event") }.count == 4)
            let expectedTransitions: [(event: String, rid: String, desc: String, tst: Double, lat: Double, lon: Double)] = [
                ("enter", "garden-poi/entrance", "Entrance Gate", t0 + 33, 34.4548652, -119.7102201),
                ("enter", "garden-sections/arroyo", "Arroyo Section", t0 + 33, 34.4548652, -119.7102201),
                ("leave", "garden-poi/entrance", "Entrance Gate", t0 + 93, 34.4525, -119.7102),
                ("leave", "garden-sections/arroyo", "Arroyo Section", t0 + 93, 34.4525, -119.7102),
            ]
            for t in expectedTransitions {
                let match = transitions.filter { $0["event"]?.stringValue == t.event && $0["rid"]?.stringValue == t.rid }
                #expect(match.count == 1, "transition \(t.event) \(t.rid): \(transitions.map { JSONValue.object($0).serialized() })")
                guard let m = match.first else { continue }
                #expect(m["_type"] == .string("transition"))
                #expect(m["desc"] == .string(t.desc))
                #expect(m["tst"] == .number(t.tst))
                #expect(m["lat"] == .number(t.lat) && m["lon"] == .number(t.lon))
                #expect(m["acc"] == .number(5))
                #expect(m["tid"] == .string("cp"))
                #expect(m["wtst"]?.numberValue != nil)
            }

            // A client that subscribes late gets the retained device states and the status.
            let late = try await h.probe(
                "late", subscribe: [h.statusTopic, "\(h.prefix)/devices/#"], cleanStart: true)
            #expect(await poll(timeout: .seconds(30)) {
                late.received(on: h.statusTopic).count >= 1 && late.received(under: "\(h.prefix)/devices/").count >= 3
            }, "late subscriber saw: \(late.messages.all.map(\.topic))")
            #expect(late.received(on: h.statusTopic).first?.retain == true)
            let status = try #require(late.lastStatus(h.statusTopic))
            #expect(status.keys == ["status", "warnings", "counters", "since", "version"])
            #expect(status.status == "started")
            #expect(status.counter("accepted") == 10 && status.counter("events") == 14 && status.counter("devices") == 3)
            #expect(status["counters"]?.objectValue?.keys == ["received", "accepted", "dropped", "events", "acked", "queueDepth", "devices", "outbox", "outsideSchedule", "undeliverable", "eventRateLimited", "trips"])
            #expect(DropReason.allCases.allSatisfy { status.dropped($0.rawValue) == 0 })

            func state(_ device: String) -> JSONObject? {
                late.received(on: h.stateTopic(device)).first(where: \.retain).flatMap(json)
            }
            let aliceState = try #require(state("alice"))
            #expect(aliceState.keys == ["device", "position", "inside", "updated"])
            #expect(aliceState["device"] == .string("alice"))
            #expect(aliceState["position"] == .object(["lat": .number(34.46), "lon": .number(-119.7062), "accuracy": .number(12.5), "time": .string(iso8601(t0 + 45))]))
            #expect(aliceState["inside"] == .array([]))
            let vehicleState = try #require(state("vehicles/v17"))
            #expect(vehicleState["position"]?.objectValue?["time"] == .string(iso8601(t0 + 125)))
            let inside = vehicleState["inside"]?.arrayValue?.compactMap(\.objectValue) ?? []
            #expect(inside.count == 2)
            for trigger in ["fleet", "fleet-plain"] {
                let stay = inside.first { $0["trigger"] == .string(trigger) }
                #expect(stay?.keys == ["trigger", "layer", "fence", "name", "since", "visit"])
                #expect(stay?["layer"] == .string(trigger) && stay?["fence"] == .string("site-east") && stay?["name"] == .string("East Job Site"))
                #expect(stay?["since"] == .string(iso8601(t0 + 125)))
                #expect(stay?["visit"]?.stringValue == ids["\(trigger) vehicles/v17 \(trigger)/site-east enter"])
            }
            let carolState = try #require(state("carol/phone"))
            #expect(carolState["inside"] == .array([]))
            #expect(carolState["position"]?.objectValue?["accuracy"] == .number(5))

            // `id` is stable: a second gateway (own id, prefix and a fresh database) given the
            // same updates publishes the same ids and visits.
            #expect(gateway.terminate() == 0)
            let replayPrefix = "\(h.prefix)-replay"
            let replayID = "\(h.gatewayID)-replay"
            let replayConfig = try h.write("replay.json5", configText(gatewayID: replayID, prefix: replayPrefix, database: "replay.db"))
            let replayWatcher = try await h.probe("replay-watcher", subscribe: ["\(replayPrefix)/events/#", GatewayStatus.topic(prefix: replayPrefix, gatewayID: replayID)])
            let replay = try h.startGateway(config: replayConfig, log: "replay.log")
            #expect(await replayWatcher.waitStatus(GatewayStatus.topic(prefix: replayPrefix, gatewayID: replayID)) { $0.status == "started" }.ok)
            for step in steps { try publisher.client.publish(topic: step.topic, payload: step.payload, qos: .atLeastOnce) }
            #expect(await poll(timeout: .seconds(60)) { receivedEvents(replayWatcher, prefix: replayPrefix).count >= 14 },
                    "replay events: \(receivedEvents(replayWatcher, prefix: replayPrefix).count)\n\(tail(replay.log))")
            let replayed = receivedEvents(replayWatcher, prefix: replayPrefix)
            for e in expected {
                let again = replayed.first { eventKey($0.event) == e.key }?.event
                #expect(again?["id"]?.stringValue == ids[e.key], "\(e.key)")
                #expect(again?["gateway"] == .string(replayID))
            }
            #expect(replay.terminate() == 0)
        }
    }
}

extension ServeTests {
    /// docs/topics-and-payloads.md "Device state": a position held back by `output.stateInterval` goes out when the
    /// interval ends, so the retained state ends at the device's last accepted position.
    @Suite struct TrailingState {
        /// Five devices driven for 3 s with `stateInterval: 1` (an update each 0.1 s, so most
        /// positions are held back), then stopped: a few seconds later each retained state is at
        /// the device's last position.
        @Test(.timeLimit(.minutes(5))) func aStoppedDevicesRetainedStateIsWhereItStopped() async throws {
            let h = try ServeHarness("trailing")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(
                output: "stateInterval: 1", extra: #"triggers: [ { name: "sections", fences: ["garden-sections"] } ],"#))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            // Each device about 11 m north per update, the devices 100 m apart.
            let devices = (0..<5).map { "walker\($0)" }
            let steps = 30
            func position(device: Int, step: Int) -> (lat: Double, lon: Double) {
                (34.4400 + 0.0001 * Double(step), -119.7300 + 0.0011 * Double(device))
            }
            let t0 = fixTimeBase()
            for step in 0..<steps {
                for (i, device) in devices.enumerated() {
                    let p = position(device: i, step: step)
                    try publisher.client.publish(topic: "devices/\(device)/location",
                                                 payload: Payload.json(lat: p.lat, lon: p.lon, time: t0 + Double(step)), qos: .atLeastOnce)
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            let accepted = await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == devices.count * steps }
            #expect(accepted.ok, "accepted \(accepted.status?.counter("accepted") ?? -1)\n\(tail(gateway.log))")
            // The interval ends within 1 s of the last update, the tick comes within 0.5 s.
            try await Task.sleep(for: .seconds(4))

            let late = try await h.probe("late", subscribe: ["\(h.prefix)/devices/#"], cleanStart: true)
            func retained(_ device: String) -> JSONObject? {
                late.received(on: h.stateTopic(device)).last(where: \.retain).flatMap(json)
            }
            #expect(await poll(timeout: .seconds(30)) { devices.allSatisfy { retained($0) != nil } },
                    "late subscriber saw: \(late.messages.all.map(\.topic))")
            let last = position(device: 0, step: steps - 1)
            var short: [String] = []
            for (i, device) in devices.enumerated() {
                let expected = position(device: i, step: steps - 1)
                let state = retained(device)?["position"]?.objectValue
                let lat = state?["lat"]?.numberValue ?? .nan
                let lon = state?["lon"]?.numberValue ?? .nan
                let metres = (expected.lat - lat) * 111_000
                if !(abs(lat - expected.lat) <= 1e-7 && abs(lon - expected.lon) <= 1e-7) {
                    short.append("\(device) at \(lat), \(lon) (\(String(format: "%.0f", metres)) m short)")
                }
                #expect(state?["time"] == .string(iso8601(t0 + Double(steps - 1))), "\(device): \(state.map { JSONValue.object($0).serialized() } ?? "no position")")
            }
            print("trailing state, stateInterval 1, 4 s after the drive: \(devices.count - short.count) of \(devices.count) devices where they stopped (lat \(String(format: "%.4f", last.lat)))\(short.isEmpty ? "" : "; " + short.joined(separator: "; "))")
            #expect(short.isEmpty, "retained states short of the last position: \(short)")
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
        }
    }
}
