import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// `geotrigger simulate TRACK --recorded` plays a real Garmin recording live into the
    /// broker (issue 54): the gateway publishes, for the fences on and across it, the visits
    /// shapely counts (`Tests/Fixtures/tracks/gpxpy/visits.csv`), with the fix times moved by
    /// the one shift simulate applied.
    @Suite struct RecordedPlay {
        @Test(.timeLimit(.minutes(3))) func realRecordingPlayedIntoTheBrokerGivesShapelysVisits() async throws {
            let folder = repositoryRoot + "/Tests/Fixtures/tracks/gpxpy"
            let h = try ServeHarness("recorded")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(fences: folder + "/fences"))
            let probe = try await h.probe("dispatch", subscribe: [h.eventsFilter(), h.statusTopic])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let simulate = try GatewayProcess(
                ["simulate", folder + "/korita-zbevnica.gpx", "--recorded", "--config", config, "--rate", "0"],
                directory: h.directory.path, logFile: h.directory.file("simulate.out"))
            #expect(simulate.waitForExit(timeout: 60) == 0, "\(simulate.log)")
            #expect(simulate.log.contains("published 513 updates of 2 devices"), "\(simulate.log)")
            #expect(simulate.log.contains(
                "simulate: skipped track 2 \"03-OCT-10 #2\" (line 28): none of its 358 points has a time (--speed walks it)"))
            // The first line printed is the first fix (2010-10-03T09:36:30Z) as published.
            let firstLine = try #require(simulate.log.split(separator: "\n").first { $0.contains("  ACTIVE LOG  at ") })
            let published = try #require(ISO8601Time.parse(String(firstLine.prefix { $0 != " " })))
            let shift = published - 1_286_098_590
            #expect(await probe.waitStatus(h.statusTopic) { $0.counter("accepted") == 513 }.ok, "\(tail(gateway.log))")

            let rows = try String(contentsOfFile: folder + "/visits.csv", encoding: .utf8).split(separator: "\n").dropFirst()
            func events() -> [JSONObject] { probe.received(under: "\(h.prefix)/events/korita/").compactMap(json) }
            #expect(await poll(timeout: .seconds(30)) { events().count >= rows.count }, "\(tail(gateway.log))")
            typealias Visit = (what: String, time: Double)
            let got: [Visit] = events().map { e in
                let what = [
                    e["device"]?.stringValue ?? "?", e["fence"]?.objectValue?["id"]?.stringValue ?? "?", e["type"]?.stringValue ?? "?",
                    e["inferred"] == .bool(true) ? "true" : "false",
                ].joined(separator: "|")
                return (what, (e["position"]?.objectValue?["time"]?.stringValue.flatMap(ISO8601Time.parse) ?? 0) - shift)
            }
            let expected: [Visit] = rows.map { row in
                let f = row.split(separator: ",").map(String.init)
                return (f[0...3].joined(separator: "|"), Double(f[4]) ?? 0)
            }
            func order(_ a: Visit, _ b: Visit) -> Bool { a.what == b.what ? a.time < b.time : a.what < b.what }
            #expect(got.count == expected.count)
            for (g, e) in zip(got.sorted(by: order), expected.sorted(by: order)) {
                // Within 10 ms: inferred times are rounded to the ms once more after the shift.
                #expect(g.what == e.what && abs(g.time - e.time) < 0.01, "\(g) vs \(e)")
            }
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
        }
    }
}
