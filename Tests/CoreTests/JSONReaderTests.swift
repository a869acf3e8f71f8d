import Testing
@testable import GeotriggerCore

/// The message `JSONReader` gives for `text`, as `FILE:LINE:COLUMN: message`, or nil if it parses.
private func failure(_ text: String, _ dialect: JSONDialect = .json) -> String? {
    failure(Array(text.utf8), dialect)
}

private func failure(_ bytes: [UInt8], _ dialect: JSONDialect = .json) -> String? {
    do {
        _ = try JSONReader.parse(bytes, file: "t.json", dialect: dialect)
        return nil
    } catch {
        return error.description
    }
}

private func parse(_ text: String, _ dialect: JSONDialect = .json) throws -> JSONValue {
    try JSONReader.parse(text, file: "t.json", dialect: dialect).value
}

@Suite struct JSONReaderTests {
    // MARK: Values

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5, 3e2, 0, -0.0e-1, true, false, null], "b": {"c": "d"}, "": ""} "#)
        #expect(value == .object([
            "a": .array([.number(1), .number(-2.5), .number(300), .number(0), .number(-0.0), .bool(true), .bool(false), .null]),
            "b": .object(["c": .string("d")]), "": .string(""),
        ]))
        #expect(try parse("42") == .number(42))
        #expect(try parse("\"x\"") == .string("x"))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object([:]))
    }

    @Test func keepsKeyOrder() throws {
        let value = try parse(#"{"z": 1, "a": 2, "m": 3}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
    }

    @Test func numbersRoundCorrectly() throws {
        let texts = [
            "-73.97186242299986", "40.694996000000096", "0.1", "1e-7", "123456789012345678901234567890",
            "2.2250738585072014e-308", "1.7976931348623157e308", "5e-324", "0.000000000000000000000000123",
            "9007199254740993", "-0.1e+2", "1E400", "12345678901234567890.5",
        ]
        for text in texts {
            let expected = Double(text)!
            #expect(try parse(text) == .number(expected), "\(text)")
        }
    }

    /// Random doubles in shortest form and with 17 significant digits read back exactly as
    /// Swift's own correctly rounded parser reads them (the fast path and the fallback).
    @Test func randomNumbersMatchSwiftsParser() throws {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        var checked = 0
        for i in 0..<3000 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            let d: Double
            switch i % 3 {
            case 0: d = Double(bitPattern: state & 0x7FEF_FFFF_FFFF_FFFF)
            case 1: d = Double(Int64(bitPattern: state) % 360_000_000_000) / 1e9
            default: d = Double(state % 1_000_000_007) / 1024
            }
            for text in ["\(d)", "\(-d)", "\(d)".replacing("e+", with: "e")] where Double(text) != nil {
                #expect(try parse(text) == .number(Double(text)!), "\(text)")
                checked += 1
            }
        }
        #expect(checked >= 9000)
    }

    @Test func decodesEscapesAndUnicode() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\té😀"))
        #expect(try parse("\"Jardín 🌵\"") == .string("Jardín 🌵"))
    }

    @Test func skipsByteOrderMark() throws {
        #expect(try JSONReader.parse([0xEF, 0xBB, 0xBF] + Array("[1]".utf8), file: "t", dialect: .json).value == .array([.number(1)]))
    }

    // MARK: JSON syntax errors, with line and column

    @Test func objectErrors() {
        #expect(failure("{\"a\": 1 \"b\": 2}") == "t.json:1:9: expected ',' or '}' after object member")
        #expect(failure("{\n  \"a\" 1\n}") == "t.json:2:7: expected ':' after object key")
        #expect(failure("{\"a\": 1,}") == "t.json:1:8: a trailing comma is not allowed in JSON (only in JSON5)")
        #expect(failure("{a: 1}") == "t.json:1:2: object keys must be double-quoted strings in JSON")
        #expect(failure("{'a': 1}") == "t.json:1:2: object keys must be double-quoted strings in JSON")
        #expect(failure("{1: 1}") == "t.json:1:2: expected a string key or '}'")
        #expect(failure("{\"a\": }") == "t.json:1:7: unexpected character '}', expected a value")
        #expect(failure("{\"a\": 1") == "t.json:1:8: unexpected end of input: the object opened at line 1, column 1 is not closed")
    }

    @Test func arrayErrors() {
        #expect(failure("[1 2]") == "t.json:1:4: expected ',' or ']' after array element")
        #expect(failure("[1,]") == "t.json:1:3: a trailing comma is not allowed in JSON (only in JSON5)")
        #expect(failure("[,1]") == "t.json:1:2: unexpected character ',', expected a value")
        #expect(failure("\n\n  [1,\n") == "t.json:4:1: unexpected end of input: the array opened at line 3, column 3 is not closed")
    }

    @Test func documentErrors() {
        #expect(failure("") == "t.json:1:1: unexpected end of input, expected a value")
        #expect(failure("   \n ") == "t.json:2:2: unexpected end of input, expected a value")
        #expect(failure("{} x") == "t.json:1:4: unexpected character 'x' after the top-level value")
        #expect(failure("[1]]") == "t.json:1:4: unexpected character ']' after the top-level value")
        #expect(failure("tru") == "t.json:1:1: unexpected word 'tru', expected a value")
        #expect(failure("[True]") == "t.json:1:2: unexpected word 'True', expected a value")
        #expect(failure("NaN") == "t.json:1:1: NaN is not allowed in JSON (only in JSON5)")
        #expect(failure("-Infinity") == "t.json:1:1: Infinity is not allowed in JSON (only in JSON5)")
        #expect(failure("// hi\n1") == "t.json:1:1: comments are not allowed in JSON (only in JSON5)")
        #expect(failure("[1 /* x */]") == "t.json:1:4: comments are not allowed in JSON (only in JSON5)")
        #expect(failure("['x']") == "t.json:1:2: single-quoted strings are not allowed in JSON (only in JSON5)")
        #expect(failure("\u{1}") == "t.json:1:1: unexpected character U+0001, expected a value")
    }

    @Test func numberErrors() {
        #expect(failure("[01]") == "t.json:1:2: leading zeros are not allowed in numbers")
        #expect(failure("[-]") == "t.json:1:3: expected a digit after '-'")
        #expect(failure("[-x]") == "t.json:1:3: expected a digit after '-'")
        #expect(failure("[1.]") == "t.json:1:4: expected a digit after the decimal point")
        #expect(failure("[1.e5]") == "t.json:1:4: expected a digit after the decimal point")
        #expect(failure("[1e]") == "t.json:1:4: expected a digit in the exponent")
        #expect(failure("[1e+]") == "t.json:1:5: expected a digit in the exponent")
        #expect(failure("[+1]") == "t.json:1:2: a '+' sign is not allowed in JSON (only in JSON5)")
        #expect(failure("[.5]") == "t.json:1:2: a number cannot start with '.' in JSON (only in JSON5)")
        #expect(failure("[-.5]") == "t.json:1:3: expected a digit after '-'")
        #expect(failure("[0x1F]") == "t.json:1:3: expected ',' or ']' after array element")
    }

    @Test func stringErrors() {
        #expect(failure("[\"abc") == "t.json:1:2: unterminated string")
        #expect(failure("[\"ab\nc\"]") == "t.json:1:2: unterminated string: a line break comes before the closing quote")
        #expect(failure("[\"a\tb\"]") == "t.json:1:4: control character U+0009 in a string must be escaped")
        #expect(failure(#"["a\qb"]"#) == #"t.json:1:4: invalid escape '\q' in a string"#)
        #expect(failure(#"["a\'b"]"#) == #"t.json:1:4: invalid escape '\'' in a string"#)
        #expect(failure(#"["\u12G4"]"#) == #"t.json:1:3: invalid \u escape: expected 4 hexadecimal digits"#)
        #expect(failure(#"["\u12"]"#) == #"t.json:1:3: invalid \u escape: expected 4 hexadecimal digits"#)
        #expect(failure(#"["x\uD800"]"#) == #"t.json:1:4: lone surrogate \uD800 in a string"#)
        #expect(failure(#"["x\uD800\u0041"]"#) == #"t.json:1:4: lone surrogate \uD800 in a string"#)
        #expect(failure(#"["x\uDC00"]"#) == #"t.json:1:4: lone surrogate \uDC00 in a string"#)
        #expect(failure("[\"\\") == "t.json:1:2: unterminated string")
    }

    @Test func invalidUTF8IsAnError() {
        #expect(failure([0x5B, 0x22, 0x61, 0xFF, 0x22, 0x5D]) == "t.json:1:4: invalid UTF-8 byte 0xFF")
        // An overlong encoding of '/' and an encoded surrogate.
        #expect(failure([0x22, 0xC0, 0xAF, 0x22]) == "t.json:1:2: invalid UTF-8 byte 0xC0")
        #expect(failure([0x22, 0xED, 0xA0, 0x80, 0x22]) == "t.json:1:2: invalid UTF-8 byte 0xED")
        // Truncated sequence at the end of the text.
        #expect(failure([0x22, 0xE2, 0x82]) == "t.json:1:2: invalid UTF-8 byte 0xE2")
        // Outside strings.
        #expect(failure([0x5B, 0xFF, 0x5D]) == "t.json:1:2: unexpected byte 0xFF (invalid UTF-8), expected a value")
        #expect(failure([0x5B, 0x31, 0x5D, 0x0A, 0xC3], .json5) == "t.json:2:1: invalid UTF-8 byte 0xC3")
    }

    @Test func duplicateKeysAreErrorsInBothDialects() {
        let text = "{\n  \"name\": 1,\n  \"other\": 2,\n  \"name\": 3\n}"
        #expect(failure(text) == #"t.json:4:3: duplicate key "name" (first at line 2, column 3)"#)
        #expect(failure(text, .json5) == #"t.json:4:3: duplicate key "name" (first at line 2, column 3)"#)
        #expect(failure("{name: 1, 'name': 2}", .json5) == #"t.json:1:11: duplicate key "name" (first at line 1, column 2)"#)
        // Larger objects use a dictionary: still found, with the first occurrence's place.
        var big = "{"
        for i in 0..<40 { big += "\"k\(i)\": \(i), " }
        big += "\"k7\": 0}"
        #expect(failure(big) == #"t.json:1:422: duplicate key "k7" (first at line 1, column 65)"#)
    }

    @Test func nestingDepthIsLimited() throws {
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(failure(ok) == nil)
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(failure(deep) == "t.json:1:513: nesting is deeper than 512 levels")
        let deepObjects = String(repeating: "{\"a\":", count: 600)
        #expect(failure(deepObjects) == "t.json:1:2561: nesting is deeper than 512 levels")
    }

    @Test func columnsCountCharactersAndLinesAnyBreak() {
        #expect(failure("{\"é🌵\": 1 2}") == "t.json:1:10: expected ',' or '}' after object member")
        #expect(failure("[1,\r\n2,\r3 4]") == "t.json:3:3: expected ',' or ']' after array element")
    }

    // MARK: JSON5

    @Test func json5Extensions() throws {
        let text = """
            // a comment
            {
              unquoted: 'single "quoted"',
              $dollar_1: "double 'quoted'",
              hex: 0x1F, negHex: -0xff, lead: .5, trail: 5., plus: +3, exp: 2e3,
              inf: Infinity, negInf: -Infinity, nan: NaN, /* block
              comment */ trailing: [1, 2, ],
              escapes: '\\x41\\v\\0\\'\\q',
              continued: 'line one \\
            line two',
              "quoted key": null,
              ünïcödé: true,
              \\u0061b: 1,
            }
            """
        let value = try parse(text, .json5)
        let o = try #require(value.objectValue)
        #expect(o.keys == [
            "unquoted", "$dollar_1", "hex", "negHex", "lead", "trail", "plus", "exp", "inf", "negInf", "nan", "trailing",
            "escapes", "continued", "quoted key", "ünïcödé", "ab",
        ])
        #expect(o["unquoted"] == .string("single \"quoted\""))
        #expect(o["$dollar_1"] == .string("double 'quoted'"))
        #expect(o["hex"] == .number(31))
        #expect(o["negHex"] == .number(-255))
        #expect(o["lead"] == .number(0.5))
        #expect(o["trail"] == .number(5))
        #expect(o["plus"] == .number(3))
        #expect(o["exp"] == .number(2000))
        #expect(o["inf"] == .number(.infinity))
        #expect(o["negInf"] == .number(-.infinity))
        #expect(o["nan"]?.numberValue?.isNaN == true)
        #expect(o["trailing"] == .array([.number(1), .number(2)]))
        #expect(o["escapes"] == .string("A\u{B}\u{0}'q"))
        #expect(o["continued"] == .string("line one line two"))
        #expect(o["quoted key"] == .null)
        #expect(o["ünïcödé"] == .bool(true))
    }

    @Test func json5Errors() {
        #expect(failure("{a: 1 /* open", .json5) == "t.json:1:7: unterminated block comment")
        #expect(failure("{a: 1,, }", .json5) == "t.json:1:7: expected a key or '}'")
        #expect(failure("[1,,]", .json5) == "t.json:1:4: unexpected character ',', expected a value")
        #expect(failure("{1a: 1}", .json5) == "t.json:1:2: expected a key or '}'")
        #expect(failure("{a 1}", .json5) == "t.json:1:4: expected ':' after object key")
        #expect(failure("[0x]", .json5) == "t.json:1:4: expected a hexadecimal digit after '0x'")
        #expect(failure("[.]", .json5) == "t.json:1:3: expected a digit after the decimal point")
        #expect(failure("[+]", .json5) == "t.json:1:3: expected a digit after '+'")
        #expect(failure("['a\\1']", .json5) == "t.json:1:4: invalid escape '\\1' in a string")
        #expect(failure("['a\\01']", .json5) == "t.json:1:4: invalid escape '\\0' followed by a digit in a string")
        #expect(failure("['\\xZ1']", .json5) == "t.json:1:3: invalid \\x escape: expected 2 hexadecimal digits")
        #expect(failure("['abc\n']", .json5) == "t.json:1:2: unterminated string: a line break comes before the closing quote")
        #expect(failure("{a: 1, // c\n a: 2}", .json5) == #"t.json:2:2: duplicate key "a" (first at line 1, column 2)"#)
        #expect(failure("[Infinit]", .json5) == "t.json:1:2: unexpected word 'Infinit', expected a value")
    }

    // MARK: Locations of values

    @Test func locatesValuesAndKeysByPath() throws {
        let text = """
            {
              "triggers": [
                {"name": "a", "rule": "enter"},
                {
                  "rule": 5
                }
              ],
              "x": [[1, 2], [3, 4]]
            }
            """
        let doc = try JSONReader.parse(text, file: "c.json", dialect: .json5)
        #expect(doc.location(of: []) == SourceLocation(line: 1, column: 1))
        #expect(doc.location(of: [.key("triggers")]) == SourceLocation(line: 2, column: 3))
        #expect(doc.valueLocation(of: [.key("triggers")]) == SourceLocation(line: 2, column: 15))
        #expect(doc.location(of: [.key("triggers"), .index(0)]) == SourceLocation(line: 3, column: 5))
        #expect(doc.location(of: [.key("triggers"), .index(0), .key("rule")]) == SourceLocation(line: 3, column: 19))
        #expect(doc.location(of: [.key("triggers"), .index(1), .key("rule")]) == SourceLocation(line: 5, column: 7))
        #expect(doc.valueLocation(of: [.key("triggers"), .index(1), .key("rule")]) == SourceLocation(line: 5, column: 15))
        #expect(doc.location(of: [.key("x"), .index(1), .index(0)]) == SourceLocation(line: 8, column: 18))
        #expect(doc.location(of: [.key("x"), .index(2)]) == nil)
        #expect(doc.location(of: [.key("nope")]) == nil)
        #expect(doc.location(of: [.key("x"), .key("y")]) == nil)
    }

    @Test func rendersPaths() {
        #expect([JSONPathComponent]().pathString == "$")
        #expect([.key("triggers"), .index(0), .key("rule")].pathString == "triggers[0].rule")
        #expect([.key("properties"), .key("opening hours")].pathString == #"properties["opening hours"]"#)
        #expect([.index(3), .key("a")].pathString == "[3].a")
    }

    @Test func errorDescriptionIsFileLineColumnMessage() {
        let e = JSONSyntaxError(file: "f.json5", location: SourceLocation(line: 3, column: 7), message: "boom")
        #expect(e.description == "f.json5:3:7: boom")
    }
}
