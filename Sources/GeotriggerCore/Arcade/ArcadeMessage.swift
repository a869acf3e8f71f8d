/// What a trigger's `message` expression gives an event (docs/configuration.md "Trigger keys", `message`):
/// a text result is the message; a dictionary result gives `message` (its `message` key as
/// text), `actions` (its `actions` key) and every other key as `properties`.
public struct ArcadeMessage: Sendable, Equatable {
    /// The event's `message`; nil when the result has none (`null`, or a dictionary without a
    /// `message` key or with a `null` one).
    public var message: String?
    /// The event's `actions`: the dictionary's `actions` array (a single non-array value
    /// becomes a one-element array; `null` or absent gives none).
    public var actions: [JSONValue]
    /// The event's `properties`: every other key of a dictionary result, in its order.
    public var properties: JSONObject

    public init(message: String? = nil, actions: [JSONValue] = [], properties: JSONObject = JSONObject()) {
        self.message = message
        self.actions = actions
        self.properties = properties
    }

    /// Builds from a `message` expression's result. Keys are matched case-insensitively
    /// (`Message`, `ACTIONS`), as Arcade does. A result that is neither text nor dictionary
    /// (a number, a date...) becomes its text as the message; `null` gives no message.
    public init(_ result: ArcadeValue) {
        self.init()
        switch result {
        case .null:
            break
        case .dictionary(let dictionary):
            for entry in dictionary.entries {
                switch entry.key.lowercased() {
                case "message":
                    if entry.value != .null { message = ArcadeMessage.text(entry.value) }
                case "actions":
                    switch entry.value {
                    case .array(let list): actions = list.map(\.json)
                    case .null: break
                    case let single: actions = [single.json]
                    }
                default:
                    properties[entry.key] = entry.value.json
                }
            }
        default:
            message = ArcadeMessage.text(result)
        }
    }

    /// Evaluates a `message` expression and builds the message from its result.
    public init(_ expression: ArcadeExpression, _ context: ArcadeContext) throws(ArcadeError) {
        self.init(try expression.evaluate(context))
    }

    private static func text(_ value: ArcadeValue) -> String {
        switch value {
        case .string(let s): return s
        case .number(let n): return ArcadeNumberFormat.text(n)
        case .bool(let b): return b ? "true" : "false"
        case .date(let seconds): return ArcadeDateFormat.iso8601(seconds)
        case .null: return ""
        case .array, .dictionary: return value.json.serialized()
        }
    }
}
