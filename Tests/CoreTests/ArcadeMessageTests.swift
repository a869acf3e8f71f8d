import Testing
@testable import GeotriggerCore

@Suite struct ArcadeMessageTests {
    let context = ArcadeContext(
        fenceFeature: .dictionary(["name": .string("Desert Section"), "kind": .string("garden")]),
        update: LocationUpdate(device: "workers/alice", lat: 34.45, lon: -119.71, time: 1_796_040_000, accuracy: 5),
        notificationType: "entered")

    @Test func textResultIsTheMessage() throws {
        let expression = try ArcadeExpression("'You have entered ' + $fencefeature.name")
        #expect(try ArcadeMessage(expression, context) == ArcadeMessage(message: "You have entered Desert Section"))
    }

    @Test func dictionaryFormWithActions() throws {
        let expression = try ArcadeExpression(
            """
            var verb = IIf($fencenotificationtype == 'entered', 'Entered', 'Left')
            return {
                "message": verb + ' ' + $fencefeature.name,
                "actions": ["notify", "log"],
                "priority": 2,
                "kind": $fencefeature.kind,
                "at": $feedfeature.timestamp,
            }
            """)
        let message = try ArcadeMessage(expression, context)
        #expect(message.message == "Entered Desert Section")
        #expect(message.actions == [.string("notify"), .string("log")])
        #expect(message.properties == ["priority": .number(2), "kind": .string("garden"), "at": .string("2026-11-30T12:00:00Z")])
        #expect(JSONValue.object(message.properties).serialized() == #"{"priority":2,"kind":"garden","at":"2026-11-30T12:00:00Z"}"#)
    }

    @Test func dictionaryWithoutReturnAndOtherShapes() throws {
        #expect(ArcadeMessage(try arcade("{'Message': 'hi', 'ACTIONS': 'one'}")) == ArcadeMessage(message: "hi", actions: [.string("one")]))
        #expect(ArcadeMessage(try arcade("{'message': 5, 'actions': null}")) == ArcadeMessage(message: "5"))
        #expect(ArcadeMessage(try arcade("{'message': null, 'x': [1, {'y': true}]}"))
            == ArcadeMessage(properties: ["x": .array([.number(1), .object(["y": .bool(true)])])]))
        #expect(ArcadeMessage(try arcade("{'actions': [{'type': 'call', 'n': 1}]}")).actions == [.object(["type": .string("call"), "n": .number(1)])])
        #expect(ArcadeMessage(.null) == ArcadeMessage())
        #expect(ArcadeMessage(.number(2.5)) == ArcadeMessage(message: "2.5"))
        #expect(ArcadeMessage(.bool(true)) == ArcadeMessage(message: "true"))
        #expect(ArcadeMessage(.array([.number(1)])) == ArcadeMessage(message: "[1]"))
    }
}

@Suite struct ArcadeValueTests {
    @Test func jsonConversions() {
        let json: JSONValue = .object(["b": .number(1), "a": .array([.null, .bool(true), .string("s")])])
        let value = ArcadeValue(json)
        #expect(value == .dictionary(["b": .number(1), "a": .array([.null, .bool(true), .string("s")])]))
        #expect(value.json == json)
        #expect(ArcadeValue.date(1_796_040_000.12).json == .string("2026-11-30T12:00:00.120Z"))
        #expect(ArcadeValue.array([.date(0)]).json == .array([.string("1970-01-01T00:00:00Z")]))
    }

    @Test func dictionaryIsOrderedAndCaseInsensitive() {
        var d: ArcadeDictionary = ["Name": .string("x"), "id": .number(1)]
        #expect(d["NAME"] == .string("x"))
        d["name"] = .string("y")
        d["zone"] = .null
        #expect(d.keys == ["Name", "id", "zone"])
        #expect(d["name"] == .string("y"))
        d["ID"] = nil
        #expect(d.keys == ["Name", "zone"])
        #expect(d == ["zone": .null, "NAME": .string("y")])
        #expect(d != ["zone": .null, "NAME": .string("z")])
        #expect(ArcadeDictionary([(key: "a", value: .number(1)), (key: "A", value: .number(2))]).entries.count == 1)
    }

    @Test func truthiness() {
        #expect(!ArcadeValue.null.isTruthy)
        #expect(!ArcadeValue.bool(false).isTruthy)
        #expect(ArcadeValue.bool(true).isTruthy)
        #expect(!ArcadeValue.number(0).isTruthy)
        #expect(!ArcadeValue.number(.nan).isTruthy)
        #expect(ArcadeValue.number(-1).isTruthy)
        #expect(!ArcadeValue.string("").isTruthy)
        #expect(ArcadeValue.string("false").isTruthy)
        #expect(ArcadeValue.date(0).isTruthy)
        #expect(ArcadeValue.array([]).isTruthy)
        #expect(ArcadeValue.dictionary([:]).isTruthy)
    }

    @Test func numberCast() {
        #expect(ArcadeValue.string(" 12.5 ").numberValue == 12.5)
        #expect(ArcadeValue.string("").numberValue == 0)
        #expect(ArcadeValue.string("-1e2").numberValue == -100)
        #expect(ArcadeValue.string("nan").numberValue.isNaN)
        #expect(ArcadeValue.string("0x10").numberValue.isNaN)
        #expect(ArcadeValue.string("12abc").numberValue.isNaN)
        #expect(ArcadeValue.bool(true).numberValue == 1)
        #expect(ArcadeValue.null.numberValue == 0)
        #expect(ArcadeValue.date(1.5).numberValue == 1500)
        #expect(ArcadeValue.array([]).numberValue.isNaN)
    }

    @Test func contextNamesAreCaseInsensitive() {
        let context = ArcadeContext(["FenceFeature": .number(1)])
        #expect(context["fencefeature"] == .number(1))
        #expect(context["FENCEFEATURE"] == .number(1))
        #expect(context["other"] == .null)
    }
}
