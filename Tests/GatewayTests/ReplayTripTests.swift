import Foundation
import MQTT
import Testing
import TestSupport
@testable import Gateway

/// `replay` and `simulate` with trip files (docs/trips.md "Trips in replay and simulate"): the
/// delivery van of deploy/routes (van-run.jsonl beside van-run.trip.json) on the fleet layer's
/// Haul Road, which strays about 110 m off it for a minute, waits in traffic until its ETA
/// passes `by`, and arrives 35 s before it.
@Suite(.serialized) struct ReplayTripTests {
    static let track = repositoryRoot + "/deploy/routes/van-run.jsonl"
    static let tripFile = repositoryRoot + "/deploy/routes/van-run.trip.json"
    static let expected = ["tripStarted", "offRoute", "backOnRoute", "late", "arrived"]

    static func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    @Test func vanReplayGivesItsTripEventsInOrderAmongTheFenceEvents() throws {
        let r = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--json"])
        #expect(r.status == 0, "\(r.err)")
        // Found beside the track, and said so.
        #expect(r.err.contains("replay: trip van-1-east from \(Self.tripFile): device van-1"), "\(r.err)")
        #expect(r.err.contains("replay: trip van-1-east: arrived, along 1500 of 1500 m"), "\(r.err)")
        let events = try Self.jsonLines(r.out)
        let trips = events.filter { $0["trigger"] as? String == "trips" }
        #expect(trips.map { $0["type"] as? String ?? "?" } == Self.expected)
        #expect(trips.allSatisfy { $0["trip"] as? String == "van-1-east" && $0["device"] as? String == "van-1" && $0["fence"] == nil })
        // Among the fleet trigger's events, in fix-time order: the van left the road before offRoute.
        let types = events.map { "\($0["type"]!) \(($0["fence"] as? [String: Any])?["id"] ?? $0["trip"]!)" }
        let exitRoad = try #require(types.firstIndex(of: "exit road"))
        #expect(exitRoad < types.firstIndex(of: "offRoute van-1-east")!, "\(types)")
        let times = events.compactMap { $0["time"] as? String }
        #expect(times == times.sorted(), "\(types)")
        // `late` when the ETA passed `by` (fix time), and the arrival at or before it.
        let by = "2026-12-07T09:08:00Z"
        let late = try #require(trips.first { $0["type"] as? String == "late" })
        #expect((late["eta"] as? String ?? "") > by, "\(late)")
        #expect((trips.last?["time"] as? String ?? "~") <= by)
        // The text lines: the same events, one each, the trip named where a fence is.
        let text = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences"])
        let lines = text.out.split(separator: "\n").filter { $0.contains("  trip van-1-east  trigger trips  ") }
        #expect(lines.map { String($0.split(separator: " ")[1]) } == Self.expected, "\(text.out)")
        #expect(lines.first?.hasPrefix("2026-12-07T09:00:25Z  tripStarted van-1  trip van-1-east") == true, "\(text.out)")
        // --no-trip: the fence events alone.
        let none = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--json", "--no-trip"])
        #expect(try Self.jsonLines(none.out).count == events.count - trips.count)
    }

