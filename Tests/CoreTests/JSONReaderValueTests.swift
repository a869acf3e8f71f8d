import Testing
@testable import GeotriggerCore

/// `JSONReader.parseValue`: the value without locations, and a streamed top-level array member.
@Suite struct JSONReaderValueTests {
    static let texts: [String] = [
        #"{"a": [1, -2.5, 3e2, true, null, "x\n"], "b": {"c": {"d": []}}, "": ""}"#,
        #"[{"k": 1}, {"k": 2}]"#,
        #"{"name": 1, "other": 2, "name": 3}"#,
        "{" + (0..<20).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + ", \"k7\": 0}",
        #"{"a": [1, 2"#,
        #"{"a": 1,}"#,
    ]

    /// Values and syntax errors are those of `parse`, in both dialects.
    @Test func valuesAndErrorsMatchTheDocumentReader() {
        for text in Self.texts {
            for dialect in [JSONDialect.json, .json5] {
                let document = Result { () throws(JSONSyntaxError) -> JSONValue in
                    try JSONReader.parse(text, file: "t.json", dialect: dialect).value
                }
                let value = Result { () throws(JSONSyntaxError) -> JSONValue in
                    try JSONReader.parseValue(Array(text.utf8), file: "t.json", dialect: dialect)
                }
                #expect(value == document, "\(text)")
            }
        }
    }

    @Test func duplicateKeysNameTheFirstWithoutLocations() {
        #expect(throws: JSONSyntaxError(file: "t.json", location: SourceLocation(line: 1, column: 25),
                                        message: #"duplicate key "name" (first at line 1, column 2)"#)) {
            try JSONReader.parseValue(Array(#"{"name": 1, "other": 2, "name": 3}"#.utf8), file: "t.json", dialect: .json)
        }
    }

    /// The streamed member's elements arrive in order and are not kept; a nested member of the
    /// same name and other members are kept as usual.
    @Test func streamsTheTopLevelMembersElements() throws {
        let text = #"{"before": {"features": [9]}, "features": [1, {"a": [2]}, "three"], "after": [4]}"#
        var seen: [JSONValue] = []
        let value = try JSONReader.parseValue(Array(text.utf8), file: "t.json", dialect: .json, streaming: "features") {
            seen.append($0)
        }
        #expect(seen == [.number(1), .object(["a": .array([.number(2)])]), .string("three")])
        #expect(value == .object([
            "before": .object(["features": .array([.number(9)])]), "features": .array([]), "after": .array([.number(4)]),
        ]))
        var none = 0
        let other = try JSONReader.parseValue(Array(#"{"features": 5}"#.utf8), file: "t.json", dialect: .json, streaming: "features") { _ in
            none += 1
        }
        #expect(none == 0)
        #expect(other == .object(["features": .number(5)]))
    }
}
