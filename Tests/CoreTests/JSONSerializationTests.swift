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

    /// Numbers are written as `Int64` text when whole and as Swift's shortest round-trip text
    /// (`description`) otherwise; the shortcut for one decimal (figures rounded to 0.1) and the
    /// integer digits must write exactly that.
    @Test func numbersAreWrittenAsTheirShortestRoundTripText() {
        func text(_ n: Double) -> String {
            var out: [UInt8] = []
            JSONValue.writeNumber(n, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        func expected(_ n: Double) -> String {
            guard n.isFinite else { return "null" }
            return n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : n.description
        }
        var values: [Double] = [0, -0.0, 0.1, -0.1, 0.5, 1.5, 2.5, 9.9, 10.1, 99.95, 5120.4, 7311.9, 123456789.1, 999999999.9,
                                1e9 + 0.5, 1e10 + 0.5, 0.05, 0.15, 0.25, 1e-5, 1e15, 1e16, -1e16, 0.1 + 0.2, 1.0 / 3,
                                Double(Int64.max), -Double(Int64.max), 9_007_199_254_740_992, .infinity, -.infinity, .nan,
                                34.4561, -119.7067, 1e15 - 0.5, 12.34]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let tenths = Double(Int64.random(in: -20_000_000_000...20_000_000_000, using: &random))
            values.append(tenths / 10)
            values.append(((Double.random(in: -1e6...1e6, using: &random)) * 10).rounded() / 10)
            values.append(Double.random(in: -1e6...1e6, using: &random))
        }
        for n in values { #expect(text(n) == expected(n), "\(n)") }
        for i: Int64 in [0, 1, -1, 9, 10, -10, 1234567890, Int64.max, Int64.min, Int64.min + 1] {
            var out: [UInt8] = []
            JSONValue.writeInteger(i, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(i))
        }
    }

    /// ``JSONObjectWriter`` writes what serializing the same ``JSONObject`` writes.
    @Test func theObjectWriterWritesWhatTheValueWrites() {
        var writer = JSONObjectWriter(capacity: 8)
        writer.string("id", "a\"b\u{01}é")
        writer.number("n", 2.5)
        writer.number("i", -3)
        writer.number("x", .nan)
        writer.time("at", 1_800_000_000.25)
        writer.time("whole", 1_800_000_000, milliseconds: true)
        let value = JSONValue.object([
            "id": .string("a\"b\u{01}é"), "n": .number(2.5), "i": .number(-3), "x": .number(.nan),
            "at": .string(ISO8601Time.format(1_800_000_000.25)),
            "whole": .string(ISO8601Time.format(1_800_000_000, milliseconds: true)),
        ])
        #expect(writer.finish() == value.serializedBytes())
        #expect(JSONObjectWriter(capacity: 0).finish() == Array("{}".utf8))
        for t in [0, -1, 1e300, -1e300, .nan, 1_800_000_000.9996, -62_135_596_800.5] as [Double] {
            var out: [UInt8] = []
            ISO8601Time.append(t, to: &out)
            #expect(out == Array(ISO8601Time.format(t).utf8), "\(t)")
        }
    }
}
