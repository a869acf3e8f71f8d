import GeotriggerCore
import Store
import Testing

@testable import Gateway

/// `TripRequest.parse` and `TripBook` on their own: no broker, no shard, no store, fixed times.
@Suite struct TripBookTests {
    /// A layer `routes` with the line fence `north-run` (about 1.1 km north along a meridian) and
    /// the Point `mark`; a layer `sites` with the Polygon `depot` at the line's end, watched by a
    /// trigger with a 30 m buffer.
    static func snapshot() throws -> EngineSnapshot {
        let routes = FenceLayerParser.parse(Array(#"""
            {"type":"FeatureCollection","features":[
             {"type":"Feature","id":"north-run","properties":{},"geometry":{"type":"LineString","coordinates":[[-119.7,34.40],[-119.7,34.41]]}},
             {"type":"Feature","id":"mark","properties":{"buffer":10},"geometry":{"type":"Point","coordinates":[-119.7,34.40]}},
             {"type":"Feature","id":"fast-run","properties":{"maxspeed":"50 mph"},"geometry":{"type":"LineString","coordinates":[[-119.7,34.40],[-119.7,34.42]]}}]}
            """#.utf8), file: "routes.geojson", layer: "routes")
        let sites = FenceLayerParser.parse(Array(#"""
            {"type":"FeatureCollection","features":[
             {"type":"Feature","id":"depot","properties":{},"geometry":{"type":"Polygon","coordinates":[[[-119.7005,34.4095],[-119.6995,34.4095],[-119.6995,34.4105],[-119.7005,34.4105],[-119.7005,34.4095]]]}}]}
            """#.utf8), file: "sites.geojson", layer: "sites")
        #expect(routes.errors.isEmpty && sites.errors.isEmpty)
        return try EngineSnapshot(
            layers: [routes.layer, sites.layer],
            configTriggers: .array([
                .object(["name": .string("depots"), "fences": .array([.string("sites")]), "buffer": .number(30)]),
                .object(["name": .string("marks"), "fences": .array([.string("routes")]), "buffer": .number(5)]),
            ]))
    }

    static func parse(_ text: String, id: String = "t1", snapshot: EngineSnapshot, maxVertices: Int = 100,
                      created: Double = 1_800_000_000) -> Result<TripRequest, TripProblem> {
        TripRequest.parse(Array(text.utf8), id: id, topic: "p/trips/\(id)", snapshot: snapshot, maxVertices: maxVertices, created: created)
    }

    static func request(_ id: String = "t1", device: String = "vehicles/v17", corridor: Int = 50, created: Double = 1_800_000_000,
                        snapshot: EngineSnapshot) throws -> TripRequest {
        try parse(#"{"device":"\#(device)","route":{"layer":"routes","fence":"north-run"},"corridor":\#(corridor)}"#, id: id,
                  snapshot: snapshot, created: created).get()
    }

    @Test func aRequestTakesItsDefaultsAndItsFences() throws {
        let snapshot = try Self.snapshot()
        let plain = try Self.parse(#"{"device":"vehicles/v17","route":{"layer":"routes","fence":"north-run"}}"#, snapshot: snapshot).get()
        #expect(plain.device == "vehicles/v17" && plain.id == "t1" && plain.created == 1_800_000_000)
        #expect(plain.plan.corridor == 50 && plain.plan.offRouteAfter == 30 && plain.plan.by == nil && plain.plan.speedLimit == nil)
        #expect(abs(plain.plan.route.length - 1109) < 3, "\(plain.plan.route.length)")
        // The default destination: the route's end buffered by the corridor.
        let end = Coordinate(lat: 34.41, lon: -119.7)
        #expect(plain.plan.destination.contains(Coordinate(lat: 34.41 + 40 / 111_000, lon: -119.7)))
        #expect(!plain.plan.destination.contains(Coordinate(lat: 34.41 + 60 / 111_000, lon: -119.7)))
        #expect(plain.plan.destination.contains(end))

        let full = try Self.parse(#"""
            {"device":"vehicles/v17","route":{"type":"LineString","coordinates":[[-119.7,34.40],[-119.7,34.405],[-119.7,34.41]]},
             "corridor":25,"to":{"layer":"sites","fence":"depot"},"by":"2027-01-15T08:00:00Z","offRouteAfter":45,"speedLimit":14,"note":"kept"}
            """#, snapshot: snapshot).get()
        #expect(full.plan.route.vertices.count == 3 && full.plan.corridor == 25 && full.plan.offRouteAfter == 45)
        #expect(full.plan.by == ISO8601Time.parse("2027-01-15T08:00:00Z") && full.plan.speedLimit == 14)
        // `to`: the depot polygon with its trigger's 30 m buffer (about 55 m north of it is
        // out; 20 m out of its edge is in).
        #expect(full.plan.destination.contains(Coordinate(lat: 34.4105 + 20 / 111_000, lon: -119.7)))
        #expect(!full.plan.destination.contains(Coordinate(lat: 34.4105 + 40 / 111_000, lon: -119.7)))
        #expect(full.bytes > full.payload.count)
        // A Point as `to`, its own buffer (10) before the trigger's (5).
        let mark = try Self.parse(#"{"device":"v","route":{"layer":"routes","fence":"north-run"},"to":{"layer":"routes","fence":"mark"}}"#,
                                  snapshot: snapshot).get()
        #expect(mark.plan.destination.contains(Coordinate(lat: 34.40 + 8 / 111_000, lon: -119.7)))
        #expect(!mark.plan.destination.contains(Coordinate(lat: 34.40 + 12 / 111_000, lon: -119.7)))
        // A Feature holding the LineString.
        #expect(throws: Never.self) {
            try Self.parse(#"{"device":"v","route":{"type":"Feature","properties":{},"geometry":{"type":"LineString","coordinates":[[0,0],[0,0.01]]}}}"#,
                           snapshot: snapshot).get()
        }
        // `speedLimit` from the route's property, as the trigger key reads a fence's: the route
        // fence's "50 mph", a Feature's number of km/h.
        let fast = try Self.parse(#"{"device":"v","route":{"layer":"routes","fence":"fast-run"},"speedLimit":{"property":"maxspeed"}}"#,
                                  snapshot: snapshot).get()
        #expect(fast.plan.speedLimit.map { abs($0 - 50 * 0.447_04) < 1e-9 } == true, "\(String(describing: fast.plan.speedLimit))")
        let feature = try Self.parse(#"""
            {"device":"v","route":{"type":"Feature","properties":{"limit":36},"geometry":{"type":"LineString","coordinates":[[0,0],[0,0.01]]}},
             "speedLimit":{"property":"limit"}}
            """#, snapshot: snapshot).get()
        #expect(feature.plan.speedLimit.map { abs($0 - 10) < 1e-9 } == true)
    }

    @Test func aMalformedRequestSaysWhatWasExpected() throws {
        let snapshot = try Self.snapshot()
        func problem(_ text: String, id: String = "t1", maxVertices: Int = 100) -> String? {
            switch Self.parse(text, id: id, snapshot: snapshot, maxVertices: maxVertices) {
            case .success: nil
            case .failure(let problem): problem.message
            }
        }
        let route = #""route":{"layer":"routes","fence":"north-run"}"#
        #expect(problem("{")?.hasPrefix("not JSON: 1:2:") == true)
        #expect(problem("[1]")?.hasPrefix("expected a JSON object {\"device\": ID, \"route\":") == true)
        #expect(problem("{\(route)}")?.hasPrefix("\"device\" is missing; expected {") == true)
        #expect(problem(#"{"device":17,\#(route)}"#) == "\"device\" must be a string, found a number")
        #expect(problem(#"{"device":"a/+",\#(route)}"#)?.contains("wildcard") == true)
        #expect(problem(#"{"device":"v"}"#)?.hasPrefix("\"route\" is missing") == true)
        #expect(problem(#"{"device":"v","route":"north-run"}"#)?.hasPrefix("\"route\" must be {\"layer\": LAYER, \"fence\": FENCE_ID} or a GeoJSON LineString, found a string") == true)
        #expect(problem(#"{"device":"v","route":{"layer":"roads","fence":"north-run"}}"#) == "\"route\": no fence layer \"roads\" (layers: routes, sites)")
        #expect(problem(#"{"device":"v","route":{"layer":"routes","fence":"south"}}"#) == "\"route\": no fence \"south\" in layer \"routes\"")
        #expect(problem(#"{"device":"v","route":{"layer":"sites","fence":"depot"}}"#)
            == "\"route\": fence \"depot\" in layer \"sites\" is a Polygon; a route is a LineString")
        #expect(problem(#"{"device":"v","route":{"type":"Point","coordinates":[0,0]}}"#)?.hasSuffix("found \"Point\"") == true)
        #expect(problem(#"{"device":"v","route":{"type":"LineString","coordinates":[[0,0],"x"]}}"#)
            == "\"route\": position 1 must be [lon, lat], found \"x\"")
        #expect(problem(#"{"device":"v","route":{"type":"LineString","coordinates":[[0,0],[0,0]]}}"#)
            == "\"route\": a route needs at least two distinct positions, found 1")
        #expect(problem(#"{"device":"v","route":{"type":"LineString","coordinates":[[0,0],[0,1],[0,2]]}}"#, maxVertices: 2)
            == "\"route\" has 3 positions, over fences.maxVertices (2)")
        #expect(problem(#"{"device":"v",\#(route),"corridor":0}"#) == "\"corridor\" must be a number of metres either side of the route above 0, found 0")
        #expect(problem(#"{"device":"v",\#(route),"offRouteAfter":"30s"}"#) == "\"offRouteAfter\" must be a number of seconds at least 0, found \"30s\"")
        #expect(problem(#"{"device":"v",\#(route),"speedLimit":-3}"#)?.hasPrefix("\"speedLimit\" must be a number of metres per second") == true)
        #expect(problem(#"{"device":"v",\#(route),"speedLimit":{"property":"maxspeed"}}"#)
            == "\"speedLimit\": the route's property \"maxspeed\" is not a speed (a number of km/h, or a string such as \"50 mph\"), found none")
        #expect(problem(#"{"device":"v",\#(route),"speedLimit":{"prop":"maxspeed"}}"#)?.hasSuffix(#"found {"prop":"maxspeed"}"#) == true)
        #expect(problem(#"{"device":"v",\#(route),"by":"tomorrow"}"#) == "\"by\" must be an ISO-8601 time such as 2026-12-02T09:30:00Z, found \"tomorrow\"")
        #expect(problem(#"{"device":"v",\#(route),"to":{"layer":"sites"}}"#) == "\"to\" needs \"fence\" as a string: {\"layer\": LAYER, \"fence\": FENCE_ID}")
        #expect(problem(#"{"device":"v",\#(route)}"#, id: "a/b") == "the trip ID \"a/b\" has characters other than A-Z, a-z, 0-9, _ and -")
        #expect(problem(#"{"device":"v",\#(route)}"#, id: String(repeating: "x", count: 65)) == "the trip ID is longer than 64 characters")
        #expect(problem(#"{"device":"v",\#(route)}"#, id: String(repeating: "x", count: 64)) == nil)
        #expect(problem(#"{"device":"v",\#(route)}"#, id: "") == "the topic needs a trip ID: PREFIX/trips/TRIP_ID")
        switch TripRequest.parse(Array(repeating: UInt8(ascii: " "), count: 40), id: "t1", topic: "p/trips/t1", snapshot: snapshot,
                                 maxVertices: 10, maxPayload: 32, created: 0) {
        case .success: Issue.record("an oversized payload was accepted")
        case .failure(let problem): #expect(problem.message == "the payload is 40 bytes, over the 32 bytes a trip may have")
        }
    }

    @Test func aTripIsOpenedCopiedCancelledAndReplaced() throws {
        let snapshot = try Self.snapshot()
        var book = TripBook(capacity: 10)
        let first = try Self.request(snapshot: snapshot)
        let opened = book.offer(first, budget: 1 << 20)
        #expect(opened.count == 2)
        guard case .store(.open(let row)) = opened[0], case .assign(let assigned) = opened[1] else {
            Issue.record("\(opened)")
            return
        }
        #expect(row == first.row && assigned.id == "t1")
        #expect(book.openCount == 1 && book.openBytes == first.bytes)
        // A retained copy of what is open: nothing.
        let copy = book.offer(first, budget: 1 << 20)
        #expect(copy.isEmpty)
        // A replacement on the same device: the old one cancelled with its progress cleared.
        let second = try Self.request(corridor: 40, created: 1_800_000_060, snapshot: snapshot)
        let replaced = book.offer(second, budget: 1 << 20)
        guard case .cancel("t1", "vehicles/v17", 1_800_000_000, true) = replaced.first else {
            Issue.record("\(replaced)")
            return
        }
        #expect(replaced.count == 3 && book.openCount == 1 && book.openBytes == second.bytes)
        // Another device: the old progress stays until the new one's replaces it.
        let moved = book.offer(try Self.request(device: "vehicles/v18", corridor: 30, created: 1_800_000_120, snapshot: snapshot), budget: 1 << 20)
        guard case .cancel("t1", "vehicles/v17", 1_800_000_060, false) = moved.first else {
            Issue.record("\(moved)")
            return
        }
        // A cancel: the row goes and the shard clears its progress.
        let cancelled = book.cancel("t1")
        guard cancelled.count == 2, case .store(.remove("t1", onlySettled: false)) = cancelled[0],
            case .cancel("t1", "vehicles/v18", 1_800_000_120, true) = cancelled[1]
        else {
            Issue.record("\(cancelled)")
            return
        }
        #expect(book.openCount == 0 && book.openBytes == 0)
        // The shard's end of a trip cancelled meanwhile settles nothing.
        let late = book.ended("t1", created: 1_800_000_120)
        #expect(!late)
        let again = book.cancel("t1")
        #expect(again.isEmpty)
    }

    @Test func anEndedTripsRequestIsClearedAndNeverOpenedAgain() throws {
        let snapshot = try Self.snapshot()
        var book = TripBook(capacity: 10)
        let trip = try Self.request(snapshot: snapshot)
        _ = book.offer(trip, budget: 1 << 20)
        let other = book.ended("t1", created: trip.created + 1)
        #expect(!other)
        let ended = book.ended("t1", created: trip.created)
        #expect(ended)
        #expect(book.openCount == 0 && book.openBytes == 0 && book.isSettled("t1", created: trip.created))
        let twice = book.ended("t1", created: trip.created)
        #expect(!twice)
        // The gateway's clear goes out, and comes back: not a cancel.
        let clearing = book.clearing("t1", created: trip.created)
        #expect(clearing)
        #expect(book.echoes["t1"] == 1)
        let echo = book.cancel("t1")
        #expect(echo.isEmpty)
        #expect(book.echoes["t1"] == nil && book.clearedCount == 1)
        // An old save of the broker brings the request back: cleared again, not followed.
        guard case .clearRetained("t1")? = book.offer(trip, budget: 1 << 20).first else {
            Issue.record("not cleared again")
            return
        }
        #expect(book.openCount == 0 && book.clearedCount == 0)
        // A new request under the same id (another payload) is a new trip.
        let again = try Self.request(corridor: 60, created: trip.created + 3600, snapshot: Self.snapshot())
        let reopened = book.offer(again, budget: 1 << 20)
        guard case .store(.open)? = reopened.first else {
            Issue.record("\(reopened)")
            return
        }
        #expect(book.openCount == 1)
    }

    @Test func theBudgetsRejectWithTheReason() throws {
        let snapshot = try Self.snapshot()
        var book = TripBook(capacity: 2)
        let a = try Self.request("a", snapshot: snapshot), b = try Self.request("b", snapshot: snapshot)
        _ = book.offer(a, budget: 1 << 20)
        _ = book.offer(b, budget: 1 << 20)
        guard case .reject("c", let reason)? = book.offer(try Self.request("c", snapshot: snapshot), budget: 1 << 20).first else {
            Issue.record("a third trip over the capacity was accepted")
            return
        }
        #expect(reason == "2 trips are open; cancel one or wait for one to end first")
        // A replacement is no new trip, but must fit the bytes left.
        let bigger = try Self.request("b", corridor: 20, snapshot: snapshot)
        guard case .reject("b", let over)? = book.offer(bigger, budget: a.bytes + bigger.bytes - 1).first else {
            Issue.record("a trip over runtime.maxBytes was accepted")
            return
        }
        #expect(over.contains("bytes that runtime.maxBytes leaves beside the runtime fences"))
        #expect(book.openCount == 2 && book.openBytes == a.bytes + b.bytes)
        guard case .cancel? = book.offer(bigger, budget: a.bytes + bigger.bytes).first else {
            Issue.record("a replacement that fits was refused")
            return
        }
    }
}
