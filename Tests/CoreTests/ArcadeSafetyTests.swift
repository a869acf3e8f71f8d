import Testing
@testable import GeotriggerCore

/// Hostile expressions: each is refused at parse or stopped with an error, never hangs or
/// crashes.
@Suite struct ArcadeSafetyTests {
    @Test func deepParenthesesAreRefused() {
        let deep = String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000)
        #expect(parseError(deep) == "column 65: expression nested more than 64 levels deep")
        let fine = String(repeating: "(", count: 40) + "1" + String(repeating: ")", count: 40)
        #expect(parseError(fine) == nil)
    }

    @Test func deepUnaryArraysDictionariesAndBlocksAreRefused() {
        #expect(parseError(String(repeating: "!", count: 5000) + "true")?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "-", count: 5000) + "1")?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000))?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "{'a':", count: 5000) + "1" + String(repeating: "}", count: 5000))?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "if (true) {", count: 5000))?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "Upper(", count: 5000) + "'a'" + String(repeating: ")", count: 5000))?.contains("nested more than 64 levels") == true)
        #expect(parseError(String(repeating: "`${", count: 500) + "1" + String(repeating: "}`", count: 500))?.contains("nested more than 64 levels") == true)
    }

    @Test func longOperatorChainsAreBounded() throws {
        let ok = Array(repeating: "1", count: 200).joined(separator: " + ")
        #expect(try arcade(ok) == .number(200))
        let chain = Array(repeating: "1", count: 20_000).joined(separator: "+")
        #expect(parseError(chain)?.contains("expression too complex (more than 256 nested operations)") == true)
        let members = "$f" + String(repeating: ".a", count: 20_000)
        #expect(parseError(members)?.contains("too complex") == true)
    }

    @Test func longSourceIsRefused() {
        let long = "'" + String(repeating: "x", count: 70_000) + "'"
        #expect(parseError(long) == "expression longer than 65536 bytes")
    }

    @Test func doublingTextStops() {
        var script = "var s = 'abcdefghij'\n"
        for _ in 0..<40 { script += "s = s + s\n" }
        #expect(arcadeError(script)?.message == "text longer than 65536 bytes")
        #expect(arcadeError("var s = 'abcdefghij'\n" + String(repeating: "s += s\n", count: 40))?.message == "text longer than 65536 bytes")
        var upper = "var s = 'ß'\n"
        for _ in 0..<16 { upper += "s = Upper(s + s)\n" }
        #expect(arcadeError(upper)?.message == "text longer than 65536 bytes")
        var template = "var s = 'abcd'\n"
        for _ in 0..<40 { template += "s = `${s}${s}`\n" }
        #expect(arcadeError(template)?.message == "text longer than 65536 bytes")
    }

    @Test func sharedContainersCannotExplode() throws {
        // Each line doubles the logical size by sharing; building, comparing or writing it
        // out would take exponential time without the step budget.
        var arrays = "var a = [1, 2, 3, 4, 5, 6, 7, 8]\n"
        for _ in 0..<40 { arrays += "a = [a, a, a, a, a, a, a, a]\n" }
        #expect(arcadeError(arrays + "Text(a)")?.message == "evaluation stopped after 10000 steps")
        var dictionaries = "var d = {'k': 1}\n"
        for _ in 0..<60 { dictionaries += "d = {'x': d, 'y': d}\n" }
        #expect(arcadeError(dictionaries + "d == d")?.message == "evaluation stopped after 10000 steps")
        var assigned = "var d = {'k': [1, 2, 3, 4]}\n"
        for _ in 0..<60 { assigned += "d.k = [d, d]\n" }
        #expect(arcadeError(assigned)?.message == "evaluation stopped after 10000 steps")
        // Below the budget the same shapes work.
        #expect(try arcade("var a = [1, 2]; a = [a, a]; a = [a, a]; Text(a)") == .string("[[[1,2],[1,2]],[[1,2],[1,2]]]"))
    }

    @Test func stepLimitStopsLongScripts() {
        let script = "var x = 0\n" + String(repeating: "x=x+1;", count: 6000) + "x"
        #expect(arcadeError(script)?.message == "evaluation stopped after 10000 steps")
        let fits = "var x = 0\n" + String(repeating: "x=x+1;", count: 4000) + "x"
        #expect((try? arcade(fits)) == .number(4000))
    }

    @Test func concatenateAndTextOfLargeValuesAreBounded() {
        var script = "var a = ['" + String(repeating: "x", count: 1000) + "']\n"
        for _ in 0..<8 { script += "a = [a, a]\n" }
        #expect(arcadeError(script + "Concatenate([Text(a), Text(a)], '-')")?.message == "text longer than 65536 bytes")
        #expect(arcadeError(script + "Text(Text(a), '000')") != nil)
        let wide = "var s = '" + String(repeating: "y", count: 30_000) + "'\nConcatenate([s, s, s], ',')"
        #expect(arcadeError(wide)?.message == "text longer than 65536 bytes")
        let format = "Text($d, '" + String(repeating: "MMMM ", count: 9_000) + "')"
        #expect(arcadeError(format, ["d": .date(0)])?.message == "text longer than 65536 bytes")
    }

    @Test func extremeFormatsAndDatesDoNotTrap() throws {
        #expect(try arcade("Text(0, '0.' + Concatenate([0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]))") == .string("0.000000000000000"))
        #expect(try arcade("Text(1e300, '#,###.00')") == .string("1e+300"))
        #expect(try arcade("Text(-1e20, '0')") == .string("-1e+20"))
        #expect(try arcade("Text($d)", ["d": .date(1e300)]) == .string("Invalid Date"))
        #expect(try arcade("Text($d, 'YYYY X x')", ["d": .date(-.infinity)]) == .string("Invalid Date"))
        #expect(ArcadeValue.date(.nan).json == .string("Invalid Date"))
        #expect(try arcade("Round(1e308, 5)") == .number(1e308))
        #expect(arcadeError("[1, 2][1e300]")?.message == "an index of an Array must be a whole number, found a Number")
    }

    @Test func largeDictionariesAreBounded() {
        let keys = Array(repeating: "a:1", count: 10_500).joined(separator: ",")  // duplicates still cost a step each
        #expect(arcadeError("{" + keys + "}")?.message == "evaluation stopped after 10000 steps")
        var writes = "var d = {}\n"
        for i in 0..<5000 { writes += "d.k\(i) = 1\n" }
        #expect(arcadeError(writes)?.message == "evaluation stopped after 10000 steps")
    }

    /// Random token soup: every input parses to an error or evaluates, without crashing.
    @Test func randomInputsNeverCrash() {
        let pieces = [
            "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "+", "-", "*", "/", "%", "!", "==", "!=", "<",
            "<=", ">", ">=", "&&", "||", "=", "+=", "1", "0", "2.5", "'a'", "\"b\"", "`t${", "}`", "true", "null",
            "var", "x", "if", "else", "return", "$fencefeature", "$locationupdate", "name", "IIf", "When",
            "Decode", "Concatenate", "Upper", "Text", "Round", "Count", "DefaultValue", "IsEmpty", "\n", " ",
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        let context = ArcadeContext(["fencefeature": desert])
        var evaluated = 0
        var refused = 0
        for _ in 0..<3000 {
            var source = ""
            for _ in 0..<(1 + next() % 24) { source += pieces[next() % pieces.count] + " " }
            if let expression = try? ArcadeExpression(source) {
                _ = try? expression.evaluate(context)
                evaluated += 1
            } else {
                refused += 1
            }
        }
        #expect(evaluated > 0)
        #expect(refused > 0)
    }
}
