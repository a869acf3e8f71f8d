import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// `input.maxDevices` and `input.maxEventsPerDevice` (docs/configuration.md "The config file"): what one client
    /// can make the gateway hold is bounded.
    @Suite struct Limits {
        /// `input.maxDevices: 3`: five devices report twice each; the first three are tracked,
        /// the other two's four updates are dropped as `tooManyDevices`, with a warning.
        @Test func devicesPastMaxDevicesAreDroppedAndWarned() async throws {
            let h = try ServeHarness("max-devices")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config(extra: "input: { maxDevices: 3 },"))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase()
            for round in 0..<2 {
                for n in 0..<5 {
                    try publisher.client.publish(topic: "devices/limit\(n)/location",
                                                 payload: Payload.json(lat: 34.45, lon: -119.71, time: t0 + Double(round)), qos: .atLeastOnce)
                    // The first three devices exist before the others arrive.
                    if round == 0, n == 2 {
                        #expect(await watcher.waitStatus(h.statusTopic) { $0.counter("devices") == 3 }.ok)
                    }
                }
            }
            let status = await watcher.waitStatus(h.statusTopic) { $0.dropped("tooManyDevices") == 4 && $0.counter("accepted") == 6 }
            #expect(status.ok, "\(status.status.map { "\($0.object)" } ?? "no status")")
            #expect(status.status?.counter("devices") == 3)
            #expect(status.status?.warnings.contains { $0.contains("input.maxDevices") } == true)
            print("max devices: devices \(status.status?.counter("devices") ?? -1), tooManyDevices \(status.status?.dropped("tooManyDevices") ?? -1)")
        }

        /// `input.maxEventsPerDevice: 10`: a device flaps across a fence 400 times within 40 s
        /// of fix time. Its first 10 events are journaled and published, the other 390 only
        /// counted (`eventRateLimited`, a warning naming it), while its retained state follows
        /// every fix: outside after the last one. One more crossing in a later minute of fix
        /// time is an event again.
        @Test(.timeLimit(.minutes(3))) func aFlappingDevicesEventsPastMaxEventsPerDeviceAreCountedNotPublished() async throws {
            let h = try ServeHarness("max-events")
            defer { h.close() }
            try FileManager.default.createDirectory(atPath: h.directory.file("fences"), withIntermediateDirectories: true)
            _ = try h.write("fences/yard.geojson", """
                {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "gate", "properties": {"name": "Gate"},
                 "geometry": {"type": "Polygon", "coordinates": [[[-119.700, 34.420], [-119.699, 34.420], [-119.699, 34.421],
                 [-119.700, 34.421], [-119.700, 34.420]]]}}]}
                """)
            let config = try h.write("gw.json5", h.config(fences: h.directory.file("fences"), extra: "input: { maxEventsPerDevice: 10 },"))
            let device = "flapper"
            let probe = try await h.probe("watcher", subscribe: [h.statusTopic, h.eventsFilter(), h.stateTopic(device)])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            // Fix 0 outside, then odd fixes inside and even ones outside: 400 crossings, 0.1 s apart.
            let t0 = fixTimeBase()
            func send(_ n: Int, at time: Double) throws {
                let lat = n % 2 == 1 ? 34.4205 : 34.4300
                try publisher.client.publish(topic: "devices/\(device)/location", payload: Payload.json(lat: lat, lon: -119.6995, time: time),
                                             qos: .atLeastOnce)
            }
            for n in 0...400 { try send(n, at: t0 + Double(n) * 0.1) }
            func counts(_ status: GatewayStatus?) -> String {
                guard let status else { return "no status" }
                return "accepted \(status.counter("accepted")), events \(status.counter("events")), eventRateLimited \(status.counter("eventRateLimited")), acked \(status.counter("acked"))"
            }
            let burst = await probe.waitStatus(h.statusTopic) {
                $0.counter("accepted") == 401 && $0.counter("events") + max($0.counter("eventRateLimited"), 0) == 400 && $0.counter("acked") == $0.counter("events")
            }
            func published() -> [JSONObject] { probe.received(under: "\(h.prefix)/events/").compactMap(json) }
            print("max events per device, 400 crossings in 40 s of fix time: \(counts(burst.status)), published \(published().count)")
            #expect(burst.ok, "\(counts(burst.status))\n\(tail(gateway.log))")
            #expect(burst.status?.counter("events") == 10)
            #expect(burst.status?.counter("eventRateLimited") == 390)
            #expect(published().count == 10)
            #expect(published().map { $0["type"]?.stringValue ?? "?" } == Array(repeating: ["enter", "exit"], count: 5).flatMap { $0 })
            #expect(burst.status?.warnings.contains { $0.contains("device \(device)") && $0.contains("input.maxEventsPerDevice") } == true,
                    "\(burst.status?.warnings ?? [])")

            // The retained state tells the truth: the last fix, outside.
            func lastState() -> JSONObject? { probe.received(on: h.stateTopic(device)).last.flatMap(json) }
            #expect(await poll(timeout: .seconds(30)) {
                lastState()?["position"]?.objectValue?["time"] == .string(iso8601(t0 + 40)) && lastState()?["inside"] == .array([])
            }, "\(lastState().map { JSONValue.object($0).serialized() } ?? "no state")")

            // A minute of fix time later the device's events go out again: an enter, and it is inside.
            try send(1, at: t0 + 120)
            let later = await probe.waitStatus(h.statusTopic) { $0.counter("events") == 11 && $0.counter("acked") == 11 }
            #expect(later.ok, "\(counts(later.status))")
            #expect(await poll(timeout: .seconds(30)) { published().count == 11 })
            #expect(published().last?["type"] == .string("enter"))
            #expect(await poll(timeout: .seconds(30)) {
                lastState()?["inside"]?.arrayValue?.first?.objectValue?["fence"] == .string("gate")
            }, "\(lastState().map { JSONValue.object($0).serialized() } ?? "no state")")

            // The journal holds the 11 events published, no more.
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
            let journal = try runGeotrigger(["events", "--config", config, "--json"])
            let lines = journal.out.split(separator: "\n")
            print("max events per device: journal \(lines.count) events")
            #expect(lines.count == 11, "\(journal.err)")
        }
    }
}
