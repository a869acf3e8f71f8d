import GeotriggerCore
import MQTT
import TestSupport

/// The gateway's retained status (`PREFIX/status/GATEWAY_ID`): a JSON object with `status`,
/// `warnings`, `counters`, `since` and `version`, read for the tests' questions. The one
/// reader of that payload in the tests; it lives here rather than in TestSupport because it
/// reads with the core's JSON reader, which keeps the members in order (a test checks the
/// order of the keys).
struct GatewayStatus: Sendable, CustomStringConvertible {
    /// The payload's members, in order.
    let object: JSONObject

    /// The status topic of gateway `gatewayID` under `prefix` (`output.prefix`).
    static func topic(prefix: String = "geotriggers", gatewayID: String) -> String { "\(prefix)/status/\(gatewayID)" }

    /// The message's payload as a status, nil if it is not a JSON object.
    init?(_ message: MQTTMessage) {
        guard let object = (try? JSONReader.parse(message.payload, file: message.topic, dialect: .json))?.value.objectValue
        else { return nil }
        self.object = object
    }

    /// The payload's top-level keys, in order.
    var keys: [String] { object.keys }

    /// A top-level member.
    subscript(key: String) -> JSONValue? { object[key] }

    /// `status`: `started`, `stopped`, `offline`, `failedToStart`.
    var status: String? { object["status"]?.stringValue }

    /// `warnings`.
    var warnings: [String] { object["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// `since`.
    var since: String? { object["since"]?.stringValue }

    /// `counters`.
    var counters: JSONObject? { object["counters"]?.objectValue }

    /// `counters.NAME`, -1 when absent.
    func counter(_ name: String) -> Int { Self.count(counters?[name]) }

    /// `counters.dropped.REASON`, -1 when absent.
    func dropped(_ reason: String) -> Int { Self.count(counters?["dropped"]?.objectValue?[reason]) }

    /// `counters.outbox.DESTINATION` (`local`, `remote`), -1 when absent.
    func outbox(_ destination: String) -> Int { Self.count(counters?["outbox"]?.objectValue?[destination]) }

    /// The payload as JSON text, for failure messages.
    var description: String { JSONValue.object(object).serialized() }

    private static func count(_ value: JSONValue?) -> Int { value?.numberValue.flatMap { Int(exactly: $0) } ?? -1 }
}

extension MQTTProbe {
    /// Every status received on `topic` so far, in order.
    func statuses(on topic: String) -> [GatewayStatus] {
        messages.all.filter { $0.topic == topic }.compactMap(GatewayStatus.init)
    }

    /// How many statuses on `topic` said `status` (e.g. `started`: how often the gateway came up).
    func statusCount(_ topic: String, saying status: String) -> Int {
        statuses(on: topic).filter { $0.status == status }.count
    }

    /// The last status received on `topic`.
    func lastStatus(_ topic: String) -> GatewayStatus? {
        messages.all.last { $0.topic == topic }.flatMap(GatewayStatus.init)
    }

    /// Waits until the last status on `topic` satisfies `condition`; returns it (or the last one seen).
    func waitStatus(
        _ topic: String, timeout: Duration = .seconds(60), where condition: (GatewayStatus) -> Bool
    ) async -> (ok: Bool, status: GatewayStatus?) {
        let ok = await poll(timeout: timeout) { lastStatus(topic).map(condition) ?? false }
        return (ok, lastStatus(topic))
    }
}
