import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// The `speedLimit` trigger key through `serve` and the real broker (docs/trips.md "Speed
    /// limits"): `overspeed` and `speedOk` arrive on the trigger's event topic, after the enter
    /// of the visit they belong to, with the payload of docs/topics-and-payloads.md "Events".
    @Suite struct SpeedLimits {
        /// One road, 3.3 km of latitude 10 with `maxspeed: "30 mph"` (13.41 m/s); a trigger
        /// reading it. Two vans drive in from 110 m before it at 20 m/s for 30 s, then 10 m/s for
        /// 30 s, a fix a second: v17 reports its speed, v18 does not (measured between its fixes,
        /// 4 m accuracy). Each gets exactly an enter (6 s), an overspeed (16 s) and a speedOk
        /// (41 s: its first slow fix at 31 s, plus 10 s).
        @Test(.timeLimit(.minutes(5))) func overspeedAndSpeedOkArriveOnTheTriggersEventTopic() async throws {
            let h = try ServeHarness("speed")
            defer { h.close() }
            let fences = h.directory.file("fences")
            try FileManager.default.createDirectory(atPath: fences, withIntermediateDirectories: true)
            try h.write("fences/roads.geojson", """
                {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "long-road",
                  "properties": {"name": "Long Road", "maxspeed": "30 mph"},
                  "geometry": {"type": "Polygon", "coordinates": [[[10, 9.999], [10.03, 9.999], [10.03, 10.001], [10, 10.001], [10, 9.999]]]}}]}
                """)
            let input = "\(h.prefix)-in"
            let config = try h.write("gw.json5", h.config(
                fences: fences,
                extra: """
                    feeds: [{ name: "vans", topic: "\(input)/vans/+/location", format: "json" }],
                    triggers: [{ name: "roads", speedLimit: { property: "maxspeed" },
                                 message: "$fencenotificationtype + ' on ' + $fencefeature.name" }],
                    """))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            // The ellipsoid's metres per degree of longitude at latitude 10.
            let metresPerDegree = 109_638.4
            for (van, reported) in [("v17", true), ("v18", false)] {
                var x = -110.0
                for second in 0...60 {
                    let speed = second <= 30 ? 20.0 : 10
                    var payload = #"{"lat": 10, "lon": \#(10 + x / metresPerDegree), "time": \#(Payload.number(t0 + Double(second))), "accuracy": 4"#
                    if reported { payload += #", "speed": \#(Payload.number(speed))"# }
                    try publisher.client.publish(topic: "\(input)/vans/\(van)/location", payload: payload + "}", qos: .atLeastOnce)
                    x += second < 30 ? 20 : 10
                }
            }
            // Every update taken, the six events committed and delivered.
            let settled = await watcher.waitStatus(h.statusTopic) {
                $0.counter("accepted") == 122 && $0.counter("events") == 6 && $0.outbox("local") == 0
            }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none")\n\(tail(gateway.log))")

            for van in ["v17", "v18"] {
                let topic = "\(h.prefix)/events/roads/\(van)"
                #expect(await poll(timeout: .seconds(30)) { watcher.received(on: topic).count >= 3 }, "\(tail(gateway.log))")
                let events = watcher.received(on: topic).compactMap(json)
                #expect(events.map { $0["type"]?.stringValue } == ["enter", "overspeed", "speedOk"], "\(van)")
                guard events.count == 3 else { continue }
                let (enter, overspeed, speedOk) = (events[0], events[1], events[2])
                #expect(overspeed.keys == [
                    "id", "visit", "gateway", "trigger", "device", "type", "notification", "fence", "position", "distance",
                    "speed", "speedLimit", "message", "actions", "properties", "emitted",
                ], "\(van)")
                #expect(speedOk.keys == overspeed.keys, "\(van)")
                for (event, type, second, speed) in [(overspeed, "overspeed", 16.0, 20.0), (speedOk, "speedOk", 41, 10)] {
                    #expect(event["notification"] == .string(type) && event["trigger"] == .string("roads") && event["device"] == .string(van))
                    #expect(event["visit"] == enter["id"] && event["gateway"] == .string(h.gatewayID))
                    #expect(event["fence"]?.objectValue?["id"] == .string("long-road"))
                    #expect(event["fence"]?.objectValue?["properties"]?.objectValue?["maxspeed"] == .string("30 mph"))
                    #expect(event["position"]?.objectValue?["time"] == .string(iso8601(t0 + second)), "\(van) \(type)")
                    #expect(event["speedLimit"] == .number(13.41))
                    #expect(event["speed"]?.numberValue.map { abs($0 - speed) < 0.05 } == true, "\(van) \(type): \(event["speed"].map { "\($0)" } ?? "none")")
                    #expect(event["message"] == .string("\(type) on Long Road"))
                    #expect(event["distance"]?.numberValue.map { $0 < 0 } == true)
                }
            }
            print("speed limits through serve: \(watcher.received(under: "\(h.prefix)/events/").count) events")
        }
    }
}