    @Test func aGeoJSONRouteIsTakenAsItIsAndTheSVGDrawsIt() throws {
        let directory = try TemporaryDirectory(prefix: "trip-route")
        let fleet = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: repositoryRoot + "/fences/fleet.geojson"))) as! [String: Any]
        let road = (fleet["features"] as! [[String: Any]]).first { $0["id"] as? String == "road" }!["geometry"]!
        let line = String(decoding: try JSONSerialization.data(withJSONObject: road), as: UTF8.self)
        // The road's own line, given inline, and no `to`: the route's end buffered by the corridor.
        let trip = try directory.write("haul.trip.json", """
            {"device": "van-1", "route": {"type": "Feature", "properties": {}, "geometry": \(line)},
             "by": "2026-12-07T09:08:00Z"}
            """)
        let svg = directory.file("van.svg")
        let r = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--json", "--trip", trip, "--svg", svg])
        #expect(r.status == 0, "\(r.err)")
        let trips = try Self.jsonLines(r.out).filter { $0["trigger"] as? String == "trips" }
        #expect(trips.map { $0["type"] as? String ?? "?" } == Self.expected)
        #expect(trips.allSatisfy { $0["trip"] as? String == "haul" }, "the id is the file's name without .trip.json")
        let drawing = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(drawing.contains("<polyline class=\"route\" data-trip=\"haul\""))
        #expect(drawing.components(separatedBy: "<text class=\"event\" data-trip=\"haul\"").count - 1 == 5)
        // Two trips: the file beside the track is not taken when --trip is given, each --trip is.
        let both = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--json", "--trip", trip, "--trip", Self.tripFile])
        #expect(both.status == 0, "\(both.err)")
        #expect(try Self.jsonLines(both.out).filter { $0["trigger"] as? String == "trips" }.count == 10)
    }

    @Test func aMissedTripIsMissedAtItsByOnTheFixTimeClock() throws {
        let directory = try TemporaryDirectory(prefix: "trip-missed")
        let trip = try directory.write("early.json", """
            {"id": "early", "device": "van-1", "route": {"layer": "fleet", "fence": "road"}, "by": "2026-12-07T09:05:00Z"}
            """)
        let r = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--json", "--trip", trip])
        #expect(r.status == 0, "\(r.err)")
        let trips = try Self.jsonLines(r.out).filter { $0["trigger"] as? String == "trips" }
        // Due at 09:05:00, the van's first ETA (5 m/s for 1,500 m from 09:00:05) is already after it.
        #expect(trips.map { $0["type"] as? String ?? "?" } == ["late", "tripStarted", "offRoute", "backOnRoute", "missed"])
        #expect(trips.last?["time"] as? String == "2026-12-07T09:05:00Z")
    }

    @Test func aBadTripFileIsAUsageErrorNamingTheFileTheKeyAndWhatWasExpected() throws {
        let directory = try TemporaryDirectory(prefix: "trip-bad")
        func replay(_ name: String, _ text: String) throws -> (status: Int32, err: String, file: String) {
            let file = try directory.write(name, text)
            let r = try runGeotrigger(["replay", Self.track, "--fences", repositoryRoot + "/fences", "--trip", file])
            #expect(r.out.isEmpty, "no event is printed when a trip file is bad")
            return (r.status, r.err, file)
        }
        var r = try replay("zero.trip.json", """
            {"device": "van-1",
             "route": {"layer": "fleet", "fence": "road"},
             "corridor": 0}
            """)
        #expect(r.status == 2)
        #expect(r.err.contains("\(r.file):3:2: \"corridor\" must be a number of metres either side of the route above 0, found 0"), "\(r.err)")
        r = try replay("gone.trip.json", "{\"device\": \"van-1\", \"route\": {\"layer\": \"fleet\", \"fence\": \"nowhere\"}}")
        #expect(r.status == 2 && r.err.contains("\(r.file):1:21: \"route\": no fence \"nowhere\" in layer \"fleet\""), "\(r.err)")
        r = try replay("norte.trip.json", "{\"device\": \"van-1\", \"rute\": []}")
        #expect(r.status == 2 && r.err.contains("\(r.file): \"route\" is missing; expected {\"device\": ID, \"route\": "), "\(r.err)")
        r = try replay("polygon.trip.json", "{\"device\": \"van-1\", \"route\": {\"layer\": \"fleet\", \"fence\": \"depot\"}}")
        #expect(r.status == 2 && r.err.contains("fence \"depot\" in layer \"fleet\" is a Polygon; a route is a LineString"), "\(r.err)")
        r = try replay("syntax.trip.json", "{\"device\": \"van-1\",\n \"route\": }")
        #expect(r.status == 2 && r.err.contains("\(r.file):2:11: "), "\(r.err)")
        #expect(r.err.contains("expected a trip: {\"id\": TRIP_ID, \"device\": ID, \"route\": "), "\(r.err)")
        r = try replay("other.trip.json", "{\"device\": \"van-2\", \"route\": {\"layer\": \"fleet\", \"fence\": \"road\"}}")
        #expect(r.status == 2 && r.err.contains("\(r.file): \"device\": \"van-2\" has no fix in \(Self.track) (its devices: \"van-1\")"), "\(r.err)")
        r = try replay("bad id.trip.json", "{\"device\": \"van-1\", \"route\": {\"layer\": \"fleet\", \"fence\": \"road\"}}")
        #expect(r.status == 2 && r.err.contains("the trip id is the file's name, \"bad id\": the trip ID \"bad id\" has characters other than"), "\(r.err)")
        r = try replay("id.trip.json", "{\"id\": 7, \"device\": \"van-1\", \"route\": {\"layer\": \"fleet\", \"fence\": \"road\"}}")
        #expect(r.status == 2 && r.err.contains("\(r.file):1:2: \"id\" must be a trip id"), "\(r.err)")
        r = try replay("by.trip.json", "{\"device\": \"van-1\", \"route\": {\"layer\": \"fleet\", \"fence\": \"road\"}, \"by\": \"at nine\"}")
        #expect(r.status == 2 && r.err.contains("\(r.file):1:67: \"by\" must be an ISO-8601 time"), "\(r.err)")
        let missing = try runGeotrigger(["replay", Self.track, "--trip", directory.file("none.trip.json")])
        #expect(missing.status == 2 && missing.err.contains("none.trip.json: cannot read the trip file"), "\(missing.err)")
        let both = try runGeotrigger(["replay", Self.track, "--trip", Self.tripFile, "--no-trip"])
        #expect(both.status == 2 && both.err.contains("--no-trip and --trip do not go together"), "\(both.err)")
    }

    /// simulate publishes the trip retained before the first position, with `by` placed so the
    /// gateway's wall clock reaches it when the play does, and `serve` decides the same events
    /// as `replay`; the gateway clears the request once the trip has arrived.
    @Test func simulatedVanThroughTheGatewayGivesTheSameTripEvents() async throws {
        let broker = try MosquittoProcess()
        try broker.start()
        defer { broker.stop() }
        let directory = try TemporaryDirectory(prefix: "van")
        let config = try directory.write("gw.json5", """
            { gateway: { id: "van-gw", fences: "\(repositoryRoot)/fences", database: "\(directory.file("gw.db"))", commitInterval: 0 },
              broker: { port: \(broker.port), clientId: "van-gw" },
              output: { prefix: "van", statusInterval: 60 } }
            """)
        let gateway = try GatewayProcess(["serve", "--config", config], directory: directory.path, logFile: directory.file("gw.log"))
        defer { gateway.terminate() }
        let probe = try MQTTProbe(port: broker.port, clientId: "van-probe") { $0.cleanStart = true }
        try probe.client.subscribe("van/events/trips/#")
        try probe.client.subscribe("van/trips/+")
        try probe.client.subscribe("van/status/+")
        probe.collect()
        try probe.client.start()
        defer { probe.stop() }
        #expect(await probe.waitSubscribed("van/status/+"))
        #expect(await poll(until: { probe.lastStatus(GatewayStatus.topic(prefix: "van", gatewayID: "van-gw"))?.status == "started" }), "\(gateway.log)")

        let start = Date().timeIntervalSince1970
        let simulate = try GatewayProcess(
            ["simulate", Self.track, "--recorded", "--config", config, "--rate", "20", "--quiet"],
            directory: directory.path, logFile: directory.file("simulate.out"))
        #expect(simulate.waitForExit(timeout: 120) == 0, "\(simulate.log)")
        #expect(simulate.log.contains("simulate: trip van-1-east from \(Self.tripFile) published on van/trips/van-1-east (retained)"), "\(simulate.log)")

        func events() -> [[String: Any]] {
            probe.messages.all.filter { $0.topic == "van/events/trips/van-1" }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any]
            }
        }
        #expect(await poll(until: { events().count >= 5 }), "\(events())\n\(gateway.log)")
        #expect(events().map { $0["type"] as? String ?? "?" } == Self.expected, "\(events())")
        let requests = probe.messages.all.filter { $0.topic == "van/trips/van-1-east" }
        let published = try #require(requests.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] })
        #expect(published["id"] == nil && published["device"] as? String == "van-1", "\(published)")
        // `by` on the wall clock when the play reaches it: 480 s of fix time after the first fix, at 20x.
        let by = try #require(ISO8601DateFormatter.withFractions.date(from: published["by"] as? String ?? ""))
        #expect(abs(by.timeIntervalSince1970 - (start + 24)) < 5, "\(published)")
        // Settled: the gateway clears the retained request after the arrival.
        #expect(await poll(until: { probe.messages.all.contains { $0.topic == "van/trips/van-1-east" && $0.payload.isEmpty } }))
        // The journal has them, named by their trip.
        let journal = try runGeotrigger(["events", "--config", config, "--trigger", "trips"])
        #expect(journal.out.split(separator: "\n").map { String($0.split(separator: " ")[1]) } == Self.expected, "\(journal.out)")
        #expect(journal.out.contains("  late  van-1  trip van-1-east  trigger trips  \"van-1 will be late on trip van-1-east (ETA "), "\(journal.out)")
    }

    /// `watch` shows a trip's event with its trip where a fence event shows its fence.
    @Test func watchShowsATripEventWithItsTrip() {
        var console = WatchConsole(prefix: "p")
        let line = console.take(topic: "p/events/trips/van-1", payload: Array(
            #"{"type":"offRoute","device":"van-1","trip":"van-1-east","position":{"lat":34.4,"lon":-119.7,"time":"2026-12-07T09:03:15Z"},"message":"van-1 is off the route"}"#.utf8))
        #expect(line == #"event    09:03:15  offRoute  van-1  trip van-1-east  "van-1 is off the route""#, "\(line ?? "nil")")
    }
}

extension ISO8601DateFormatter {
    fileprivate static var withFractions: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
