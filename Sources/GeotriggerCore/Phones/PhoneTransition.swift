/// An OwnTracks phone's `_type: transition` message (on `owntracks/USER/DEVICE/event`): it
/// entered or left one of its regions. iOS names the region by `rid`; Android only by `wtst`
/// (the region's `tst`) and `desc`.
public struct PhoneTransition: Sendable, Equatable {
    /// `event`: `enter` (true) or `leave`.
    public var enter: Bool
    /// `tst`: the phone's fix time, epoch seconds.
    public var time: Double
    public var rid: String?
    public var wtst: Double?
    public var desc: String?

    public init(enter: Bool, time: Double, rid: String? = nil, wtst: Double? = nil, desc: String? = nil) {
        (self.enter, self.time, self.rid, self.wtst, self.desc) = (enter, time, rid, wtst, desc)
    }

    /// The `wtst` of the gateway's own transitions for region `rid` (`output.owntracks`): a
    /// stable number derived from the rid, never one of a phone's slots.
    public static func gatewayWaypointTime(rid: String) -> Double { Double(StableHash.of(rid) % 1_000_000_000) }

    /// The gateway published this one itself (`output.owntracks`): it comes back on the same
    /// topic and is not the phone's.
    public var isGatewaysOwn: Bool {
        guard let rid, let wtst else { return false }
        return wtst == PhoneTransition.gatewayWaypointTime(rid: rid)
    }

    /// Reads a transition; other `_type`s are `ignoredType`, a broken one names its field.
    public static func decode(_ payload: [UInt8]) -> Result<PhoneTransition, InputDrop> {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONReader.parseValue(payload, file: "payload", dialect: .json)
        } catch {
            return .failure(InputDrop(.notJSON, error.message))
        }
        guard case .object(let object) = value else { return .failure(InputDrop(.wrongType, "a transition is a JSON object")) }
        guard case .string(let type)? = object["_type"] else { return .failure(InputDrop(.missingField, "_type is missing")) }
        guard type == "transition" else { return .failure(InputDrop(.ignoredType, "_type \"\(type)\" on an event topic")) }
        let enter: Bool
        switch object["event"] {
        case .string("enter")?: enter = true
        case .string("leave")?: enter = false
        case nil: return .failure(InputDrop(.missingField, "event is missing"))
        default: return .failure(InputDrop(.wrongType, "event: expected \"enter\" or \"leave\""))
        }
        guard let tst = object["tst"] else { return .failure(InputDrop(.missingField, "tst is missing")) }
        guard case .number(let time) = tst, time.isFinite, time >= 0 else {
            return .failure(InputDrop(.wrongType, "tst: expected epoch seconds"))
        }
        var transition = PhoneTransition(enter: enter, time: time)
        if case .string(let rid)? = object["rid"] { transition.rid = String(rid.prefix(utf8Bytes: 1024)) }
        if case .number(let wtst)? = object["wtst"], wtst.isFinite { transition.wtst = wtst }
        if case .string(let desc)? = object["desc"] { transition.desc = String(desc.prefix(utf8Bytes: PhoneRegion.maximumDescriptionBytes)) }
        return .success(transition)
    }
}
