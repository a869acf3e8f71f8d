import Testing
@testable import GeotriggerCore

/// The description of the error parsing `source` gives, nil if it parses.
func parseError(_ source: String) -> String? {
    do {
        _ = try ArcadeExpression(source)
        return nil
    } catch {
        return error.description
    }
}

@Suite struct ArcadeErrorTests {
    @Test func parseErrorsNameTheColumn() {
        #expect(parseError("IIf(true, 1, 2") == "column 15: expected ')', found the end of the expression")
        #expect(parseError("Round(3.14159 2)") == "column 15: expected ')', found a number")
        #expect(parseError("1 2") == "column 3: expected ';' or a line break, found a number")
        #expect(parseError("1 +") == "column 4: expected an expression, found the end of the expression")
        #expect(parseError("'abc") == "column 1: unterminated text literal")
        #expect(parseError("1 # 2") == "column 3: unexpected character '#'")
        #expect(parseError("true & false") == "column 6: unexpected '&' (logical operators are '&&' and '||')")
        #expect(parseError("[1, 2") == "column 6: expected ']', found the end of the expression")
        #expect(parseError("return {'a' 1}") == "column 13: expected ':', found a number")
        #expect(parseError("$fencefeature.") == "column 15: expected a name after '.', found the end of the expression")
        #expect(parseError("/* open") == "column 1: unterminated comment")
        #expect(parseError("`a ${1 + 2`") == "column 11: unterminated template literal")
        #expect(parseError("`a ${1 + 2") == "column 4: unterminated '${' in template literal")
        #expect(parseError("`${1 +}`") == "column 7: expected an expression, found the end of the expression")
        #expect(parseError("12abc") == "column 3: unexpected 'a' after number")
    }

    @Test func errorShape() throws {
        do {
            _ = try ArcadeExpression("Upper('abc' 'd')")
            Issue.record("parsed")
        } catch {
            #expect(error.message == "expected ')', found a text literal")
            #expect(error.line == nil)
            #expect(error.column == 13)
        }
    }

    @Test func multiLineErrorsNameTheLine() {
        #expect(parseError("var a = 1\nreturn a +* 2") == "line 2, column 11: expected an expression, found '*'")
        #expect(parseError("var a = 1\nif (a > 0) {\n  return 'x'\n") == "line 4, column 1: expected '}', found the end of the expression")
        #expect(parseError("'one line'\n") == nil)
        #expect(parseError("missing + 1\n") == "column 1: unknown variable 'missing'")  // a trailing newline is still one line
    }

    @Test func compileErrors() {
        #expect(parseError("x + 1") == "column 1: unknown variable 'x'")
        #expect(parseError("y = 1") == "column 1: unknown variable 'y' (declare it with 'var')")
        #expect(parseError("var z = z + 1") == "column 9: unknown variable 'z'")
        #expect(parseError("Foo(1)")?.hasPrefix("column 1: unknown function 'Foo' (supported: IIf, When, Decode,") == true)
        #expect(parseError("1 + IIf(true, 1)") == "column 5: IIf expects 3 arguments, found 2")
        #expect(parseError("Upper()") == "column 1: Upper expects 1 argument, found 0")
        #expect(parseError("Round(1, 2, 3)") == "column 1: Round expects 1 to 2 arguments, found 3")
        #expect(parseError("When(true, 1)") == "column 1: When expects at least 3 arguments, found 2")
        #expect(parseError("When(true, 1, false, 2)") == "column 1: When expects condition, value pairs and a default value (an odd number of arguments)")
        #expect(parseError("Decode(1, 2, 3)") == "column 1: Decode expects a value, match, result pairs and a default value (an even number of arguments)")
        #expect(parseError("$fencefeature = 1") == "column 1: '$fencefeature' is read-only")
        #expect(parseError("var if = 1") == "column 5: 'if' is a keyword, not a variable name")
        #expect(parseError("1 = 2") == "column 3: cannot assign to this expression")
        #expect(parseError("for (var i = 0; i < 3; i++) {}") == "column 1: 'for': loops are not supported in geotrigger expressions")
        #expect(parseError("while (true) {}") == "column 1: 'while': loops are not supported in geotrigger expressions")
        #expect(parseError("function f() { return 1 }") == "column 1: user functions are not supported in geotrigger expressions")
        #expect(parseError("$fencefeature.name(1)") == "column 19: only functions can be called")
        #expect(parseError("else { 1 }") == "column 1: 'else' without 'if'")
    }

    @Test func runtimeTypeErrors() {
        let f: [String: ArcadeValue] = ["fencefeature": desert]
        #expect(arcadeError("(5).name")?.description == "column 4: cannot read 'name' of a Number")
        #expect(arcadeError("$fencefeature.name.first", f)?.description == "column 19: cannot read 'first' of a Text")
        #expect(arcadeError("[1, 2].length")?.description == "column 7: cannot read 'length' of an Array")
        #expect(arcadeError("[1, 2][5]")?.description == "column 7: index 5 is out of range for an Array of 2 elements")
        #expect(arcadeError("[1, 2][-3]")?.description == "column 7: index -3 is out of range for an Array of 2 elements")
        #expect(arcadeError("[1, 2]['a']")?.description == "column 7: an index of an Array must be a whole number, found a Text")
        #expect(arcadeError("[1, 2][0.5]")?.description == "column 7: an index of an Array must be a whole number, found a Number")
        #expect(arcadeError("'ab'[2]")?.description == "column 5: index 2 is out of range for a Text of 2 characters")
        #expect(arcadeError("true[0]")?.description == "column 5: cannot index a Boolean")
        #expect(arcadeError("var n = 1; n.x = 2")?.description == "column 13: cannot set 'x' on a Number")
        #expect(arcadeError("var l = [1]; l[3] = 2")?.description == "column 15: index 3 is out of range for an Array of 1 elements")
        #expect(arcadeError("var a = 1\nvar b = a.x")?.description == "line 2, column 10: cannot read 'x' of a Number")
    }

    @Test func errorDescriptionForms() {
        #expect(ArcadeError("m").description == "m")
        #expect(ArcadeError("m", line: 2).description == "line 2: m")
        #expect(ArcadeError("m", column: 3).description == "column 3: m")
        #expect(ArcadeError("m", line: 2, column: 3).description == "line 2, column 3: m")
    }
}
