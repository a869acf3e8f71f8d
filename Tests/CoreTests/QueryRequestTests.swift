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
        #expect(Self.problem(#"{"device":"a","fences":"b"}"#)?.hasPrefix("a query asks one thing") == true)
        #expect(Self.problem(#"{"who":1}"#)?.hasPrefix("unknown query \"who\"") == true)
        #expect(Self.problem(#"{"device":""}"#) == "\"device\" needs a device id string")
        #expect(Self.problem(#"{"inside":{"layer":"a"}}"#)?.hasPrefix("\"inside\" needs") == true)
        #expect(Self.problem(#"{"near":{"lat":91,"lon":0}}"#)?.contains("-90...90") == true)
        #expect(Self.problem(#"{"near":{"lat":0,"lon":0,"radius":100001}}"#)?.contains("<= 100000") == true)
        #expect(Self.problem(#"{"near":{"lat":0,"lon":0,"radius":0}}"#) != nil)
        #expect(Self.problem(#"{"expectations":5}"#)?.contains("\"*\"") == true)
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
