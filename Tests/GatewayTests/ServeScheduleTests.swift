import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/schedules.md through `serve` with the real broker: an enter decided outside the
    /// window is neither published nor journaled but counted; its exit inside the window is
    /// published with the enter's visit and the whole stay.
    @Suite struct Schedules {
        @Test func enterOutsideTheWindowIsCountedAndItsExitInsideIsPublished() async throws {
            let h = try ServeHarness("schedule")
            defer { h.close() }
            let input = "\(h.prefix)-in"
            // A UTC window from a whole minute five minutes ago, ten minutes long: the enter's
            // fix time is 30 s before it, the exit's 5 s after its start.
            let windowStart = ((Date().timeIntervalSince1970 - 300) / 60).rounded(.down) * 60
            let enterTime = windowStart - 30, exitTime = windowStart + 5
            func hhmm(_ t: Double) -> String {
                let minutes = Int(t) / 60 % 1440
                return String(format: "%02d:%02d", minutes / 60, minutes % 60)
            }
            let configPath = try h.write("gw.json5", h.config(extra: """
                feeds: [ { name: "fleet", topic: "\(input)/+/location", format: "json" } ],
                triggers: [
                  { name: "sections", fences: ["garden-sections"],
                    schedule: { timezone: "UTC", windows: [{ from: "\(hhmm(windowStart))", to: "\(hhmm(windowStart + 600))" }] } },
                ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let topic = "\(input)/s1/location"
            for (time, inside) in [(enterTime - 10, false), (enterTime, true), (exitTime, false)] {
                let payload = Payload.json(lat: inside ? 34.4573 : 34.4570, lon: inside ? -119.7102 : -119.7125, time: time, accuracy: 5)
                try publisher.client.publish(topic: topic, payload: Array(payload.utf8), qos: .atLeastOnce)
            }
            let settled = await watcher.waitStatus(h.statusTopic) { status in
                status.counter("accepted") == 3 && status.counter("events") == 1 && status.counter("outsideSchedule") == 1
            }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none")\n\(tail(gateway.log))")
            #expect(await poll { !receivedEvents(watcher, prefix: h.prefix).isEmpty })
            // Events of a device leave in order: the exit arrived, so an enter would have before it.
            let events = receivedEvents(watcher, prefix: h.prefix).map(\.event)
            #expect(events.map { $0["type"]?.stringValue } == ["exit"])
            let exit = try #require(events.first)
            let enterID = EventID.make(trigger: "sections", layer: "garden-sections", fence: "meadow", device: "s1", type: "enter", time: enterTime)
            #expect(exit["visit"] == .string(enterID))
            #expect(exit["dwellSeconds"] == .number(exitTime - enterTime))
            #expect(gateway.terminate() == 0)
            // Nothing of the enter is in the journal.
            let journal = try runGeotrigger(["events", "--config", configPath, "--json"])
            #expect(journal.status == 0, "\(journal.err)")
            let lines = journal.out.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains("\"exit\"") == true, "\(journal.out)")
        }
    }
}
