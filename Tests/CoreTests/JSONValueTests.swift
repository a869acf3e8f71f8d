import Testing
@testable import GeotriggerCore

@Suite struct JSONValueTests {
    @Test func serializesInOrderWithEscapes() {
        let value: JSONValue = .object([
            "b": .number(1), "a": .number(2.5), "s": .string("q\"\\\n\u{1}"), "n": .null,
            "l": .array([.bool(true), .number(-3)]), "inf": .number(.infinity),
        ])
        #expect(value.serialized() == #"{"b":1,"a":2.5,"s":"q\"\\\n\u0001","n":null,"l":[true,-3],"inf":null}"#)
    }

    @Test func objectSubscriptReplacesAndRemoves() {
        var o: JSONObject = ["x": .number(1), "y": .number(2)]
        o["x"] = .string("one")
        o["y"] = nil
        o["z"] = .bool(false)
        #expect(o.keys == ["x", "z"])
        #expect(o["x"] == .string("one"))
    }
}
