import Foundation
import Testing
import TestSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Collects the elements of an SVG with their attributes and text.
private final class SVGElements: NSObject, XMLParserDelegate {
    struct Element {
        var name: String
        var attributes: [String: String]
        var text = ""
    }
    var elements: [Element] = []
    private var open: [Int] = []

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements.append(Element(name: name, attributes: attributes))
        open.append(elements.count - 1)
    }
    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if let i = open.last { elements[i].text += string }
    }
    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        open.removeLast()
    }
}

@Suite(.serialized) struct ReplayCommandTests {
    let track = repositoryRoot + "/Tests/Fixtures/replay/jitter.jsonl"

    func events(_ extra: [String] = []) throws -> [[String: Any]] {
        let r = try runGeotrigger(["replay", track, "--json"] + extra)
        #expect(r.status == 0, "\(r.err)")
        return try r.out.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    @Test func jitterFlapsWithDefaultsAndNotWithHysteresis() throws {
        let flapping = try events()
        #expect(flapping.count > 20)
        let steady = try events(["--config", repositoryRoot + "/Tests/Fixtures/replay/hysteresis.json5"])
        let summary = steady.map { "\($0["type"]!) \(($0["fence"] as! [String: Any])["id"]!)" }
        #expect(summary == ["enter desert", "exit desert", "enter meadow"])
        // The enter carries the crossing update: the first update 20 m inside (12:02:00).
        #expect((steady[0]["position"] as! [String: Any])["time"] as? String == "2026-11-30T12:02:00Z")
        #expect(steady[1]["visit"] as? String == steady[0]["id"] as? String)
        // Deterministic: the same ids every time.
        #expect(try events(["--config", repositoryRoot + "/Tests/Fixtures/replay/hysteresis.json5"]).map { $0["id"] as! String }
            == steady.map { $0["id"] as! String })
    }

