import Testing
@testable import GeotriggerCore

/// Evaluates `source` with the given profile variables.
func arcade(_ source: String, _ variables: [String: ArcadeValue] = [:]) throws -> ArcadeValue {
    try ArcadeExpression(source).evaluate(ArcadeContext(variables))
}

/// The error `source` gives, at parse or at evaluation; nil if it evaluates.
func arcadeError(_ source: String, _ variables: [String: ArcadeValue] = [:]) -> ArcadeError? {
    do {
        _ = try ArcadeExpression(source).evaluate(ArcadeContext(variables))
        return nil
    } catch {
        return error
    }
}

let desert: ArcadeValue = .dictionary(["name": .string("Desert Section"), "ID": .number(7), "zone": .null])

@Suite struct ArcadeExpressionTests {
    @Test func docsMessageExample() throws {
        #expect(
            try arcade("'You have entered ' + $fencefeature.name", ["fencefeature": desert])
                == .string("You have entered Desert Section"))
    }

    @Test func docsFilterExample() throws {
        let context = ArcadeContext(locationUpdate: LocationUpdate(device: "d", lat: 1, lon: 2, time: 0, accuracy: 12))
        #expect(try ArcadeExpression("return $locationupdate.horizontalaccuracy <= 20").evaluate(context) == .bool(true))
        #expect(try ArcadeExpression("$locationupdate.horizontalaccuracy < 10").evaluate(context) == .bool(false))
    }

    @Test func literals() throws {
        #expect(try arcade("42") == .number(42))
        #expect(try arcade("3.25") == .number(3.25))
        #expect(try arcade(".5") == .number(0.5))
        #expect(try arcade("1e3") == .number(1000))
        #expect(try arcade("2.5E-1") == .number(0.25))
        #expect(try arcade("'single'") == .string("single"))
        #expect(try arcade("\"double\"") == .string("double"))
        #expect(try arcade(#"'it\'s \"q\" \\ \n\t\u0041\u{1F600}'"#) == .string("it's \"q\" \\ \n\tA😀"))
        #expect(try arcade("true") == .bool(true))
        #expect(try arcade("FALSE") == .bool(false))
        #expect(try arcade("Null") == .null)
        #expect(try arcade("") == .null)
        #expect(try arcade("[1, 'a', [true]]") == .array([.number(1), .string("a"), .array([.bool(true)])]))
        #expect(try arcade("[]") == .array([]))
        #expect(try arcade("{'a': 1, \"b\": [2], c: null}") == .dictionary(["a": .number(1), "b": .array([.number(2)]), "c": .null]))
    }

    @Test func templateLiterals() throws {
        #expect(try arcade("`Entered ${$fencefeature.name} (#${$fencefeature.id + 1})`", ["fencefeature": desert]) == .string("Entered Desert Section (#8)"))
        #expect(try arcade("`a${ {'k': 'v'}['k'] }b`") == .string("avb"))
        #expect(try arcade("`plain`") == .string("plain"))
    }

    @Test func commentsAndSeparators() throws {
        #expect(try arcade("// a comment\n1 + /* inline */ 2 // trailing") == .number(3))
        #expect(try arcade("var a = 1; var b = 2; a + b") == .number(3))
        #expect(try arcade("var a = 1\nvar b = 2\na + b") == .number(3))
    }

    @Test func profileVariables() throws {
        let variables: [String: ArcadeValue] = [
            "fencefeature": desert, "fencenotificationtype": .string("entered"),
            "feedfeature": .dictionary(["device": .string("workers/alice")]),
        ]
        #expect(try arcade("$fencefeature.NAME", variables) == .string("Desert Section"))
        #expect(try arcade("$FenceFeature.id", variables) == .number(7))
        #expect(try arcade("$fencefeature[\"Name\"]", variables) == .string("Desert Section"))
        #expect(try arcade("$fencenotificationtype", variables) == .string("entered"))
        #expect(try arcade("$feedfeature.device", variables) == .string("workers/alice"))
        #expect(try ArcadeExpression("$fencefeature.name + $FEEDFEATURE.x + $fencefeature.id").variables == ["fencefeature", "feedfeature"])
    }

    @Test func missingAttributesAreNull() throws {
        #expect(try arcade("$fencefeature.nothere", ["fencefeature": desert]) == .null)
        #expect(try arcade("$fencefeature['nothere']", ["fencefeature": desert]) == .null)
        #expect(try arcade("$fencefeature.zone", ["fencefeature": desert]) == .null)
        #expect(try arcade("$fencefeature.name") == .null)  // no such profile variable given
        #expect(try arcade("$feedfeature.a.b.c") == .null)
        #expect(try arcade("'At ' + $fencefeature.nothere", ["fencefeature": desert]) == .string("At "))
        #expect(try arcade("$fencenotificationtype") == .null)
    }

    @Test func locationUpdateFields() throws {
        let update = LocationUpdate(
            device: "v17", lat: 34.45, lon: -119.71, time: 1_795_000_000, accuracy: 5, speed: 1.4, heading: 90,
            altitude: 12)
        let context = ArcadeContext(locationUpdate: update)
        func value(_ source: String) throws -> ArcadeValue { try ArcadeExpression(source).evaluate(context) }
        #expect(try value("$locationupdate.x") == .number(-119.71))
        #expect(try value("$locationupdate.y") == .number(34.45))
        #expect(try value("$locationupdate.horizontalAccuracy") == .number(5))
        #expect(try value("$locationupdate.speed") == .number(1.4))
        #expect(try value("$locationupdate.course") == .number(90))
        #expect(try value("$locationupdate.altitude") == .number(12))
        #expect(try value("$locationupdate.timestamp") == .date(1_795_000_000))
        #expect(try value("$locationupdate.verticalaccuracy") == .null)
        let bare = ArcadeContext(locationUpdate: LocationUpdate(device: "v", lat: 0, lon: 0, time: 0))
        #expect(try ArcadeExpression("$locationupdate.speed").evaluate(bare) == .null)
        #expect(try ArcadeExpression("$locationupdate.horizontalaccuracy < 50").evaluate(bare) == .bool(false))
    }

    @Test func messageProfileContext() throws {
        let fence = Fence(
            id: "desert", layer: "garden-sections", name: "Desert Section",
            properties: ["name": .string("Desert Section")], geometry: .points([Coordinate(lat: 0, lon: 0)]))
        let update = LocationUpdate(device: "workers/alice", lat: 1, lon: 2, time: 60, accuracy: 5)
        let context = ArcadeContext(fenceFeature: .fenceFeature(fence), update: update, notificationType: "exited")
        let expression = try ArcadeExpression(
            "Upper($fencenotificationtype) + ' ' + $fencefeature.id + '/' + $fencefeature.layer + ' by ' + $feedfeature.device + ' at ' + $feedfeature.timestamp")
        #expect(try expression.evaluate(context) == .string("EXITED desert/garden-sections by workers/alice at 1970-01-01T00:01:00Z"))
        let whereContext = ArcadeContext(fenceFeature: .fenceFeature(fence))
        #expect(try ArcadeExpression("$fencefeature.name == 'Desert Section'").evaluateCondition(whereContext))
    }

    @Test func variablesAndAssignment() throws {
        #expect(try arcade("var x = 2; x = x * 5; return x") == .number(10))
        #expect(try arcade("var X = 1; x += 2; x -= 1; x *= 6; x /= 4; X") == .number(3))
        #expect(try arcade("var s = 'a'; s += 'b'; s") == .string("ab"))
        #expect(try arcade("var a, b = 2; a") == .null)
        #expect(try arcade("var d = {'a': 1}; d.b = 2; d['C'] = 3; d.A = 10; d") == .dictionary(["a": .number(10), "b": .number(2), "C": .number(3)]))
        #expect(try arcade("var d = {'inner': {'n': 1}}; d.inner.n += 1; d.inner.n") == .number(2))
        #expect(try arcade("var l = [1, 2]; l[0] = 'x'; l[2] = 3; l[-1] = 4; l") == .array([.string("x"), .number(2), .number(4)]))
        #expect(try arcade("var x = 1; x = 5") == .number(5))  // an assignment's value is its statement's value
    }

    @Test func ifElseAndReturn() throws {
        let script = """
            var kind = $fencenotificationtype
            if (kind == 'entered') {
                return 'In'
            } else if (kind == 'exited') {
                return 'Out'
            } else {
                return 'Still'
            }
            """
        #expect(try arcade(script, ["fencenotificationtype": .string("entered")]) == .string("In"))
        #expect(try arcade(script, ["fencenotificationtype": .string("exited")]) == .string("Out"))
        #expect(try arcade(script, ["fencenotificationtype": .string("dwelled")]) == .string("Still"))
        #expect(try arcade("if (1 > 2) return 'a'; 'b'") == .string("b"))
        #expect(try arcade("if (true) { var inside = 3 } inside") == .number(3))
        #expect(try arcade("IF (TRUE) { RETURN 1 } ELSE { RETURN 2 }") == .number(1))
        #expect(try arcade("return") == .null)
        #expect(try arcade("return; 5") == .null)
        #expect(try arcade("if (true) { return }") == .null)
        #expect(try arcade("return\n  {'message': 'next line'}") == .dictionary(["message": .string("next line")]))
        #expect(try arcade("1; 2; var x = 3") == .number(2))  // the last expression statement run
        #expect(try arcade("if (false) { 'a' } else { 'b' }") == .string("b"))
    }

    @Test func memberAndIndexAccess() throws {
        #expect(try arcade("[10, 20, 30][1]") == .number(20))
        #expect(try arcade("[10, 20, 30][-1]") == .number(30))
        #expect(try arcade("{'a': {'b': [5]}}.a.b[0]") == .number(5))
        #expect(try arcade("{'Key': 1}['KEY']") == .number(1))
        #expect(try arcade("{'1': 'one'}[1]") == .string("one"))
        #expect(try arcade("'héllo'[1]") == .string("é"))
        #expect(try arcade("null.anything") == .null)
        #expect(try arcade("null[3]") == .null)
    }

    @Test func compilesOnceEvaluatesMany() throws {
        let expression = try ArcadeExpression("IIf($locationupdate.speed > 5, 'fast', 'slow')")
        for speed in [1.0, 10.0, 3.0] {
            let context = ArcadeContext(locationUpdate: LocationUpdate(device: "d", lat: 0, lon: 0, time: 0, speed: speed))
            #expect(try expression.evaluate(context) == .string(speed > 5 ? "fast" : "slow"))
        }
        #expect(expression.source == "IIf($locationupdate.speed > 5, 'fast', 'slow')")
    }
}
