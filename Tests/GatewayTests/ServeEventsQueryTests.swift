import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/control-plane.md "Queries": `{"events": {"since", "until", "types", "devices",
    /// "limit", "offset"}}` on a real broker and `geotrigger serve`: the journal's events as they
    /// were published, oldest first, filtered and paged.
    @Suite struct EventsQuery {
        /// alice and then bob walk through the garden's meadow and desert (4 events each). The
        /// query answers all 8 exactly as the event topics carried them, in fix time order; then
        /// by type, by device, by a window of fix time, and in pages of 3 that add up to the whole.
        @Test(.timeLimit(.minutes(5))) func theJournalsEventsComeBackAsPublishedFilteredAndPaged() async throws {
            let h = try ServeHarness("events-query")
            defer { h.close() }
            let input = "\(h.prefix)-in"
            let config = try h.write("gw.json5", h.config(extra: """
                feeds: [{ name: "devices", topic: "\(input)/devices/+/location", format: "json" }],
                triggers: [{ name: "sections", fences: ["garden-sections"] }],
                """))
            let probe = try await h.probe("dispatch", subscribe: [h.statusTopic, h.eventsFilter(), "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            // Outside, meadow, desert, outside (ServeDriveTests' alice): enter and exit of each.
            let walk: [(lat: Double, lon: Double, second: Double)] = [
                (34.4570, -119.7125, 0), (34.4573, -119.7102, 10), (34.4579, -119.7062, 20), (34.4600, -119.7062, 45),
            ]
            for (device, start) in [("alice", 0.0), ("bob", 100.0)] {
                for step in walk {
                    try probe.client.publish(
                        topic: "\(input)/devices/\(device)/location",
                        payload: Payload.json(lat: step.lat, lon: step.lon, time: t0 + start + step.second, accuracy: 4), qos: .atLeastOnce)
                }
            }
            let settled = await probe.waitStatus(h.statusTopic) { $0.counter("events") == 8 && $0.outbox("local") == 0 }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none")\n\(tail(gateway.log))")
            let published = probe.received(under: "\(h.prefix)/events/").compactMap(json)
            #expect(published.count == 8)
            let byID = Dictionary(published.map { ($0["id"]?.stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })

            var counter = 0
            func ask(_ query: String) async throws -> JSONObject {
                counter += 1
                let reply = try await probe.ask("events", query, of: h, replyTo: "\(h.prefix)/replies/console/\(counter)")
                return try #require(reply, "no reply to \(query)\n\(tail(gateway.log))")
            }
            /// The events listed, each checked to be exactly the one published with its id;
            /// as "DEVICE TYPE FENCE +SECONDS".
            func listed(_ reply: JSONObject) -> [String] {
                (reply["events"]?.arrayValue ?? []).map { value in
                    let event = value.objectValue ?? [:]
                    let id = event["id"]?.stringValue ?? ""
                    #expect(byID[id] == event, "\(id) differs from what was published")
                    let time = event["position"]?.objectValue?["time"]?.stringValue.flatMap(ISO8601Time.parse) ?? 0
                    let fence = event["fence"]?.objectValue?["id"]?.stringValue ?? "-"
                    return "\(event["device"]?.stringValue ?? "") \(event["type"]?.stringValue ?? "") \(fence) +\(Int((time - t0).rounded()))"
                }
            }

            let whole = try await ask("{}")
            #expect(whole.keys == ["count", "offset", "events", "truncated"], "\(whole)")
            #expect(whole["count"] == .number(8) && whole["offset"] == .number(0) && whole["truncated"] == .bool(false))
            let all = listed(whole)
            // By fix time; at one fix time, by id (an exit and an enter decided together).
            #expect(all.count == 8)
            #expect(all.map { $0.split(separator: " ").last! } == ["+10", "+20", "+20", "+45", "+110", "+120", "+120", "+145"], "\(all)")
            #expect(Set(all) == Set(["alice", "bob"].flatMap { device -> [String] in
                let shift = device == "alice" ? 0 : 100
                return ["\(device) enter meadow +\(10 + shift)", "\(device) exit meadow +\(20 + shift)",
                        "\(device) enter desert +\(20 + shift)", "\(device) exit desert +\(45 + shift)"]
            }), "\(all)")

            let exits = try await ask(#"{"types": ["exit"]}"#)
            #expect(listed(exits) == all.filter { $0.contains(" exit ") } && exits["count"] == .number(4))
            #expect(listed(try await ask(#"{"devices": ["bob"], "types": ["enter", "offRoute"]}"#))
                == all.filter { $0.hasPrefix("bob enter") })
            let window = #"{"since": "\#(iso8601(t0 + 15))", "until": "\#(iso8601(t0 + 110))"}"#
            #expect(listed(try await ask(window)) == Array(all[1...3]))

            var pages: [[String]] = []
            var offset = 0
            while pages.count < 5 {
                let page = try await ask(#"{"limit": 3, "offset": \#(offset)}"#)
                #expect(page["offset"] == .number(Double(offset)) && page["count"] == .number(8))
                let events = listed(page)
                pages.append(events)
                offset += events.count
                #expect(page["truncated"] == .bool(offset < 8), "\(page)")
                if page["truncated"] != .bool(true) { break }
            }
            #expect(pages.map(\.count) == [3, 3, 2] && pages.flatMap { $0 } == all)

            // Nothing before the window: an empty list, not an error.
            let empty = try await ask(#"{"until": "\#(iso8601(t0 - 1))"}"#)
            #expect(empty["events"] == .array([]) && empty["truncated"] == .bool(false), "\(empty)")
            let bad = try await ask(#"{"since": "an hour ago"}"#)
            #expect(bad["error"]?.stringValue?.hasPrefix(#""events": "since" needs an ISO-8601 time"#) == true, "\(bad)")
        }
    }
}
