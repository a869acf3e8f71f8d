import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/control-plane.md "Queries": `{"track": {"device", "since", "offset", "limit"}}` on a
    /// real broker and `geotrigger serve`: a device's recent positions, thinned to one per 10 s
    /// of fix time, oldest first, paged with `offset` and `limit`; and `{"track": {"devices",
    /// "partBytes"}}`, several devices' in parts.
    @Suite struct TrackQuery {
        /// A van reports every 2 s for 60 s, 20 m on each time (4 m accuracy): its track keeps
        /// the fixes at 0, 10, ..., 60 s (7). They come back whole, then in pages of 3 (the next
        /// page at offset + those listed), from `since`; an unknown device gets `{"error"}`.
        @Test(.timeLimit(.minutes(5))) func aDevicesPublishedPositionsComeBackThinnedAndPaged() async throws {
            let h = try ServeHarness("track")
            defer { h.close() }
            let input = "\(h.prefix)-in"
            let config = try h.write("gw.json5", h.config(
                extra: #"feeds: [{ name: "vans", topic: "\#(input)/vans/+/location", format: "json" }],"#))
            let probe = try await h.probe("dispatch", subscribe: [h.statusTopic, "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            // Metres per degree of longitude at latitude 10 (the ellipsoid's).
            let metresPerDegree = 109_638.4
            func lon(_ second: Int) -> Double { 10 + Double(second) * 10 / metresPerDegree }
            for second in stride(from: 0, through: 60, by: 2) {
                let payload = #"{"lat": 10, "lon": \#(lon(second)), "time": \#(Payload.number(t0 + Double(second))), "accuracy": 4}"#
                try probe.client.publish(topic: "\(input)/vans/v1/location", payload: payload, qos: .atLeastOnce)
            }
            let settled = await probe.waitStatus(h.statusTopic) { $0.counter("accepted") == 31 }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none")\n\(tail(gateway.log))")

            var counter = 0
            func ask(_ query: String) async throws -> JSONObject {
                counter += 1
                let reply = try await probe.ask("track", query, of: h, replyTo: "\(h.prefix)/replies/map/\(counter)")
                return try #require(reply, "no reply to \(query)\n\(tail(gateway.log))")
            }
            /// The seconds after t0 of the positions listed, checking each one's place.
            func seconds(_ reply: JSONObject) -> [Int] {
                (reply["positions"]?.arrayValue ?? []).compactMap { position in
                    guard let p = position.objectValue, case .string(let time)? = p["time"], let at = ISO8601Time.parse(time) else { return nil }
                    let second = Int((at - t0).rounded())
                    #expect(p["lat"] == .number(10))
                    #expect(p["lon"]?.numberValue.map { abs($0 - lon(second)) < 1e-6 } == true, "\(p)")
                    return second
                }
            }

            let whole = try await ask(#"{"device": "v1"}"#)
            #expect(whole.keys == ["device", "offset", "positions", "truncated"], "\(whole)")
            #expect(whole["device"] == .string("v1") && whole["offset"] == .number(0) && whole["truncated"] == .bool(false))
            #expect(seconds(whole) == [0, 10, 20, 30, 40, 50, 60], "\(whole)")

            var pages: [[Int]] = []
            var offset = 0
            while pages.count < 5 {
                let page = try await ask(#"{"device": "v1", "offset": \#(offset), "limit": 3}"#)
                #expect(page["offset"] == .number(Double(offset)))
                let listed = seconds(page)
                pages.append(listed)
                offset += listed.count
                #expect(page["truncated"] == .bool(offset < 7), "\(page)")
                if page["truncated"] != .bool(true) { break }
            }
            #expect(pages == [[0, 10, 20], [30, 40, 50], [60]])

            let since = try await ask(#"{"device": "v1", "since": "\#(iso8601(t0 + 25))"}"#)
            #expect(seconds(since) == [30, 40, 50, 60], "\(since)")

            let unknown = try await ask(#"{"device": "nobody"}"#)
            #expect(unknown["error"] == .string("no device \"nobody\" is known to this gateway"), "\(unknown)")

            // Several devices in one query, in parts of at most 1,024 bytes with the reply topic
            // (here a long one, leaving some 300 bytes a part): the entries in the order asked,
            // the van's positions running on across parts.
            let topic = "\(h.prefix)/replies/map/" + String(repeating: "s", count: 600)
            let first = try #require(try await probe.ask("track", #"{"devices": ["nobody", "v1"], "partBytes": 1024}"#, of: h, replyTo: topic))
            let parts = try #require(first["parts"]?.numberValue.map(Int.init), "\(first)")
            #expect(parts >= 2, "\(first)")
            _ = await poll(timeout: .seconds(30)) { probe.received(on: topic).count >= parts }
            let messages = probe.received(on: topic)
            #expect(messages.count == parts)
            var entries: [(String, [Int]?)] = []
            for (i, message) in messages.enumerated() {
                #expect(message.payload.count + topic.utf8.count <= 1024, "part \(i + 1): \(message.payload.count) bytes")
                let reply = try #require(json(message))
                #expect(reply["part"] == .number(Double(i + 1)) && reply["truncated"] == .bool(false), "\(reply)")
                for entry in reply["tracks"]?.arrayValue ?? [] {
                    let object = try #require(entry.objectValue)
                    let device = object["device"]?.stringValue ?? "?"
                    if object["unknown"] == .bool(true) {
                        entries.append((device, nil))
                    } else if let last = entries.last, last.0 == device {
                        entries[entries.count - 1].1 = (last.1 ?? []) + seconds(object)
                    } else {
                        entries.append((device, seconds(object)))
                    }
                }
            }
            #expect(entries.map(\.0) == ["nobody", "v1"] && entries[0].1 == nil, "\(entries)")
            #expect(entries.last?.1 == [0, 10, 20, 30, 40, 50, 60], "\(entries)")
        }
    }
}
