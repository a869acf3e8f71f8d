import GeotriggerCore
import Store

/// One expected arrival, as a dispatcher publishes it (retained) to `PREFIX/expect/ID`:
/// `{"device": "vehicles/v17", "layer": "sites", "fence": "depot", "by": "2026-12-02T09:30:00Z"}`.
/// It is met by the device's first confirmed enter into the fence (or its stay there) with a fix
/// time at or before `by`, and missed when the gateway's wall clock passes `by` first.
struct ExpectedArrival: Sendable, Equatable {
    /// The ID level of the topic.
    var id: String
    var device: String
    var layer: String
    var fence: String
    /// The deadline, seconds since 1970.
    var by: Double
    /// The payload as published (a retained copy of it is recognised by its bytes).
    var payload: [UInt8]
    /// When the gateway accepted it (wall clock).
    var received: Double

    /// The longest ID accepted, in UTF-8 bytes.
    static let maxIDLength = 200

    /// Why `id` cannot be an expectation ID, or nil if it can.
    static func problem(withID id: String) -> String? {
        if id.isEmpty { return "the topic needs an expectation ID: PREFIX/expect/ID" }
        if id.utf8.count > maxIDLength { return "the expectation ID is longer than \(maxIDLength) bytes" }
        return nil
    }

    /// Reads and checks a payload against `snapshot`: an object with `device` (a device id),
    /// `layer` and `fence` (a fence of the snapshot, watched for that device by some trigger)
    /// and `by` (an ISO-8601 time). Other members are ignored. The error says what is wrong and
    /// what was expected.
    static func parse(
        _ payload: [UInt8], id: String, topic: String, snapshot: EngineSnapshot, maxPayload: Int, received: Double
    ) -> Result<ExpectedArrival, ExpectationProblem> {
        if let problem = problem(withID: id) { return .failure(ExpectationProblem(problem)) }
        if payload.count > maxPayload {
            return .failure(ExpectationProblem("the payload is \(payload.count) bytes, over the \(maxPayload) bytes an expectation may have"))
        }
        let shape = "{\"device\": ID, \"layer\": LAYER, \"fence\": FENCE_ID, \"by\": ISO-8601 time}"
        let document: JSONDocument
        do {
            document = try JSONReader.parse(payload, file: topic, dialect: .json)
        } catch {
            return .failure(ExpectationProblem("not JSON: \(error.location.line):\(error.location.column): \(error.message); expected \(shape)"))
        }
        guard case .object(let object) = document.value else {
            return .failure(ExpectationProblem("expected a JSON object \(shape), found \(document.value.typeName)"))
        }
        var strings: [String: String] = [:]
        for key in ["device", "layer", "fence", "by"] {
            switch object[key] {
            case nil:
                return .failure(ExpectationProblem("\"\(key)\" is missing; expected \(shape)"))
            case .string(let text)?:
                strings[key] = text
            case let value?:
                return .failure(ExpectationProblem("\"\(key)\" must be a string, found \(value.typeName)"))
            }
        }
        let device = strings["device"]!, layer = strings["layer"]!, fence = strings["fence"]!, byText = strings["by"]!
        if let problem = DeviceID.problem(with: device) {
            return .failure(ExpectationProblem("\"device\": \(problem)"))
        }
        guard let by = ISO8601Time.parse(byText), ISO8601Time.supportedRange.contains(by) else {
            return .failure(ExpectationProblem("\"by\" must be an ISO-8601 time such as 2026-12-02T09:30:00Z, found \"\(byText)\""))
        }
        guard snapshot.layerNames.contains(layer) else {
            return .failure(ExpectationProblem("no fence layer \"\(layer)\" (layers: \(snapshot.layerNames.sorted().joined(separator: ", ")))"))
        }
        guard snapshot.fence(layer: layer, id: fence) != nil else {
            return .failure(ExpectationProblem("no fence \"\(fence)\" in layer \"\(layer)\""))
        }
        guard snapshot.settings.contains(where: { $0.layer == layer && $0.applies(to: device) }) else {
            return .failure(ExpectationProblem("no trigger watches layer \"\(layer)\" for device \"\(device)\" (see the triggers' fences and devices)"))
        }
        return .success(ExpectedArrival(id: id, device: device, layer: layer, fence: fence, by: by, payload: payload, received: received))
    }

    /// The stored row of this expectation, open.
    var row: ExpectationRow {
        ExpectationRow(id: id, payload: payload, device: device, layer: layer, fence: fence, by: by, received: received)
    }

    /// The expectation a stored row holds.
    init(row: ExpectationRow) {
        self.init(id: row.id, device: row.device, layer: row.layer, fence: row.fence, by: row.by, payload: row.payload,
                  received: row.received)
    }

    init(id: String, device: String, layer: String, fence: String, by: Double, payload: [UInt8], received: Double) {
        self.id = id
        self.device = device
        self.layer = layer
        self.fence = fence
        self.by = by
        self.payload = payload
        self.received = received
    }
}

/// Why an expectation payload was rejected (published on `PREFIX/expect/ID/error`).
struct ExpectationProblem: Error, Sendable, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}

/// What was decided for one expectation: arrived (at a fix time) or missed.
struct ExpectationDecision: Sendable, Equatable {
    enum Outcome: Sendable, Equatable {
        /// The arrival's fix time.
        case arrived(Double)
        case missed
    }

    var expectation: ExpectedArrival
    var outcome: Outcome
    /// When it was decided (wall clock).
    var decided: Double

    /// `arrived` or `missed`.
    var result: String {
        if case .arrived = outcome { "arrived" } else { "missed" }
    }

    /// The arrival's fix time, or `by` for a miss.
    var time: Double {
        if case .arrived(let time) = outcome { time } else { expectation.by }
    }

    /// Deterministic, like event ids: from (ID, device, layer, fence, by, result, time in whole
    /// milliseconds), 32 lowercase hex digits.
    var id: String {
        var h = StableHash()
        h.combine("geotrigger-expectation-1")
        for part in [expectation.id, expectation.device, expectation.layer, expectation.fence, milliseconds(expectation.by), result,
                     milliseconds(time)] {
            h.combine(part)
        }
        let (a, b) = h.finish()
        return hex(a) + hex(b)
    }

    private func milliseconds(_ time: Double) -> String {
        let ms = (time * 1000).rounded()
        return ms.isFinite && abs(ms) < 9e18 ? String(Int64(ms)) : "0"
    }

    private func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The result payload for `PREFIX/expect/ID/result`: `{"id", "expectation", "device",
    /// "layer", "fence", "by", "result", "time", "early" (arrived only), "emitted"}`.
    func resultJSON(emitted: Double) -> JSONValue {
        var object = JSONObject()
        object["id"] = .string(id)
        object["expectation"] = .string(expectation.id)
        object["device"] = .string(expectation.device)
        object["layer"] = .string(expectation.layer)
        object["fence"] = .string(expectation.fence)
        object["by"] = .string(ISO8601Time.format(expectation.by))
        object["result"] = .string(result)
        object["time"] = .string(ISO8601Time.format(time))
        if case .arrived(let time) = outcome {
            let early = ((expectation.by - time) * 1000).rounded() / 1000
            object["early"] = .number(early == 0 ? 0 : early)
        }
        object["emitted"] = .string(ISO8601Time.format(emitted, milliseconds: true))
        return .object(object)
    }

    /// The stored row of the settled expectation.
    var row: ExpectationRow {
        var row = expectation.row
        row.result = result
        row.resultID = id
        row.resultTime = time
        row.settled = decided
        return row
    }
}
