import Testing
@testable import GeotriggerCore

@Suite struct ArcadeFunctionTests {
    @Test func iif() throws {
        #expect(try arcade("IIf(true, 'a', 'b')") == .string("a"))
        #expect(try arcade("iif(0, 'a', 'b')") == .string("b"))
        #expect(try arcade("IIF($fencefeature.name == 'Desert Section', 'dry', 'wet')", ["fencefeature": desert]) == .string("dry"))
        #expect(try arcade("IIf(true, 1, Count(5))") == .number(1))  // the other branch is not evaluated
    }

    @Test func when() throws {
        #expect(try arcade("When(1 > 2, 'a', 2 > 1, 'b', 'c')") == .string("b"))
        #expect(try arcade("When(false, 'a', false, 'b', 'c')") == .string("c"))
        #expect(try arcade("when(false, 1, 2)") == .number(2))
        let speed = "When($s < 1, 'standing', $s < 3, 'walking', 'driving')"
        #expect(try arcade(speed, ["s": .number(0.2)]) == .string("standing"))
        #expect(try arcade(speed, ["s": .number(1.4)]) == .string("walking"))
        #expect(try arcade(speed, ["s": .number(14)]) == .string("driving"))
    }

    @Test func decode() throws {
        let source = "Decode($fencenotificationtype, 'entered', 'In', 'exited', 'Out', 'Other')"
        #expect(try arcade(source, ["fencenotificationtype": .string("entered")]) == .string("In"))
        #expect(try arcade(source, ["fencenotificationtype": .string("exited")]) == .string("Out"))
        #expect(try arcade(source, ["fencenotificationtype": .string("dwelled")]) == .string("Other"))
        #expect(try arcade("Decode(1, '1', 'text', 1, 'number', 'none')") == .string("number"))  // no casting
        #expect(try arcade("DECODE(5, 'default only')") == .string("default only"))
    }

    @Test func concatenate() throws {
        #expect(try arcade("Concatenate(['a', 'b', 'c'], '/')") == .string("a/b/c"))
        #expect(try arcade("Concatenate(['a', 1, null])") == .string("a1"))
        #expect(try arcade("Concatenate([1.5, 2], ', ', '0.00')") == .string("1.50, 2.00"))
        #expect(try arcade("Concatenate([])") == .string(""))
        #expect(try arcade("Concatenate()") == .string(""))
        #expect(try arcade("Concatenate($fencefeature.name, ', ', 'CA')", ["fencefeature": desert]) == .string("Desert Section, CA"))
        #expect(try arcade("concatenate('a', 1, true)") == .string("a1true"))
        #expect(try arcade("Concatenate($fencefeature.name)", ["fencefeature": desert]) == .string("Desert Section"))
    }

    @Test func upperAndLower() throws {
        #expect(try arcade("Upper('Desert')") == .string("DESERT"))
        #expect(try arcade("upper(5)") == .string("5"))
        #expect(try arcade("Upper(null)") == .string(""))
        #expect(try arcade("Lower('ÄBc')") == .string("äbc"))
        #expect(try arcade("LOWER($fencefeature.name)", ["fencefeature": desert]) == .string("desert section"))
    }

    @Test func round() throws {
        #expect(try arcade("Round(2.5)") == .number(3))
        #expect(try arcade("Round(-2.5)") == .number(-3))
        #expect(try arcade("Round(2.4)") == .number(2))
        #expect(try arcade("Round(3.14159, 2)") == .number(3.14))
        #expect(try arcade("Round(1234, -2)") == .number(1200))
        #expect(try arcade("round('2.6')") == .number(3))
        #expect(try arcade("Round(null)") == .number(0))
    }

    @Test func textOfValues() throws {
        #expect(try arcade("Text(1000000)") == .string("1000000"))
        #expect(try arcade("Text(2.50)") == .string("2.5"))
        #expect(try arcade("Text(-0)") == .string("0"))
        #expect(try arcade("Text(1/0)") == .string("Infinity"))
        #expect(try arcade("Text(true)") == .string("true"))
        #expect(try arcade("Text(null)") == .string(""))
        #expect(try arcade("Text('abc', '000')") == .string("abc"))
        #expect(try arcade("Text([1, 'a', null])") == .string(#"[1,"a",null]"#))
        #expect(try arcade("Text({'a': 1, 'b': [true]})") == .string(#"{"a":1,"b":[true]}"#))
    }

