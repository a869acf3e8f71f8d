import Testing
@testable import GeotriggerCore

@Suite struct JSONSerializationTests {
    @Test func escapesQuotesBackslashesAndControlCharactersAndKeepsOtherTextAsIs() {
        let text = "a\"b\\c\nd\re\tf\u{01}g\u{1F}h/é–🚲"
        let value = JSONValue.object(["k\"ey": .string(text), "n": .number(2.5), "i": .number(-3), "x": .number(.nan)])
        let expected = #"{"k\"ey":"a\"b\\c\nd\re\tf\u0001g\u001fh/é–🚲","n":2.5,"i":-3,"x":null}"#
        #expect(value.serialized() == expected)
        #expect(value.serializedBytes() == Array(expected.utf8))
        // What is written reads back as the same value (NaN aside).
        let back = try? JSONReader.parse(value.serializedBytes(), file: "t", dialect: .json).value
        #expect(back?.objectValue?["k\"ey"] == .string(text))
    }

    @Test func emptyAndPlainStringsAndNesting() {
        #expect(JSONValue.array([.string(""), .array([]), .object(JSONObject()), .bool(true), .null]).serialized()
                == #"["",[],{},true,null]"#)
        var out = "prefix:"
        JSONValue.writeString("plain", to: &out)
        #expect(out == #"prefix:"plain""#)
    }
}
