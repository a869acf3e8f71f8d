import Foundation
import MQTT
import Testing
import TestSupport
@testable import Gateway

/// `simulate` against a real broker and the real gateway gives the garden tour's
/// events, and `watch` in piped mode prints them line by line.
@Suite(.serialized) struct SimulateWatchTests {
    /// The tour's events (the list the engine's garden test checks, from shapely and pyproj).
    static let expected = (try? String(contentsOfFile: repositoryRoot + "/Tests/Fixtures/replay/garden-tour-events.txt", encoding: .utf8))?
        .split(separator: "\n").map(String.init) ?? []

    @Test func simulatedTourThroughTheGatewayAndWatch() async throws {
        try #require(Self.expected.count == 35, "Tests/Fixtures/replay/garden-tour-events.txt")
        let broker = try MosquittoProcess(.init(maxQueuedMessages: 100_000))
        try broker.start()
        defer { broker.stop() }
        let directory = try TemporaryDirectory(prefix: "tour")
        // commitInterval 0: the simulation publishes the whole tour within a second or two, and
        // device states go out once committed, so with the default 0.5 s between commits the
        // table would see only the last state of each.
        let config = try directory.write("gw.json5", """
            { gateway: { id: "tour-gw", fences: "\(repositoryRoot)/fences", database: "\(directory.file("gw.db"))", commitInterval: 0 },
              broker: { port: \(broker.port), clientId: "tour-gw" },
              output: { prefix: "tour", statusInterval: 60, occupancy: true } }
            """)
        let gateway = try GatewayProcess(["serve", "--config", config], directory: directory.path, logFile: directory.file("gw.log"))
        defer { gateway.terminate() }

        let probe = try MQTTProbe(port: broker.port, clientId: "tour-probe") { $0.cleanStart = true }
        try probe.client.subscribe("tour/events/#")
        try probe.client.subscribe("tour/status/+")
        probe.collect()
        try probe.client.start()
        defer { probe.stop() }
        #expect(await probe.waitSubscribed("tour/events/#"))
        // `started`, not the retained `starting` of the load before it: watch's first line is the
        // status retained when it connects.
        #expect(await poll(until: { probe.lastStatus(GatewayStatus.topic(prefix: "tour", gatewayID: "tour-gw"))?.status == "started" }), "\(gateway.log)")

        let watch = try GatewayProcess(
            ["watch", "--config", config, "--plain", "--timeout", "180"],
            directory: directory.path, logFile: directory.file("watch.out"))
        defer { watch.terminate() }
        #expect(await poll(until: { watch.log.contains("gateway  tour-gw: started") }), "watch never showed the status: \(watch.log)")

        let simulate = try GatewayProcess(
            ["simulate", "\(repositoryRoot)/deploy/routes/garden-tour.geojson", "--config", config,
             "--format", "owntracks", "--device", "visitors/ana", "--speed", "1.4", "--interval", "1", "--accuracy", "4",
             "--rate", "0", "--quiet"],
            directory: directory.path, logFile: directory.file("simulate.out"))
        #expect(simulate.waitForExit(timeout: 120) == 0, "\(simulate.log)")
        #expect(simulate.log.contains("published 1327 updates of 1 device"), "\(simulate.log)")

        func events() -> [[String: Any]] {
            probe.messages.all.filter { $0.topic.hasPrefix("tour/events/") }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any]
            }
        }
        #expect(await poll(timeout: .seconds(120), until: { events().count >= Self.expected.count }), "\(gateway.log)")
        let received = events()
        let sequence = received.map { "\($0["type"]!) \(($0["fence"] as! [String: Any])["id"]!)" }
        #expect(sequence == Self.expected)
        #expect(received.allSatisfy { $0["device"] as? String == "visitors/ana" && $0["gateway"] as? String == "tour-gw" })

        // watch, piped: one "event" line per event, in order, formatted from the payload; the
        // device table follows the retained state: at the end of the tour, back in the Arroyo.
        func watchLines() -> [String] { watch.log.split(separator: "\n").map(String.init) }
        #expect(await poll(timeout: .seconds(60), until: {
            let lines = watchLines()
            return lines.filter { $0.hasPrefix("event    ") }.count == received.count
                && lines.last { $0.hasPrefix("inside   visitors/ana: ") } == "inside   visitors/ana: Arroyo Section"
        }), "\(watch.log)")
        let lines = watchLines()
        let eventLines = lines.filter { $0.hasPrefix("event    ") }
        #expect(eventLines.count == received.count)
        for (line, event) in zip(eventLines, received) {
            let fence = event["fence"] as! [String: Any]
            let position = event["position"] as! [String: Any]
            let time = (position["time"] as! String).split(separator: "T")[1].prefix(8)
            let type = event["type"] as! String
            var text = "event    \(time)  \(type.count >= 5 ? type + " " : type + String(repeating: " ", count: 5 - type.count)) visitors/ana  "
                + "\(fence["name"]!) (\(fence["layer"]!)/\(fence["id"]!))"
            if let dwell = event["dwellSeconds"] as? Double { text += " after \(Int(dwell.rounded())) s" }
            if let message = event["message"] as? String { text += "  \"\(message)\"" }
            #expect(line == text)
        }
        // The table followed the state through the tour, not only to its end. Not one line per
        // crossing: a state that changes again before the network thread hands it to
        // libmosquitto goes out once, with its newest value (docs/topics-and-payloads.md "Device state"), and the
        // simulation publishes as fast as it can (9 of 35 on a loaded machine).
        #expect(Set(lines.filter { $0.hasPrefix("inside   visitors/ana: ") }).count >= 3)
        #expect(lines.first?.hasPrefix("gateway  tour-gw: started") == true, "\(lines.prefix(3))")
        // Occupancy: the tour ends in the Arroyo, alone.
        #expect(await poll(timeout: .seconds(30), until: {
            watchLines().last { $0.hasPrefix("occupied Arroyo Section ") } == "occupied Arroyo Section (garden-sections/garden-sections/arroyo): 1 device"
        }), "\(watch.log)")
    }

    /// The terminal screen lists the occupied fences with their device counts; a cleared
    /// occupancy topic (the fence was removed) leaves the list.
    @Test func screenShowsOccupancyPerFence() {
        var console = WatchConsole(prefix: "p")
        _ = console.take(topic: "p/occupancy/t/l/depot", payload: Array(#"{"trigger":"t","layer":"l","fence":"depot","name":"Depot","count":3,"devices":["a","b","c"]}"#.utf8))
        _ = console.take(topic: "p/occupancy/t/l/gate", payload: Array(#"{"trigger":"t","layer":"l","fence":"gate","count":0,"devices":[]}"#.utf8))
        let screen = console.screen(width: 80)
        #expect(screen.contains("Depot (t/l/depot)".padding(toLength: 46, withPad: " ", startingAt: 0) + "3\n"))
        #expect(screen.contains("gate (t/l/gate)".padding(toLength: 46, withPad: " ", startingAt: 0) + "0\n"))
        #expect(console.take(topic: "p/occupancy/t/l/gate", payload: []) == "removed  t/l/gate")
        #expect(!console.screen(width: 80).contains("t/l/gate"))
    }

    /// Text from the broker cannot drive the operator's terminal: a device id and an event
    /// message holding escape sequences are printed as escapes, in the lines and the screen.
    @Test func controlCharactersFromTheBrokerArePrintedAsEscapes() {
        var console = WatchConsole(prefix: "p")
        let line = console.take(topic: "p/events/t/d", payload: Array(#"{"type":"enter","device":"d\u001b[2J","fence":{"layer":"l","id":"f"},"message":"hi\u0007\nforged"}"#.utf8))
        #expect(line?.contains(#"d\u{1b}[2J"#) == true && line?.contains(#"hi\u{7}\nforged"#) == true, "\(line ?? "nil")")
        #expect(line?.unicodeScalars.contains { $0.value < 0x20 } == false)
        _ = console.take(topic: "p/devices/x\u{1B}]0;title\u{07}/state", payload: Array(#"{"device":"x","inside":[]}"#.utf8))
        let screen = console.screen(width: 200)
        #expect(!screen.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(screen.contains(#"x\u{1b}]0;title\u{7}"#), "\(screen)")
    }
}
