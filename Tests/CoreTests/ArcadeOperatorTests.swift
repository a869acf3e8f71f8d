import Testing
@testable import GeotriggerCore

@Suite struct ArcadeOperatorTests {
    @Test func addition() throws {
        #expect(try arcade("1 + 2") == .number(3))
        #expect(try arcade("'a' + 'b'") == .string("ab"))
        #expect(try arcade("'n' + 1") == .string("n1"))
        #expect(try arcade("1 + '1'") == .string("11"))
        #expect(try arcade("'x' + 2.5 + true") == .string("x2.5true"))
        #expect(try arcade("1 + 2 + 'c'") == .string("3c"))  // left to right
        #expect(try arcade("'a' + null") == .string("a"))
        #expect(try arcade("null + 1") == .number(1))
        #expect(try arcade("true + true") == .number(2))
        #expect(try arcade("'at ' + $d", ["d": .date(0)]) == .string("at 1970-01-01T00:00:00Z"))
        #expect(try arcade("'l' + [1, 'a']") == .string(#"l[1,"a"]"#))
        #expect(try arcade("0.1 + 0.2 + ''") == .string("0.30000000000000004"))
    }

    @Test func subtractionMultiplicationDivisionModulo() throws {
        #expect(try arcade("5 - 7") == .number(-2))
        #expect(try arcade("'10' - 4") == .number(6))
        #expect(try arcade("3 * 4") == .number(12))
        #expect(try arcade("'3' * '4'") == .number(12))
        #expect(try arcade("7 / 2") == .number(3.5))
        #expect(try arcade("1 / 0") == .number(.infinity))
        #expect(try arcade("10 % 3") == .number(1))
        #expect(try arcade("-7 % 3") == .number(-1))
        #expect(try arcade("5.5 % 2") == .number(1.5))
        #expect(try arcade("$b - $a", ["a": .date(10), "b": .date(12.5)]) == .number(2500))  // milliseconds
        guard case .number(let nan) = try arcade("'abc' * 2") else { Issue.record("not a number"); return }
        #expect(nan.isNaN)
    }

    @Test func precedenceAndGrouping() throws {
        #expect(try arcade("1 + 2 * 3") == .number(7))
        #expect(try arcade("(1 + 2) * 3") == .number(9))
        #expect(try arcade("10 - 4 - 3") == .number(3))
        #expect(try arcade("2 * 3 % 4") == .number(2))
        #expect(try arcade("1 + 1 == 2 && 3 > 2") == .bool(true))
        #expect(try arcade("false || true && false") == .bool(false))
        #expect(try arcade("-2 * -3") == .number(6))
    }

    @Test func unaryOperators() throws {
        #expect(try arcade("-5") == .number(-5))
        #expect(try arcade("-'5'") == .number(-5))
        #expect(try arcade("+'7'") == .number(7))
        #expect(try arcade("--3") == .number(3))
        #expect(try arcade("!true") == .bool(false))
        #expect(try arcade("!0") == .bool(true))
        #expect(try arcade("!''") == .bool(true))
        #expect(try arcade("!'x'") == .bool(false))
        #expect(try arcade("!null") == .bool(true))
        #expect(try arcade("!!{}") == .bool(true))
    }

    @Test func equality() throws {
        #expect(try arcade("1 == 1") == .bool(true))
        #expect(try arcade("1 == '1'") == .bool(false))
        #expect(try arcade("'a' == 'A'") == .bool(false))
        #expect(try arcade("'a' != 'A'") == .bool(true))
        #expect(try arcade("null == null") == .bool(true))
        #expect(try arcade("null == 0") == .bool(false))
        #expect(try arcade("null != ''") == .bool(true))
        #expect(try arcade("true == 1") == .bool(false))
        #expect(try arcade("[1, [2]] == [1, [2]]") == .bool(true))
        #expect(try arcade("[1, 2] == [2, 1]") == .bool(false))
        #expect(try arcade("{'a': 1, 'b': 2} == {'B': 2, 'a': 1}") == .bool(true))
        #expect(try arcade("$a == $b", ["a": .date(5), "b": .date(5)]) == .bool(true))
        #expect(try arcade("(0 / 0) == (0 / 0)") == .bool(false))
    }

    @Test func ordering() throws {
        #expect(try arcade("1 < 2") == .bool(true))
        #expect(try arcade("2 <= 2") == .bool(true))
        #expect(try arcade("3 > 2") == .bool(true))
        #expect(try arcade("2 >= 3") == .bool(false))
        #expect(try arcade("'apple' < 'banana'") == .bool(true))
        #expect(try arcade("'10' < '9'") == .bool(true))  // text compares as text
        #expect(try arcade("'10' < 9") == .bool(false))  // mixed: cast to numbers
        #expect(try arcade("true > 0") == .bool(true))
        #expect(try arcade("$a < $b", ["a": .date(5), "b": .date(6)]) == .bool(true))
        #expect(try arcade("null < 1") == .bool(false))
        #expect(try arcade("null >= 0") == .bool(false))
        #expect(try arcade("'abc' < 1") == .bool(false))  // NaN
        #expect(try arcade("$v > 5", ["v": .string("7")]) == .bool(true))  // literal fast path, cast
        #expect(try arcade("$v > 5", ["v": .null]) == .bool(false))
    }

    @Test func logicalOperatorsShortCircuit() throws {
        #expect(try arcade("true && true") == .bool(true))
        #expect(try arcade("true && false") == .bool(false))
        #expect(try arcade("false || true") == .bool(true))
        #expect(try arcade("false || false") == .bool(false))
        #expect(try arcade("1 && 'x'") == .bool(true))  // truthiness, boolean result
        #expect(try arcade("0 || ''") == .bool(false))
        // The right side would fail; short-circuit never evaluates it.
        #expect(try arcade("false && Count(5) > 0") == .bool(false))
        #expect(try arcade("true || Count(5) > 0") == .bool(true))
        #expect(arcadeError("true && Count(5) > 0") != nil)
    }
}
