import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// Nothing a client sends can crash, stall or starve the gateway (the limits of
    /// docs/limits.md, docs/control-plane.md and docs/topics-and-payloads.md "Gateway status"), through the real
    /// broker and the real `geotrigger serve`: hostile inputs arrive between the updates of a
    /// valid device, and the gateway stays up, answers queries, keeps its memory bounded (read
    /// from /proc) and publishes every event of the valid device.
    @Suite struct HostileInput {
        /// A "tall sawtooth" Feature of `vertices` positions: teeth spanning the whole height
        /// over a thin base strip (valid: the ring does not cross itself). Made to defeat a
        /// band structure that lists every edge in every band it spans (~3.6 GB for 30,000).
        static func sawtooth(id: String, vertices: Int, lon: Double, lat: Double, height: Double) -> String {
            let teeth = vertices - 3
            let step = 1e-5  // degrees of longitude between teeth (~0.75 m here)
            var positions: [String] = []
            positions.reserveCapacity(vertices)
            func position(_ lon: Double, _ lat: Double) -> String {
                "[\(String(format: "%.6f", lon)),\(String(format: "%.5f", lat))]"
            }
            for k in 0..<teeth { positions.append(position(lon + step * Double(k), k % 2 == 0 ? lat : lat + height)) }
            positions.append(position(lon + step * Double(teeth - 1), lat - height / 100))
            positions.append(position(lon, lat - height / 100))
            positions.append(positions[0])
            return #"{"type":"Feature","id":"\#(id)","properties":{"name":"Sawtooth"},"geometry":{"type":"Polygon","coordinates":[[\#(positions.joined(separator: ","))]]}}"#
        }

        /// (resident, peak resident) of a process in MiB, from /proc/PID/status (VmRSS, VmHWM).
        static func memory(pid: Int32) -> (rss: Double, peak: Double) {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            func kib(_ key: String) -> Double {
                let line = text.split(separator: "\n").first { $0.hasPrefix(key) } ?? ""
                return (Double(line.filter(\.isNumber)) ?? -1024) / 1024
            }
            return (kib("VmRSS:"), kib("VmHWM:"))
        }

        @Test(.timeLimit(.minutes(4))) func gatewayStaysUpBoundedAndLosesNoValidEvent() async throws {
            let h = try ServeHarness("hostile")
            defer { h.close() }
            // No triggers key: the runtime layer "hostile" gets a trigger of its own.
            let config = try h.write("gw.json5", h.config(extra: "fences: { maxVertices: 40000 },"))
            let errorFilter = "\(h.prefix)/fences/+/+/error"
            let probe = try await h.probe("dispatch", subscribe: [h.eventsFilter(), h.statusTopic, errorFilter, "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let idle = Self.memory(pid: gateway.pid)

            var queries = 0
            func query(_ json: String) async -> [String: Any]? {
                queries += 1
                let replyTo = "\(h.prefix)/replies/hostile/\(queries)"
                let body = json.dropLast() + #","replyTo":"\#(replyTo)"}"#
                guard (try? probe.client.publish(topic: "\(h.prefix)/query/\(h.gatewayID)", payload: String(body), qos: .atLeastOnce)) != nil
                else { return nil }
                var reply: [String: Any]?
                _ = await poll(timeout: .seconds(20)) {
                    reply = probe.received(on: replyTo).first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
                    return reply != nil
                }
                return reply
            }

            // Two 30,000-vertex sawtooths (~0.5 MB each): accepted, prepared in memory linear in
            // their size. Right behind them a walker enters the garden's meadow: its update is not
            // held up by their checks and preparation (seconds each in a debug build).
            let lon = 8.5, lat = 47.3, height = 0.02
            let t0 = fixTimeBase()
            var start = Date()
            for (n, id) in ["sawtooth", "sawtooth-2"].enumerated() {
                try probe.client.publish(topic: "\(h.prefix)/fences/hostile/\(id)",
                                         payload: Self.sawtooth(id: id, vertices: 30_000, lon: lon + 0.5 * Double(n), lat: lat, height: height),
                                         qos: .atLeastOnce, retain: true)
            }
            try probe.client.publish(topic: "devices/walker/location", payload: Payload.json(lat: 34.4573, lon: -119.7102, time: t0), qos: .atLeastOnce)
            #expect(await poll(timeout: .seconds(60)) { !probe.received(under: "\(h.prefix)/events/garden-sections/walker").isEmpty })
            let walkerSeconds = Date().timeIntervalSince(start)
            // Queries are not held up either: the first is answered before either fence is live
            // (checked one after the other, as they came, while the queries go on).
            var firstAnswer = (live: 2, seconds: -1.0)
            let live = await poll(timeout: .seconds(90)) {
                let fences = (await query(#"{"fences":"hostile"}"#))?["fences"] as? [[String: Any]] ?? []
                let live = fences.count { ($0["id"] as? String)?.hasPrefix("sawtooth") == true }
                if queries == 1 { firstAnswer = (live, Date().timeIntervalSince(start)) }
                return live == 2
            }
            let liveSeconds = Date().timeIntervalSince(start)
            #expect(live, "\(tail(gateway.log))")
            #expect(firstAnswer.live == 0, "the first query was answered only when \(firstAnswer.live) sawtooth was live (\(firstAnswer.seconds) s)")
            let afterSawtooth = Self.memory(pid: gateway.pid)

            // 45,000 vertices (~0.8 MB, under the 1 MiB payload limit): over fences.maxVertices.
            start = Date()
            try probe.client.publish(topic: "\(h.prefix)/fences/hostile/bigger",
                                     payload: Self.sawtooth(id: "bigger", vertices: 45_000, lon: lon + 1, lat: lat, height: height),
                                     qos: .atLeastOnce, retain: true)
            let errorTopic = "\(h.prefix)/fences/hostile/bigger/error"
            #expect(await poll(timeout: .seconds(60)) { !probe.received(on: errorTopic).isEmpty })
            let rejectSeconds = Date().timeIntervalSince(start)
            let rejection = probe.received(on: errorTopic).first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
            #expect((rejection?["error"] as? String)?.contains("fences.maxVertices") == true, "\(rejection ?? [:])")

            // Each rejected fence adds a status warning: 60 more leave 50 in the status, the
            // last counting the rest.
            for n in 0..<60 {
                try probe.client.publish(topic: "\(h.prefix)/fences/junk/j\(n)", payload: #"{"type":"Feature","geometry":null}"#, qos: .atLeastOnce)
            }
            // (49 kept, the 45,000-vertex fence's among them, and 12 counted.)
            let bounded = await probe.waitStatus(h.statusTopic) { $0.warnings.last?.hasPrefix("12 more warnings are in the log") == true }
            #expect(bounded.ok && bounded.status?.warnings.count == 50, "\(bounded.status?.warnings ?? [])")

            // The valid device crosses the sawtooth's base strip 10 times; between its updates,
            // a client sends what must be dropped: an accuracy of 10,000 km, a fix time of 1e300
            // (epoch milliseconds), the year 99999 as text, and a latitude of 1e300.
            let inside = (lat: lat - height / 200, lon: lon + 0.1), outside = (lat: lat - 0.01, lon: lon + 0.1)
            var sent = 0, hostile = 0
            for visit in 0..<10 {
                for (n, point) in [outside, inside].enumerated() {
                    try probe.client.publish(topic: "devices/valid/location",
                                             payload: Payload.json(lat: point.lat, lon: point.lon, time: t0 + Double(2 * visit + n)), qos: .atLeastOnce)
                    sent += 1
                }
                for payload in [
                    Payload.json(lat: inside.lat, lon: inside.lon, time: t0 + Double(visit), accuracy: 1e7),
                    Payload.json(lat: inside.lat, lon: inside.lon, time: 1e300),
                    Payload.json(lat: inside.lat, lon: inside.lon, timeText: "99999-01-01T00:00:00Z"),
                    Payload.json(lat: 1e300, lon: inside.lon, time: t0 + Double(visit)),
                ] {
                    try probe.client.publish(topic: "devices/hostile\(visit)/location", payload: payload, qos: .atLeastOnce)
                    hostile += 1
                }
            }
            try probe.client.publish(topic: "devices/valid/location",
                                     payload: Payload.json(lat: outside.lat, lon: outside.lon, time: t0 + 100), qos: .atLeastOnce)
            sent += 2  // that last update, and the walker's
            let status = await probe.waitStatus(h.statusTopic) { s in
                s.counter("accepted") == sent && ["outOfRange", "futureTime", "wrongType"].reduce(0) { $0 + s.dropped($1) } == hostile
            }
            #expect(status.ok, "\(status.status.map { "\($0.object)" } ?? "no status")\n\(tail(gateway.log))")
            #expect(status.status?.dropped("outOfRange") == 20 && status.status?.dropped("futureTime") == 10)
            #expect(status.status?.counter("devices") == 2, "a dropped update creates no device")

            func summary() -> [String] {
                probe.received(under: "\(h.prefix)/events/hostile/valid").compactMap(json).compactMap { $0["type"]?.stringValue }
            }
            let expected = Array(repeating: ["enter", "exit"], count: 10).flatMap { $0 }
            #expect(await poll(timeout: .seconds(30)) { summary() == expected }, "\(summary())")
            let device = await query(#"{"device":"valid"}"#)
            #expect(device?["device"] as? String == "valid", "\(device ?? [:])")
            let end = Self.memory(pid: gateway.pid)
            print("hostile input: two sawtooths of 30,000 vertices live in \(String(format: "%.2f", liveSeconds)) s (an update sent behind it "
                  + "handled in \(String(format: "%.2f", walkerSeconds)) s, a query answered in \(String(format: "%.2f", firstAnswer.seconds)) s), RSS \(idle.rss) MiB idle -> "
                  + "\(afterSawtooth.rss) MiB (peak \(afterSawtooth.peak) MiB); 45,000 vertices rejected in \(String(format: "%.2f", rejectSeconds)) s: "
                  + "\(rejection?["error"] as? String ?? "-"); 61 rejected fences, \(bounded.status?.warnings.count ?? -1) warnings kept (the last: \(bounded.status?.warnings.last ?? "-")); \(hostile) hostile updates dropped, \(summary().count) of \(expected.count) "
                  + "valid events published; peak RSS at the end \(end.peak) MiB")
            // Linear preparation: tens of MiB at most; the old band structure needed ~3.6 GB.
            #expect(end.peak > 0 && end.peak < 256, "peak RSS \(end.peak) MiB")
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
        }
    }
}
