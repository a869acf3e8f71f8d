import Testing
@testable import GeotriggerCore

/// Evaluates `source` with the given profile variables.
func arcade(_ source: String, _ variables: [String: ArcadeValue] = [:]) throws -> ArcadeValue {
    try ArcadeExpression(source).evaluate(ArcadeContext(variables))
}

/// The error `source` gives, at parse or at evaluation.
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
        #expect(try arcade("'You have entered ' + $fencefeature.name", ["fencefeature": desert]) == .string("You have entered Desert Section"))
    }

    @Test func docsFilterExample() throws {
        let context = ArcadeContext(locationUpdate: LocationUpdate(device: "d", lat: 1, lon: 2, time: 0, accuracy: 12))
        #expect(try ArcadeExpression("return $locationupdate.horizontalaccuracy <= 20").evaluate(context) == .bool(true))
        #expect(try ArcadeExpression("$locationupdate.horizontalaccuracy < 10").evaluate(context) == .bool(false))
    }
}