    @Test func textNumberPatterns() throws {
        #expect(try arcade("Text(1234.5, '#,###.00')") == .string("1,234.50"))
        #expect(try arcade("Text(7, '000')") == .string("007"))
        #expect(try arcade("Text(0.5, '#.##')") == .string("0.5"))
        #expect(try arcade("Text(3.14159, '#.##')") == .string("3.14"))
        #expect(try arcade("Text(3, '#.##')") == .string("3"))
        #expect(try arcade("Text(3, '0.00')") == .string("3.00"))
        #expect(try arcade("Text(-1234567.891, '#,##0.0')") == .string("-1,234,567.9"))
        #expect(try arcade("Text(999.96, '#,###.#')") == .string("1,000"))
        #expect(try arcade("Text(0.256, '#%')") == .string("26%"))
        #expect(try arcade("Text(12.3456, 'Speed: 0.0 m/s')") == .string("Speed: 12.3 m/s"))
        #expect(try arcade("Text(-0.001, '0.00')") == .string("0.00"))
        #expect(try arcade("Text(2.5, '#')") == .string("3"))
    }

    @Test func textDatePatterns() throws {
        let noon: [String: ArcadeValue] = ["d": .date(1_796_040_000)]  // 2026-11-30T12:00:00Z, a Monday
        #expect(try arcade("Text($d)", noon) == .string("2026-11-30T12:00:00Z"))
        #expect(try arcade("Text($d, 'YYYY-MM-DD HH:mm:ss')", noon) == .string("2026-11-30 12:00:00"))
        #expect(try arcade("Text($d, 'dddd, MMMM D, Y h:mm A')", noon) == .string("Monday, November 30, 2026 12:00 PM"))
        #expect(try arcade("Text($d, 'ddd MMM DD YY')", noon) == .string("Mon Nov 30 26"))
        #expect(try arcade("Text($d, '[Day] DDD, [weekday] d')", noon) == .string("Day 334, weekday 1"))
        #expect(try arcade("Text($d, 'X x Z ZZ')", noon) == .string("1796040000 1796040000000 +0 +00:00"))
        let leap: [String: ArcadeValue] = ["d": .date(1_709_190_309.045)]  // 2024-02-29T07:05:09.045Z
        #expect(try arcade("Text($d, 'M/D/YYYY h:m:s.SSS a')", leap) == .string("2/29/2024 7:5:9.045 am"))
        #expect(try arcade("Text($d, 'DDDD dddd')", leap) == .string("060 Thursday"))
        #expect(try arcade("Text($d)", leap) == .string("2024-02-29T07:05:09.045Z"))
        #expect(try arcade("Text($d, 'YYYY-MM-DD HH:mm:ss dddd')", ["d": .date(-1)]) == .string("1969-12-31 23:59:59 Wednesday"))
        #expect(try arcade("Text($d, 'd ddd ZZZ')", ["d": .date(1_796_558_400)]) == .string("7 Sun +0000"))  // a Sunday is 7
    }

    @Test func defaultValue() throws {
        let f: [String: ArcadeValue] = ["fencefeature": desert]
        #expect(try arcade("DefaultValue($fencefeature.zone, 'none')", f) == .string("none"))
        #expect(try arcade("DefaultValue($fencefeature.nothere, 'none')", f) == .string("none"))
        #expect(try arcade("DefaultValue('', 'e')") == .string("e"))
        #expect(try arcade("DefaultValue(0, 5)") == .number(0))
        #expect(try arcade("DefaultValue($fencefeature, 'NAME', 'x')", f) == .string("Desert Section"))
        #expect(try arcade("DefaultValue($fencefeature, 'nothere', 'x')", f) == .string("x"))
        #expect(try arcade("DefaultValue($fencefeature, 'zone', 'x')", f) == .string("x"))
        #expect(try arcade("DefaultValue({'a': {'b': [1, 2]}}, ['a', 'b', 1], 0)") == .number(2))
        #expect(try arcade("DefaultValue({'a': {'b': [1, 2]}}, ['a', 'c', 1], 0)") == .number(0))
        #expect(try arcade("defaultvalue([1], 5, 'out')") == .string("out"))
        #expect(try arcade("DefaultValue(null, 'k', 'no container')") == .string("no container"))
    }

    @Test func isEmpty() throws {
        #expect(try arcade("IsEmpty(null)") == .bool(true))
        #expect(try arcade("IsEmpty('')") == .bool(true))
        #expect(try arcade("IsEmpty(' ')") == .bool(false))
        #expect(try arcade("IsEmpty(0)") == .bool(false))
        #expect(try arcade("ISEMPTY([])") == .bool(false))
        #expect(try arcade("IsEmpty($fencefeature.nothere)", ["fencefeature": desert]) == .bool(true))
    }

    @Test func count() throws {
        #expect(try arcade("Count([1, 2, 3])") == .number(3))
        #expect(try arcade("Count('héllo')") == .number(5))
        #expect(try arcade("Count([])") == .number(0))
        #expect(try arcade("count(null)") == .number(0))
        #expect(try arcade("Count({'a': 1, b: 2})") == .number(2))
        #expect(try arcade("Count($fencefeature)", ["fencefeature": desert]) == .number(3))
        #expect(arcadeError("Count(5)")?.description == "column 1: Count expects an Array, Text or Dictionary, found a Number")
        #expect(arcadeError("Count(true)")?.description == "column 1: Count expects an Array, Text or Dictionary, found a Boolean")
    }
}
