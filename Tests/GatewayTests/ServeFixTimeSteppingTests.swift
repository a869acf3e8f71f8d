import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// A device's fix time buys it no more than ten times what real time gives 
    /// (docs/limits.md): `input.maxEventsPerDevice` counts a minute of the gateway's running clock as
    /// well as of fix time, and a phone is pushed its regions at most once a minute of either.
    @Suite struct FixTimeStepping {
        /// One square fence, `gate`, for devices to cross.
        static func yard(_ h: ServeHarness) throws -> String {
            try FileManager.default.createDirectory(atPath: h.directory.file("fences"), withIntermediateDirectories: true)
            _ = try h.write("fences/yard.geojson", """
                {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "gate", "properties": {"name": "Gate"},
                 "geometry": {"type": "Polygon", "coordinates": [[[-119.700, 34.420], [-119.699, 34.420], [-119.699, 34.421],
                 [-119.700, 34.421], [-119.700, 34.420]]]}}]}
                """)
            return h.directory.file("fences")
        }

        /// `input.maxEventsPerDevice: 10`. `stepper`, a new id, steps its fix time 61 s per
        /// message and crosses the gate with each of 150 messages sent at once: every message
        /// opens a minute of fix time, yet it gets 100 events (10 x 10) in the minute of the
        /// gateway's clock they arrive in, the other 50 counted as `eventRateLimited` with a
        /// warning naming the gateway's clock. `backlog`, a phone uploading an hour of fixes
        /// (every 10 s, crossing the gate once a minute: 60 events) at the same moment, has
        /// every event published.
        @Test(.timeLimit(.minutes(3))) func aFixTimeSteppingAMinutePerMessageGetsTenTimesTheLimitABacklogPassesWhole() async throws {
            let h = try ServeHarness("fix-stepping")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(fences: try Self.yard(h), extra: "input: { maxEventsPerDevice: 10 },"))
            let probe = try await h.probe("watcher", subscribe: [h.statusTopic, h.eventsFilter()])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            func send(_ device: String, inside: Bool, at time: Double) throws {
                try publisher.client.publish(topic: "devices/\(device)/location",
                                             payload: Payload.json(lat: inside ? 34.4205 : 34.4300, lon: -119.6995, time: time), qos: .atLeastOnce)
            }
            // stepper: fix 0 outside, then in and out: 150 crossings over 150 x 61 s of fix time.
            let stepperBase = fixTimeBase(secondsAgo: 10_000)
            for n in 0...150 { try send("stepper", inside: n % 2 == 1, at: stepperBase + Double(n) * 61) }
            // backlog: an hour of fixes every 10 s, 6 inside then 6 outside: a crossing a minute.
            let backlogBase = fixTimeBase(secondsAgo: 4_000)
            for n in 0...360 { try send("backlog", inside: (n / 6) % 2 == 1, at: backlogBase + Double(n) * 10) }

            let settled = await probe.waitStatus(h.statusTopic) {
                $0.counter("accepted") == 151 + 361 && $0.counter("events") + max($0.counter("eventRateLimited"), 0) == 150 + 60
                    && $0.counter("acked") == $0.counter("events")
            }
            func published(_ device: String) -> Int { probe.received(under: "\(h.prefix)/events/").filter { $0.topic.hasSuffix("/\(device)") }.count }
            let counters = settled.status.map { "events \($0.counter("events")), eventRateLimited \($0.counter("eventRateLimited"))" } ?? "no status"
            print("fix time stepping 61 s per message, maxEventsPerDevice 10: \(counters); published stepper \(published("stepper")), backlog \(published("backlog"))")
            #expect(settled.ok, "\(counters)\n\(tail(gateway.log))")
            #expect(await poll(timeout: .seconds(30)) { published("stepper") + published("backlog") == settled.status?.counter("events") })
            #expect(published("stepper") == 100)
            #expect(published("backlog") == 60)
            #expect(settled.status?.counter("eventRateLimited") == 50)
            #expect(settled.status?.warnings.contains {
                $0.contains("device stepper decided more than 100 events in a minute of the gateway's clock (10 x input.maxEventsPerDevice")
            } == true, "\(settled.status?.warnings ?? [])")
            #expect(gateway.terminate() == 0)
        }

        /// A phone (`phones` on) that steps its fix time 61 s per message, hopping between the
        /// garden's entrance and its island (each hop wants a new region set), is pushed once in
        /// the minute of the gateway's clock its 12 messages arrive in, not once per message.
        @Test func aPhoneSteppingItsFixTimeIsPushedOnceAMinuteOfTheGatewaysClock() async throws {
            let h = try ServeHarness("fix-stepping-phone")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(extra: """
                feeds: [{ name: "phones", topic: "owntracks/+/+", format: "owntracks" }],
                triggers: [{ name: "nearby", fences: ["garden-poi"], phones: { regions: 3 } }],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "owntracks/+/+/cmd"])
            let phone = try await h.probe("phone")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let base = fixTimeBase(secondsAgo: 2_000)
            for n in 0..<12 {
                let p = n % 2 == 0 ? PhoneRegions.entrance : PhoneRegions.island
                try phone.client.publish(topic: "owntracks/eve/phone", payload: Payload.owntracks(lat: p.lat, lon: p.lon, tst: base + Double(n) * 61, acc: 5),
                                         qos: .atLeastOnce)
            }
            let handled = await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == 12 }
            #expect(handled.ok, "\(handled.status?.description ?? "no status")\n\(tail(gateway.log))")
            // The push of the first fix is committed before it goes out; one more status after it
            // leaves room for any other push to have arrived.
            #expect(await poll { !PhoneRegions.commands(watcher, "eve/phone").isEmpty }, "\(tail(gateway.log))")
            let mark = watcher.received(on: h.statusTopic).count
            #expect(await poll { watcher.received(on: h.statusTopic).count >= mark + 2 })
            let commands = PhoneRegions.commands(watcher, "eve/phone")
            print("phone stepping its fix time 61 s per message, 12 messages: \(commands.count) setWaypoints")
            #expect(commands.count == 1, "\(commands.map(\.rids))")
            #expect(commands.first?.rids.contains("garden-poi/entrance") == true, "\(commands.map(\.rids))")
            #expect(gateway.terminate() == 0)
        }
    }
}
