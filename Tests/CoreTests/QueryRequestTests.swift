import Testing

@testable import GeotriggerCore

/// The control plane's query reader and reply routing (what QueryService and the fuzz target share).
struct QueryRequestTests {
    static func parse(_ text: String) -> QueryRequest { QueryRequest.parse(Array(text.utf8), file: "q") }

    static func problem(_ text: String) -> String? {
        if case .failure(let p) = parse(text).kind { return p.message }
        return nil
    }

    @Test func everyKind() throws {
        #expect(try Self.parse(#"{"inside":{"layer":"sites","fence":"depot"}}"#).kind.get() == .inside(layer: "sites", fence: "depot"))
        #expect(try Self.parse(#"{"device":"vehicles/v17"}"#).kind.get() == .device("vehicles/v17"))
        #expect(try Self.parse(#"{"near":{"lat":34.4,"lon":-119.7}}"#).kind.get() == .near(Coordinate(lat: 34.4, lon: -119.7), radius: 100))
        #expect(try Self.parse(#"{"near":{"lat":34.4,"lon":-119.7,"radius":100000}}"#).kind.get()
            == .near(Coordinate(lat: 34.4, lon: -119.7), radius: 100_000))
        #expect(try Self.parse(#"{"fences":"sites"}"#).kind.get() == .fences("sites"))
        #expect(try Self.parse(#"{"expectations":"*"}"#).kind.get() == .expectations("*"))
        #expect(try Self.parse(#"{"trips":{}}"#).kind.get() == .trips(device: nil))
        #expect(try Self.parse(#"{"trips":{"device":"vehicles/v17"}}"#).kind.get() == .trips(device: "vehicles/v17"))
        #expect(try Self.parse(#"{"features":{}}"#).kind.get() == .features(FeaturesQuery()))
    }

    @Test func featuresReadsEveryKeyAndDefaultsTheRest() throws {
        let all = try Self.parse(#"{"features":{"bbox":[-119.72,34.45,-119.70,34.46],"layers":["garden-poi","jobs"],"limit":10000}}"#).kind.get()
        let box = FeaturesQuery.BoundingBox(west: -119.72, south: 34.45, east: -119.70, north: 34.46)
        #expect(all == .features(FeaturesQuery(bbox: box, layers: ["garden-poi", "jobs"], limit: 10_000)))
        #expect(box.bounds == GeoBounds(minLat: 34.45, minLon: -119.72, maxLat: 34.46, maxLon: -119.70))
        let defaults = FeaturesQuery()
        #expect(defaults.bbox == nil && defaults.layers == nil && defaults.limit == 2000)
        #expect(try Self.parse(#"{"features":{"limit":1}}"#).kind.get() == .features(FeaturesQuery(limit: 1)))
        #expect(try Self.parse(#"{"features":{"limit":2.0e3}}"#).kind.get() == .features(FeaturesQuery(limit: 2000)))
        // An empty list asks no layer.
        #expect(try Self.parse(#"{"features":{"layers":[]}}"#).kind.get() == .features(FeaturesQuery(layers: [])))
        // The whole world, and a degenerate box (a point) are boxes too.
        #expect(try Self.parse(#"{"features":{"bbox":[-180,-90,180,90]}}"#).kind.get()
            == .features(FeaturesQuery(bbox: .init(west: -180, south: -90, east: 180, north: 90))))
        #expect(try Self.parse(#"{"features":{"bbox":[5,5,5,5]}}"#).kind.get()
            == .features(FeaturesQuery(bbox: .init(west: 5, south: 5, east: 5, north: 5))))
        // Kept beside the reply members.
        let request = Self.parse(#"{"features":{"limit":5},"replyTo":"p/replies/m","correlation":"m"}"#)
        #expect(try request.kind.get() == .features(FeaturesQuery(limit: 5)) && request.replyTo == "p/replies/m")
    }

    /// `partBytes`: the reply in parts, from 1 KiB to the whole reply's 900 KiB.
    @Test func featuresPartBytesIsAnIntegerWithin1024And921600() throws {
        #expect(try Self.parse(#"{"features":{"partBytes":1024}}"#).kind.get() == .features(FeaturesQuery(partBytes: 1024)))
        #expect(try Self.parse(#"{"features":{"partBytes":921600}}"#).kind.get() == .features(FeaturesQuery(partBytes: 921_600)))
        #expect(try Self.parse(#"{"features":{"partBytes":4.0e3,"limit":5}}"#).kind.get() == .features(FeaturesQuery(limit: 5, partBytes: 4000)))
        #expect(FeaturesQuery().partBytes == nil)
        func problem(_ partBytes: String) -> String { Self.problem(#"{"features":{"partBytes":\#(partBytes)}}"#) ?? "accepted" }
        let expects = #""features": "partBytes" needs an integer within 1024...921600, found "#
        #expect(problem("1023") == expects + "1023")
        #expect(problem("921601") == expects + "921601")
        #expect(problem("1.5") == expects + "1.5")
        #expect(problem("1024.5") == expects + "1024.5")
        #expect(problem(#""4096""#) == expects + "a string")
        #expect(problem("null") == expects + "null")
        #expect(problem("1e400").hasPrefix(expects))
        #expect(Self.problem(#"{"features":[]}"#)?.contains(#""partBytes": 1024...921600"#) == true)
    }

    /// `offset`: pages through the fences selected, from 0 (the default).
    @Test func featuresOffsetIsAnIntegerFromZero() throws {
        #expect(try Self.parse(#"{"features":{"offset":0}}"#).kind.get() == .features(FeaturesQuery()))
        #expect(try Self.parse(#"{"features":{"offset":4000,"limit":10}}"#).kind.get() == .features(FeaturesQuery(limit: 10, offset: 4000)))
        #expect(try Self.parse(#"{"features":{"offset":100000000}}"#).kind.get() == .features(FeaturesQuery(offset: 100_000_000)))
        func problem(_ offset: String) -> String { Self.problem(#"{"features":{"offset":\#(offset)}}"#) ?? "accepted" }
        let expects = #""features": "offset" needs an integer within 0...100000000, found "#
        #expect(problem("-1") == expects + "-1")
        #expect(problem("100000001") == expects + "100000001")
        #expect(problem("2.5") == expects + "2.5")
        #expect(problem(#""10""#) == expects + "a string")
        #expect(Self.problem(#"{"features":[]}"#)?.contains(#""offset": 0...100000000"#) == true)
    }

    @Test func aFeaturesBoxWestOfItsEastSideCrossesTheAntimeridian() throws {
        let kind = try Self.parse(#"{"features":{"bbox":[170,-10,-170,10]}}"#).kind.get()
        let box = FeaturesQuery.BoundingBox(west: 170, south: -10, east: -170, north: 10)
        #expect(kind == .features(FeaturesQuery(bbox: box)))
        // East goes on past 180, as GeoBounds keeps a box across the antimeridian.
        #expect(box.bounds == GeoBounds(minLat: -10, minLon: 170, maxLat: 10, maxLon: 190))
        #expect(box.bounds.contains(Coordinate(lat: 0, lon: 179.5)) && box.bounds.contains(Coordinate(lat: 0, lon: -175)))
        #expect(!box.bounds.contains(Coordinate(lat: 0, lon: 0)))
    }

    @Test func badFeaturesQueriesNameTheKeyAndWhatItExpects() {
        func problem(_ features: String) -> String { Self.problem(#"{"features":\#(features)}"#) ?? "accepted" }
        #expect(problem("[]").hasPrefix(#""features" needs an object {"bbox": [west, south, east, north]"#))
        #expect(problem("[]").hasSuffix("found an array"))
        #expect(problem(#"{"box":[0,0,1,1]}"#) == #""features": unknown key "box" (expected "bbox", "layers", "limit", "offset" or "partBytes")"#)
        #expect(problem(#"{"bbox":[0,0,1]}"#) == #""features": "bbox" needs [west, south, east, north]: 4 numbers in degrees, found an array of 3 values"#)
        #expect(problem(#"{"bbox":[0,0,1,"1"]}"#).hasPrefix(#""features": "bbox" needs [west, south, east, north]"#))
        #expect(problem(#"{"bbox":"0,0,1,1"}"#).hasSuffix("found a string"))
        #expect(problem(#"{"bbox":[-181,0,1,1]}"#) == #""features": "bbox" west and east must be longitudes within -180...180, found -181 and 1"#)
        #expect(problem(#"{"bbox":[0,0,180.5,1]}"#).contains("west and east must be longitudes within -180...180"))
        #expect(problem(#"{"bbox":[0,-91,1,1]}"#) == #""features": "bbox" south and north must be latitudes within -90...90, found -91 and 1"#)
        #expect(problem(#"{"bbox":[0,0,1,90.5]}"#).contains("south and north must be latitudes within -90...90"))
        #expect(problem(#"{"bbox":[0,10,1,5]}"#) == #""features": "bbox" south (10) must not exceed north (5)"#)
        #expect(problem(#"{"layers":"garden"}"#) == #""features": "layers" needs an array of layer name strings, found a string"#)
        #expect(problem(#"{"layers":["garden",3]}"#) == #""features": "layers" needs an array of layer name strings, found an array holding a number"#)
        #expect(problem(#"{"limit":0}"#) == #""features": "limit" needs an integer within 1...10000, found 0"#)
        #expect(problem(#"{"limit":10001}"#).hasSuffix("found 10001"))
        #expect(problem(#"{"limit":2.5}"#).hasSuffix("found 2.5"))
        #expect(problem(#"{"limit":"5"}"#).hasSuffix("found a string"))
        #expect(problem(#"{"limit":1e400}"#).hasPrefix(#""features": "limit" needs an integer"#))
        #expect(Self.problem(#"{"features":{},"fences":"a"}"#)?.hasPrefix("a query asks one thing") == true)
    }

    /// `fences` as a layer name (the first page: offset 0, the largest limit) or an object with
    /// `offset` and `limit`; `near` with a `limit` (1,000 by default).
    @Test func fencesPagesAndNearLimit() throws {
        #expect(try Self.parse(#"{"fences":"sites"}"#).kind.get() == .fences("sites", offset: 0, limit: 10_000))
        #expect(try Self.parse(#"{"fences":{"layer":"sites"}}"#).kind.get() == .fences("sites"))
        #expect(try Self.parse(#"{"fences":{"layer":"sites","offset":20000,"limit":5}}"#).kind.get() == .fences("sites", offset: 20_000, limit: 5))
        #expect(try Self.parse(#"{"near":{"lat":1,"lon":2,"limit":10000}}"#).kind.get()
            == .near(Coordinate(lat: 1, lon: 2), radius: 100, limit: 10_000))
        #expect(try Self.parse(#"{"near":{"lat":1,"lon":2}}"#).kind.get() == .near(Coordinate(lat: 1, lon: 2), radius: 100, limit: 1000))
        let cases: [(String, String)] = [
            (#"{"fences":7}"#, #""fences" needs a layer name string, or {"layer": string, "offset": 0...100000000, "limit": 1...10000}"#),
            (#"{"fences":{"offset":3}}"#, #""fences" needs a layer name string, or {"layer""#),
            (#"{"fences":{"layer":"a","page":2}}"#, #""fences": unknown key "page" (expected "layer", "offset" or "limit")"#),
            (#"{"fences":{"layer":"a","offset":-1}}"#, #""fences": "offset" needs an integer within 0...100000000, found -1"#),
            (#"{"fences":{"layer":"a","offset":1.5}}"#, #""fences": "offset" needs an integer within 0...100000000, found 1.5"#),
            (#"{"fences":{"layer":"a","limit":0}}"#, #""fences": "limit" needs an integer within 1...10000, found 0"#),
            (#"{"fences":{"layer":"a","limit":"9"}}"#, #""fences": "limit" needs an integer within 1...10000, found a string"#),
            (#"{"near":{"lat":1,"lon":2,"limit":10001}}"#, #""near": "limit" needs an integer within 1...10000, found 10001"#),
            (#"{"near":{"lat":1,"lon":2,"limit":null}}"#, #""near": "limit" needs an integer within 1...10000, found null"#),
        ]
        for (query, problem) in cases {
            #expect(Self.problem(query)?.hasPrefix(problem) == true, "\(query): \(Self.problem(query) ?? "accepted")")
        }
    }

    /// `{"track": {"device", "since", "offset", "limit"}}`: since an ISO-8601 time (default: none,
    /// the last 24 hours), offset and limit like the `fences` query's.
    @Test func trackPages() throws {
        #expect(try Self.parse(#"{"track":{"device":"v1"}}"#).kind.get() == .track(device: "v1", since: nil, offset: 0, limit: 10_000))
        #expect(try Self.parse(#"{"track":{"device":"v1","since":"2026-11-30T12:00:00Z","offset":7,"limit":3}}"#).kind.get()
            == .track(device: "v1", since: 1_796_040_000, offset: 7, limit: 3))
        let cases: [(String, String)] = [
            (#"{"track":"v1"}"#, #""track" needs {"device": ID, "since": ISO-8601 time"#),
            (#"{"track":{"device":""}}"#, #""track" needs {"device": ID"#),
            (#"{"track":{"device":"v1","from":1}}"#, #""track": unknown key "from" (expected "device", "since", "offset" or "limit")"#),
            (#"{"track":{"device":"v1","since":12}}"#, #""track": "since" needs an ISO-8601 time such as "2026-11-30T12:00:00Z", found 12"#),
            (#"{"track":{"device":"v1","since":"yesterday"}}"#, #""track": "since" needs an ISO-8601 time"#),
            (#"{"track":{"device":"v1","offset":-1}}"#, #""track": "offset" needs an integer within 0...100000000, found -1"#),
            (#"{"track":{"device":"v1","limit":10001}}"#, #""track": "limit" needs an integer within 1...10000, found 10001"#),
        ]
        for (query, problem) in cases {
            #expect(Self.problem(query)?.hasPrefix(problem) == true, "\(query): \(Self.problem(query) ?? "accepted")")
        }
    }

    /// `{"track": {"devices", "since", "partBytes"}}`: 1...1000 device ids in the order asked,
    /// no offset or limit (a reply cut short is asked again from the device it stopped at).
    @Test func trackOfSeveralDevices() throws {
        #expect(try Self.parse(#"{"track":{"devices":["v1","v2"]}}"#).kind.get() == .tracks(devices: ["v1", "v2"], since: nil))
        #expect(try Self.parse(#"{"track":{"devices":["v2","v1"],"since":"2026-11-30T12:00:00Z","partBytes":4000}}"#).kind.get()
            == .tracks(devices: ["v2", "v1"], since: 1_796_040_000, partBytes: 4000))
        let tooMany = "[" + (0...1000).map { "\"d\($0)\"" }.joined(separator: ",") + "]"
        let cases: [(String, String)] = [
            (#"{"track":{"devices":[]}}"#, #""track": "devices" needs an array of 1...1000 device ids, found 0 values"#),
            (#"{"track":{"devices":"v1"}}"#, #""track": "devices" needs an array of 1...1000 device ids, found a string"#),
            (#"{"track":{"devices":\#(tooMany)}}"#, #""track": "devices" needs an array of 1...1000 device ids, found 1001 values"#),
            (#"{"track":{"devices":["v1",2]}}"#, #""track": "devices" needs device id strings, found a number"#),
            (#"{"track":{"devices":["v1",""]}}"#, #""track": "devices" needs device id strings, found an empty string"#),
            (#"{"track":{"devices":["v1"],"device":"v1"}}"#, #""track": unknown key "device" beside "devices""#),
            (#"{"track":{"devices":["v1"],"offset":3}}"#, #""track": unknown key "offset" beside "devices""#),
            (#"{"track":{"devices":["v1"],"partBytes":100}}"#, #""track": "partBytes" needs an integer within 1024...921600, found 100"#),
            (#"{"track":{"devices":["v1"],"since":"soon"}}"#, #""track": "since" needs an ISO-8601 time"#),
        ]
        for (query, problem) in cases {
            #expect(Self.problem(query)?.hasPrefix(problem) == true, "\(query): \(Self.problem(query) ?? "accepted")")
        }
    }

    /// `{"events": {"since", "until", "types", "devices", "limit", "offset"}}`: every key optional.
    @Test func eventsPages() throws {
        #expect(try Self.parse(#"{"events":{}}"#).kind.get() == .events(EventsQuery()))
        #expect(EventsQuery().limit == 1000 && EventsQuery().since == nil)
        let full = #"{"events":{"since":"2026-11-30T12:00:00Z","until":"2026-11-30T13:00:00Z","types":["enter","offRoute"],"devices":["v1"],"limit":5,"offset":10}}"#
        #expect(try Self.parse(full).kind.get() == .events(EventsQuery(
            since: 1_796_040_000, until: 1_796_043_600, types: ["enter", "offRoute"], devices: ["v1"], limit: 5, offset: 10)))
        let tooMany = "[" + (0...1000).map { "\"d\($0)\"" }.joined(separator: ",") + "]"
        let cases: [(String, String)] = [
            (#"{"events":[]}"#, #""events" needs an object {"since": ISO-8601 time"#),
            (#"{"events":{"from":1}}"#, #""events": unknown key "from" (expected "since", "until", "types", "devices", "limit" or "offset")"#),
            (#"{"events":{"since":"an hour ago"}}"#, #""events": "since" needs an ISO-8601 time such as "2026-11-30T12:00:00Z", found "an hour ago""#),
            (#"{"events":{"until":3}}"#, #""events": "until" needs an ISO-8601 time"#),
            (#"{"events":{"types":"enter"}}"#, #""events": "types" needs an array of at most 1000 strings, found a string"#),
            (#"{"events":{"devices":["a",1]}}"#, #""events": "devices" needs an array of at most 1000 strings, found an array holding a number"#),
            (#"{"events":{"devices":\#(tooMany)}}"#, #""events": "devices" needs an array of at most 1000 strings, found 1001 values"#),
            (#"{"events":{"limit":0}}"#, #""events": "limit" needs an integer within 1...10000, found 0"#),
            (#"{"events":{"offset":1.5}}"#, #""events": "offset" needs an integer within 0...100000000, found 1.5"#),
        ]
        for (query, problem) in cases {
            #expect(Self.problem(query)?.hasPrefix(problem) == true, "\(query): \(Self.problem(query) ?? "accepted")")
        }
    }

    @Test func replyMembersAreKeptBesideTheKind() throws {
        let request = Self.parse(#"{"device":"d","replyTo":"p/replies/1","correlation":{"n":[1,2]}}"#)
        #expect(try request.kind.get() == .device("d"))
        #expect(request.replyTo == "p/replies/1")
        #expect(request.correlation == .object(["n": .array([.number(1), .number(2)])]))
        // Kept on a malformed query too, so its error reaches the asker.
        let bad = Self.parse(#"{"replyTo":"p/replies/2","correlation":7}"#)
        #expect(bad.replyTo == "p/replies/2" && bad.correlation == .number(7))
    }

    @Test func malformedQueriesSayWhy() {
        #expect(Self.problem("{")?.hasPrefix("not JSON: 1:2:") == true)
        #expect(Self.problem("[1]") == "a query is a JSON object, found an array")
        #expect(Self.problem("{}")?.hasPrefix("a query needs one of") == true)
        #expect(Self.problem("{}")?.hasSuffix(#""expectations", "trips", "features", "track", "events""#) == true)
        #expect(Self.problem(#"{"device":"a","fences":"b"}"#)?.hasPrefix("a query asks one thing") == true)
        #expect(Self.problem(#"{"who":1}"#)?.hasPrefix("unknown query \"who\"") == true)
        #expect(Self.problem(#"{"who":1}"#)?.contains(#""features", "track" or "events""#) == true)
        #expect(Self.problem(#"{"device":""}"#) == "\"device\" needs a device id string")
        #expect(Self.problem(#"{"inside":{"layer":"a"}}"#)?.hasPrefix("\"inside\" needs") == true)
        #expect(Self.problem(#"{"near":{"lat":91,"lon":0}}"#)?.contains("-90...90") == true)
        #expect(Self.problem(#"{"near":{"lat":0,"lon":0,"radius":100001}}"#)?.contains("<= 100000") == true)
        #expect(Self.problem(#"{"near":{"lat":0,"lon":0,"radius":0}}"#) != nil)
        #expect(Self.problem(#"{"expectations":5}"#)?.contains("\"*\"") == true)
        #expect(Self.problem(#"{"trips":"v17"}"#)?.hasPrefix("\"trips\" needs {\"device\": ID}") == true)
        #expect(Self.problem(#"{"trips":{"device":3}}"#) == "\"trips\": \"device\" must be a device id string")
    }

    @Test func repliesGoOnlyUnderTheRepliesPrefix() {
        let prefix = "geotriggers/replies/", fallback = "geotriggers/query/gw-1/reply"
        func route(_ asked: String?) -> (String, String?) {
            QueryRequest.replyTopic(asked: asked, repliesPrefix: prefix, fallback: fallback)
        }
        #expect(route(nil) == (fallback, nil))
        #expect(route("geotriggers/replies/console/7") == ("geotriggers/replies/console/7", nil))
        for elsewhere in ["geotriggers/events/t/d", "geotriggers/status/gw-1", "geotriggers/replies/", "geotriggers/replies/+", "geotriggers/replies/#", "x"] {
            let (topic, refusal) = route(elsewhere)
            #expect(topic == fallback && refusal?.contains("geotriggers/replies/") == true, "\(elsewhere)")
        }
    }
}
