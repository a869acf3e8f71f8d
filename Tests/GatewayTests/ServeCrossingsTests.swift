import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// Crossings through `serve`: `geotrigger simulate` drives deploy/routes/gate-run.geojson at
    /// 60 km/h with a fix every 30 s (500 m apart) past the 20 m toll gate of deploy/crossings,
    /// whose layer turns crossings on. No fix lands in the gate; the gateway publishes and
    /// journals an inferred enter and exit, as `replay` does over the same route.
    @Suite struct Crossings {
        @Test(.timeLimit(.minutes(3))) func sparseFixesPastAGateGiveAnInferredStay() async throws {
            let h = try ServeHarness("crossings")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(fences: repositoryRoot + "/deploy/crossings"))
            let probe = try await h.probe("dispatch", subscribe: [h.eventsFilter(), h.statusTopic])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let simulate = try GatewayProcess(
                ["simulate", repositoryRoot + "/deploy/routes/gate-run.geojson", "--config", config, "--device", "v17",
                 "--speed", "16.7", "--interval", "30", "--rate", "0", "--quiet"],
                directory: h.directory.path, logFile: h.directory.file("simulate.out"))
            #expect(simulate.waitForExit(timeout: 60) == 0, "\(simulate.log)")
            // "published N updates of 1 device": 1.5 km at 501 m a fix.
            let sent = try #require(simulate.log.split(separator: " ").drop { $0 != "published" }.dropFirst().first.flatMap { Int($0) },
                                    "\(simulate.log)")
            #expect(sent >= 4)
            #expect(await probe.waitStatus(h.statusTopic) { $0.counter("accepted") == sent }.ok, "\(simulate.log)\n\(tail(gateway.log))")

            func events() -> [JSONObject] { probe.received(under: "\(h.prefix)/events/gates/v17").compactMap(json) }
            #expect(await poll(timeout: .seconds(30)) { events().count >= 2 }, "\(tail(gateway.log))")
            let published = events()
            print("crossings through serve: \(sent) fixes 500 m apart, events \(published.map { "\($0["type"]?.stringValue ?? "?") inferred=\($0["inferred"].map { "\($0)" } ?? "-")" })")
            #expect(published.map { $0["type"]?.stringValue } == ["enter", "exit"])
            #expect(published.allSatisfy { $0["inferred"] == .bool(true) && $0["distance"]?.numberValue == 0 })
            #expect(published.allSatisfy { $0["position"]?.objectValue?["accuracy"] == nil })
            #expect(published.last?["visit"] == published.first?["id"])
            // 20 m of gate at 16.7 m/s.
            let dwell = try #require(published.last?["dwellSeconds"]?.numberValue)
            #expect(abs(dwell - 20 / 16.7) < 0.05, "dwellSeconds \(dwell)")

            // The journal has them, with the same ids.
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
            let journal = try runGeotrigger(["events", "--config", config, "--json"])
            let ids = journal.out.split(separator: "\n").compactMap { try? JSONReader.parse(Array($0.utf8), file: "events", dialect: .json).value.objectValue?["id"] }
            #expect(ids == published.compactMap { $0["id"] }, "\(journal.out)\(journal.err)")
        }
    }
}
