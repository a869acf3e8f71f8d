import FoundationEssentials
import GeotriggerCore
import MQTT
import Store

/// Request/response queries on `PREFIX/query/GATEWAY_ID` (the dispatcher's "who is inside?").
///
/// The reply goes to the MQTT v5 response topic (with the request's correlation data), else to
/// the JSON's `replyTo` (its `correlation` is copied into the reply), else to
/// `PREFIX/query/GATEWAY_ID/reply`. A reply topic must lie under `PREFIX/replies/` (so a
/// client cannot make the gateway publish on event, state or status topics under its ACL);
/// any other gets `{"error"}` on `PREFIX/query/GATEWAY_ID/reply`. Queries:
/// `{"inside": {"layer", "fence"}}`, `{"device": ID}`, `{"near": {"lat", "lon", "radius"}}`,
/// `{"fences": LAYER}`, `{"expectations": DEVICE_OR_*}` (open expected arrivals). Anything else gets `{"error": "..."}`. Queries wait in their own queue
/// of 256 (never on the update path); past it a query is answered `{"error": "busy"}` at once.
/// The device shards answer about their own devices.
final class QueryService: Service, Sendable {
    let name = "queries"
    let topic: String
    /// Where replies may go: `PREFIX/replies/`.
    let repliesPrefix: String
    let client: MQTTClient
    let pool: MonitorPool
    let store: GatewayStore
    let logger: Logger
    let snapshot: @Sendable () -> EngineSnapshot
    /// Answers `{"expectations": ...}`; nil: that query is refused.
    let expectations: Expectations?
    private let queue: BoundedQueue<MQTTMessage>

    /// A malformed query.
    struct QueryError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    init(
        prefix: String, gatewayID: String, client: MQTTClient, pool: MonitorPool, store: GatewayStore, logger: Logger,
        snapshot: @escaping @Sendable () -> EngineSnapshot, expectations: Expectations? = nil
    ) {
        self.expectations = expectations
        self.topic = "\(prefix)/query/\(gatewayID)"
        self.repliesPrefix = "\(prefix)/replies/"
        self.client = client
        self.pool = pool
        self.store = store
        self.logger = logger
        self.snapshot = snapshot
        self.queue = BoundedQueue(capacity: 256)
    }

    /// Hands a query over without waiting; past 256 pending queries it is answered
    /// `{"error": "busy"}` at once, so a flood of queries never holds up the control plane.
    func take(_ message: MQTTMessage) {
        guard !queue.trySend(message) else { return }
        let request = try? JSONReader.parse(message.payload, file: message.topic, dialect: .json)
        var object: JSONObject?
        if case .object(let o)? = request?.value { object = o }
        reply(.object(["error": .string("busy: \(queue.capacity) queries are waiting; ask again later")]), to: message, request: object)
    }

    func run() async throws {
        while let message = await queue.next() {
            await answer(message)
        }
    }

    func shutdown() async { queue.finish() }

    // MARK: Answering

    private func answer(_ message: MQTTMessage) async {
        var request: JSONObject?
        let answer: JSONValue
        do {
            let document = try JSONReader.parse(message.payload, file: message.topic, dialect: .json)
            guard case .object(let object) = document.value else {
                throw QueryError("a query is a JSON object, found \(document.value.typeName)")
            }
            request = object
            answer = try await respond(to: object)
        } catch let error as QueryError {
            answer = .object(["error": .string(error.message)])
        } catch let error as JSONSyntaxError {
            answer = .object(["error": .string("not JSON: \(error.location.line):\(error.location.column): \(error.message)")])
        } catch {
            answer = .object(["error": .string("\(error)")])
        }
        reply(answer, to: message, request: request)
    }

    /// Publishes `answer` to the query's reply topic (its `correlation` copied in), or an error
    /// to the default reply topic when the asked topic is not under ``repliesPrefix``.
    private func reply(_ answer: JSONValue, to message: MQTTMessage, request: JSONObject?) {
        var replyTo = message.responseTopic
        if replyTo == nil, case .string(let s)? = request?["replyTo"] { replyTo = s }
        var payload = answer
        if let correlation = request?["correlation"], case .object(var object) = payload {
            object["correlation"] = correlation
            payload = .object(object)
        }
        var target = "\(topic)/reply"
        if let replyTo {
            if replyTo.hasPrefix(repliesPrefix), replyTo.count > repliesPrefix.count, !replyTo.contains("+"), !replyTo.contains("#") {
                target = replyTo
            } else {
                var object = JSONObject()
                object["error"] = .string("replies go only to topics under \(repliesPrefix), not \"\(replyTo)\"")
                if let correlation = request?["correlation"] { object["correlation"] = correlation }
                payload = .object(object)
            }
        }
        var properties: MQTTPublishProperties?
        if client.configuration.protocolVersion == .v5, message.correlationData != nil || message.responseTopic != nil {
            properties = MQTTPublishProperties(correlationData: message.correlationData)
        }
        do {
            try client.publish(topic: target, payload: payloadBytes(payload), qos: .atLeastOnce, retain: false, properties: properties)
        } catch {
            logger.warning("cannot publish a query reply", ["mqtt.topic": target, "error": "\(error)"])
        }
    }