    @Test func svgHasOneShapePerFenceTheTrackAndOneLabelPerEvent() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString).svg").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let r = try runGeotrigger(["replay", track, "--svg", out])
        #expect(r.status == 0, "\(r.err)")
        let printed = r.out.split(separator: "\n")
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: out)))
        let svg = SVGElements()
        parser.delegate = svg
        #expect(parser.parse(), "the SVG is not well-formed XML")

        let fences = svg.elements.filter { $0.attributes["class"] == "fence" }
        let ids = fences.map { "\($0.attributes["data-layer"]!)/\($0.attributes["data-fence"]!)" }
        #expect(Set(ids).count == ids.count, "one shape per fence")
        #expect(ids.contains("garden-sections/meadow") && ids.contains("garden-sections/desert"))

        let tracks = svg.elements.filter { $0.attributes["class"] == "track" }
        #expect(tracks.count == 1)
        let points = tracks.first?.attributes["points"]?.split(separator: " ") ?? []
        let lines = try String(contentsOfFile: track, encoding: .utf8).split(separator: "\n")
        #expect(points.count == lines.count)

        let labels = svg.elements.filter { $0.attributes["class"] == "event" }
        #expect(labels.count == printed.count)
        for (label, line) in zip(labels, printed) {
            // Text lines read "TIME  TYPE DEVICE ..."; the label starts with the same type.
            let type = line.split(separator: " ", omittingEmptySubsequences: true)[1]
            #expect(label.text.hasPrefix(String(type) + " "), "\(label.text) vs \(line)")
        }
        #expect(svg.elements.contains { $0.attributes["class"] == "scale" })
    }

    /// deploy/routes/gate-run.geojson at 60 km/h has fixes 500 m apart on both sides of the
    /// 20 m gate of deploy/crossings (crossings on): an inferred enter and exit, drawn dashed.
    @Test func sparseFixesOverAGateGiveAnInferredStayDrawnDashed() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("gate-\(UUID().uuidString).svg").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let route = repositoryRoot + "/deploy/routes/gate-run.geojson"
        let args = ["replay", route, "--fences", repositoryRoot + "/deploy/crossings", "--speed", "16.7"]
        let r = try runGeotrigger(args + ["--json", "--svg", out])
        #expect(r.status == 0, "\(r.err)")
        let events = try r.out.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(events.map { $0["type"] as? String } == ["enter", "exit"])
        #expect(events.allSatisfy { $0["inferred"] as? Bool == true && $0["distance"] as? Double == 0 })
        #expect(events.last?["visit"] as? String == events.first?["id"] as? String)
        // 20 m at 16.7 m/s.
        #expect(abs((events.last?["dwellSeconds"] as? Double ?? 0) - 20 / 16.7) < 0.01)
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: out)))
        let svg = SVGElements()
        parser.delegate = svg
        #expect(parser.parse(), "the SVG is not well-formed XML")
        let dashed = svg.elements.filter { $0.attributes["class"] == "inferred" }
        #expect(dashed.count == 1 && dashed.first?.attributes["stroke-dasharray"] != nil)
        #expect(dashed.first?.attributes["data-fence"] == "toll-gate")
        #expect(svg.elements.filter { $0.attributes["class"] == "event" }.allSatisfy { $0.text.hasSuffix("(inferred)") })
        // The readable lines say so too.
        let lines = try runGeotrigger(args).out.split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("  inferred") }, "\(lines)")
    }

    /// Fence names come from files and device ids from tracks: neither reaches the terminal
    /// with its control characters raw, in text, in JSON (which still decodes to the same
    /// strings) or in an error.
    @Test func controlCharactersInNamesAndDevicesAreEscaped() throws {
        let directory = try TemporaryDirectory()
        let fences = try HostileFences.write(in: directory)
        let track = try directory.write("walk.jsonl", """
            {"device": "walker\\u009b", "lat": 9.9995, "lon": 10.0005, "time": "2026-11-30T12:00:00Z"}
            {"device": "walker\\u009b", "lat": 10.0005, "lon": 10.0005, "time": "2026-11-30T12:01:00Z"}
            {"device": "walker\\u009b", "lat": 10.002, "lon": 10.0005, "time": "2026-11-30T12:02:00Z"}
            """)
        let text = try runGeotrigger(["replay", track, "--fences", fences])
        #expect(text.status == 0, "\(text.err)")
        let textRaw = HostileFences.rawControls(text.out + text.err)
        #expect(textRaw.isEmpty, "\(HostileFences.report(textRaw, in: text.out))")
        #expect(text.out.hasPrefix(
            #"2026-11-30T12:01:00Z  enter walker\u{9b}  hostile/square (\u{1b}]0;x\u{7}\u{1b}[2J\u{9b}\u{2028})  trigger hostile  "Entered \u{1b}]0;x"#),
            "\(text.out)")

        let json = try runGeotrigger(["replay", track, "--fences", fences, "--json"])
        #expect(json.status == 0, "\(json.err)")
        let jsonRaw = HostileFences.rawControls(json.out + json.err)
        #expect(jsonRaw.isEmpty, "\(HostileFences.report(jsonRaw, in: json.out))")
        let events = try json.out.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(events.count == 2)
        #expect(events.allSatisfy { ($0["fence"] as? [String: Any])?["name"] as? String == HostileFences.name })
        #expect(events.first?["message"] as? String == "Entered " + HostileFences.name)
        #expect(events.allSatisfy { $0["device"] as? String == "walker\u{9b}" })

        // A device id with a C0 control is refused, and the refusal shows it escaped.
        let bad = try directory.write("bad.jsonl", #"{"device": "a\u001b[2J", "lat": 10, "lon": 10, "time": 0}"#)
        let refused = try runGeotrigger(["replay", bad, "--fences", fences])
        #expect(refused.status == 2)
        #expect(refused.err.contains(#"device id 'a\u{1b}[2J': the device id contains a control character"#), "\(refused.err)")
        let refusedRaw = HostileFences.rawControls(refused.err)
        #expect(refusedRaw.isEmpty, "\(HostileFences.report(refusedRaw, in: refused.err))")
    }

    /// `speedLimit` (here a layer's default): replay prints `overspeed` and `speedOk` like any
    /// event, with the speed and the limit, and `--json` gives them in the event schema.
    @Test func overspeedAndSpeedOkAreReplayed() throws {
        let directory = try TemporaryDirectory()
        let fences = directory.file("fences")
        try FileManager.default.createDirectory(atPath: fences, withIntermediateDirectories: true)
        try directory.write("fences/roads.geojson", """
            {"type": "FeatureCollection", "geotrigger": {"speedLimit": 14},
             "features": [{"type": "Feature", "id": "road", "properties": {"name": "Long Road"},
               "geometry": {"type": "Polygon", "coordinates": [[[10, 9.999], [10.03, 9.999], [10.03, 10.001], [10, 10.001], [10, 9.999]]]}}]}
            """)
        // East along latitude 10 from 110 m before the road: 20 m/s for a minute, then 10 m/s.
        let metresPerDegree = 111_319.5 * cos(10 * Double.pi / 180)
        var lines: [String] = []
        var x = -110.0
        for second in 0...120 {
            lines.append(#"{"device": "van", "lat": 10, "lon": \#(10 + x / metresPerDegree), "time": \#(1_796_040_000 + second)}"#)
            x += second < 60 ? 20 : 10
        }
        let track = try directory.write("drive.jsonl", lines.joined(separator: "\n"))
        let text = try runGeotrigger(["replay", track, "--fences", fences])
        #expect(text.status == 0, "\(text.err)")
        let shown = text.out.split(separator: "\n")
        #expect(shown.count == 3, "\(text.out)")
        #expect(shown.dropFirst().first?.hasPrefix("2026-11-30T12:00:16Z  overspeed van  roads/road (Long Road)  trigger roads  20.0 m/s, limit 14.0 m/s") == true, "\(text.out)")
        #expect(shown.last?.hasPrefix("2026-11-30T12:01:11Z  speedOk van  roads/road (Long Road)  trigger roads  10.0 m/s, limit 14.0 m/s") == true, "\(text.out)")

        let json = try runGeotrigger(["replay", track, "--fences", fences, "--json"])
        let events = try json.out.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(events.map { $0["type"] as? String } == ["enter", "overspeed", "speedOk"])
        #expect(events.dropFirst().allSatisfy { $0["visit"] as? String == events[0]["id"] as? String && $0["speedLimit"] as? Double == 14 })
    }

    /// An NMEA log's sentences that give no point are reported on standard error, one line per
    /// reason, before the summary; the events come from the good ones.
    @Test func skippedSentencesAreReportedByReason() throws {
        func sentence(_ body: String) -> String {
            let sum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
            return "$\(body)*" + String(format: "%02X", sum)
        }
        let directory = try TemporaryDirectory()
        let log = try directory.write("walk.nmea", [
            sentence("GPRMC,120000.00,V,,,,,,,301126,,"),
            sentence("GPRMC,120001.00,V,,,,,,,301126,,"),
            sentence("GPRMC,120002.00,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"),
            sentence("GPRMC,123456.1e30,A,4717.11,N,00833.91,E,0.0,0.0,301126,,"),
            sentence("GPGSV,1,1,00"),
            sentence("GPRMC,120003.00,A,4717.12,N,00833.91,E,0.0,0.0,301126,,"),
        ].joined(separator: "\r\n") + "\r\n")
        let r = try runGeotrigger(["replay", log])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.split(separator: "\n").map(String.init) == [
            "replay: skipped 2 NMEA sentences: no fix",
            "replay: skipped 1 NMEA sentence: time out of range",
            "replay: 2 updates (2 accepted), 0 events",
        ])
        let help = try runGeotrigger(["replay", "--help"])
        #expect(help.out.contains("skipped"), "\(help.out)")
    }

    @Test func usageErrors() throws {
        #expect(try runGeotrigger(["replay"]).status == 2)
        let noTimes = try runGeotrigger(["replay", repositoryRoot + "/deploy/routes/garden-tour.geojson"])
        #expect(noTimes.status == 2 && noTimes.err.contains("--speed"))
        #expect(try runGeotrigger(["replay", "/nonexistent.gpx"]).status == 2)
    }
}