    private func respond(to request: JSONObject) async throws -> JSONValue {
        let kinds = request.keys.filter { $0 != "replyTo" && $0 != "correlation" }
        guard kinds.count == 1, let kind = kinds.first else {
            throw QueryError(
                kinds.isEmpty
                    ? "a query needs one of \"inside\", \"device\", \"near\", \"fences\", \"expectations\""
                    : "a query asks one thing, found \(kinds.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        let value = request[kind]!
        switch kind {
        case "inside":
            guard case .object(let o) = value, case .string(let layer)? = o["layer"], case .string(let fence)? = o["fence"] else {
                throw QueryError("\"inside\" needs {\"layer\": string, \"fence\": string}")
            }
            return try await inside(layer: layer, fence: fence)
        case "device":
            guard case .string(let device) = value, !device.isEmpty else { throw QueryError("\"device\" needs a device id string") }
            return try await deviceState(device)
        case "near":
            guard case .object(let o) = value, case .number(let lat)? = o["lat"], case .number(let lon)? = o["lon"] else {
                throw QueryError("\"near\" needs {\"lat\": number, \"lon\": number, \"radius\": metres}")
            }
            guard (-90...90).contains(lat), (-180...180).contains(lon) else {
                throw QueryError("\"near\": lat must be within -90...90 and lon within -180...180")
            }
            var radius = 100.0
            switch o["radius"] {
            case nil: break
            case .number(let r)? where r > 0 && r <= 100_000: radius = r
            default: throw QueryError("\"near\": radius must be a number of metres > 0 and <= 100000")
            }
            return near(Coordinate(lat: lat, lon: lon), radius: radius)
        case "fences":
            guard case .string(let layer) = value else { throw QueryError("\"fences\" needs a layer name string") }
            return try fences(layer)
        case "expectations":
            guard case .string(let device) = value, !device.isEmpty else {
                throw QueryError("\"expectations\" needs a device id string, or \"*\" for every device")
            }
            guard let expectations else { throw QueryError("expectations are not kept by this gateway") }
            return expectations.list(device: device)
        default:
            throw QueryError("unknown query \"\(kind)\" (expected \"inside\", \"device\", \"near\", \"fences\" or \"expectations\")")
        }
    }

    /// Asks every shard (each answers on its own worker, after the work queued before).
    private func ask(_ query: DeviceShard.Query) async -> DeviceShard.QueryAnswer {
        var all = DeviceShard.QueryAnswer()
        for shard in pool.shards {
            let answer = await withCheckedContinuation { c in
                Task { await shard.mailbox.send(.query(query, c)) }
            }
            all.states += answer.states
            all.hibernated += answer.hibernated
        }
        return all
    }

    /// Hibernated devices' states, restored from the store with the live snapshot.
    private func hibernatedStates(_ devices: [String]) async -> [JSONValue] {
        var states: [JSONValue] = []
        let snapshot = self.snapshot()
        for device in devices {
            guard let bytes = try? await store.deviceState(device),
                let (monitor, _) = try? DeviceMonitor.restore(from: bytes, snapshot: snapshot, now: MonotonicClock.now())
            else { continue }
            states.append(monitor.stateJSON(updated: WallClock.now()))
        }
        return states
    }

    private func inside(layer: String, fence: String) async throws -> JSONValue {
        guard snapshot().fence(layer: layer, id: fence) != nil else {
            throw QueryError("no fence \"\(fence)\" in layer \"\(layer)\"")
        }
        let answer = await ask(.inside(layer: layer, fence: fence))
        let states = answer.states + (await hibernatedStates(answer.hibernated))
        var rows: [(String, JSONValue)] = []
        for state in states {
            guard case .object(let s) = state, case .string(let device)? = s["device"], case .array(let stays)? = s["inside"] else { continue }
            for case .object(var stay) in stays where stay["layer"] == .string(layer) && stay["fence"] == .string(fence) {
                stay["layer"] = nil
                stay["fence"] = nil
                stay["name"] = nil
                var row = JSONObject()
                row["device"] = .string(device)
                for (key, value) in stay.entries { row[key] = value }
                rows.append((device, .object(row)))
            }
        }
        rows.sort { $0.0 < $1.0 }
        return .object(["layer": .string(layer), "fence": .string(fence), "inside": .array(rows.map(\.1))])
    }

    private func deviceState(_ device: String) async throws -> JSONValue {
        let answer = await ask(.device(device))
        if let state = answer.states.first { return state }
        if let state = await hibernatedStates(answer.hibernated).first { return state }
        throw QueryError("no device \"\(device)\" is known to this gateway")
    }

    private func near(_ point: Coordinate, radius: Double) -> JSONValue {
        var seen: Set<String> = []
        var rows: [JSONValue] = []
        for result in snapshot().locate(point, accuracy: nil, within: radius) where result.distance <= radius {
            guard seen.insert(result.layer + "\u{0}" + result.fence).inserted else { continue }
            rows.append(.object([
                "layer": .string(result.layer), "fence": .string(result.fence),
                "name": result.name.map(JSONValue.string) ?? .null,
                "distance": .number((result.distance * 10).rounded() / 10),
            ]))
        }
        return .object(["near": .array(rows)])
    }

    private func fences(_ layer: String) throws -> JSONValue {
        let snapshot = self.snapshot()
        guard snapshot.layerNames.contains(layer) else {
            throw QueryError("no fence layer \"\(layer)\" (layers: \(snapshot.layerNames.sorted().joined(separator: ", ")))")
        }
        let rows: [JSONValue] = snapshot.fences.filter { $0.fence.layer == layer }.map { prepared in
            let fence = prepared.fence
            return .object([
                "id": .string(fence.id), "name": fence.name.map(JSONValue.string) ?? .null,
                "properties": .object(fence.properties), "geometry": .string(fence.geometry.kindName),
            ])
        }
        return .object(["layer": .string(layer), "fences": .array(rows)])
    }
}
