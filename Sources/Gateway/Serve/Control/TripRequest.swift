import GeotriggerCore
import Store

/// One trip as a dispatcher publishes it (retained) to `PREFIX/trips/TRIP_ID` (docs/trips.md
/// "The request"), read and checked against the live fences, with its defaults applied:
/// `{"device", "route": {"layer", "fence"} (a line fence) or a GeoJSON LineString, "corridor"
/// (50 m), "to": {"layer", "fence"} (the route's end buffered by the corridor), "by", "offRouteAfter"
/// (30 s), "speedLimit"}`.
struct TripRequest: Sendable {
    /// The TRIP_ID level of the topic.
    var id: String
    var device: String
    /// The payload as published (a retained copy of it is recognised by its bytes).
    var payload: [UInt8]
    /// When the gateway accepted it (wall clock, whole milliseconds).
    var created: Double
    /// The route, corridor, destination, deadline and speed limit (m/s along the whole route).
    var plan: TripPlan

    /// The longest TRIP_ID, in characters of `[A-Za-z0-9_-]`.
    static let maxIDLength = 64
    /// The largest payload (a route given inline is at most this).
    static let maxPayload = 1 << 20

    /// What the trip counts against `runtime.maxBytes`: its payload and its prepared route.
    var bytes: Int { payload.count + plan.route.byteCount }

    /// Why `id` cannot be a trip ID, or nil if it can.
    static func problem(withID id: String) -> String? {
        if id.isEmpty { return "the topic needs a trip ID: PREFIX/trips/TRIP_ID" }
        guard id.utf8.count <= maxIDLength else { return "the trip ID is longer than \(maxIDLength) characters" }
        let allowed = id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
        }
        return allowed ? nil : "the trip ID \"\(id)\" has characters other than A-Z, a-z, 0-9, _ and -"
    }

    static let shape =
        "{\"device\": ID, \"route\": {\"layer\": LAYER, \"fence\": FENCE_ID} or a GeoJSON LineString, \"corridor\": METRES, "
        + "\"to\": {\"layer\": LAYER, \"fence\": FENCE_ID}, \"by\": ISO-8601 time, \"offRouteAfter\": SECONDS, \"speedLimit\": M/S or {\"property\": NAME}}"

    /// Reads and checks a payload against `snapshot`. Members other than the request's are
    /// ignored. The error says what is wrong and what was expected.
    static func parse(
        _ payload: [UInt8], id: String, topic: String, snapshot: EngineSnapshot, maxVertices: Int, maxPayload: Int = TripRequest.maxPayload,
        created: Double
    ) -> Result<TripRequest, TripProblem> {
        if let problem = problem(withID: id) { return .failure(TripProblem(problem)) }
        if payload.count > maxPayload {
            return .failure(TripProblem("the payload is \(payload.count) bytes, over the \(maxPayload) bytes a trip may have"))
        }
        let document: JSONDocument
        do {
            document = try JSONReader.parse(payload, file: topic, dialect: .json)
        } catch {
            return .failure(TripProblem("not JSON: \(error.location.line):\(error.location.column): \(error.message); expected \(shape)"))
        }
        guard case .object(let object) = document.value else {
            return .failure(TripProblem("expected a JSON object \(shape), found \(document.value.typeName)"))
        }
        do throws(TripProblem) {
            guard let deviceValue = object["device"] else { throw TripProblem("\"device\" is missing; expected \(shape)") }
            guard case .string(let device) = deviceValue else {
                throw TripProblem("\"device\" must be a string, found \(deviceValue.typeName)")
            }
            if let problem = DeviceID.problem(with: device) { throw TripProblem("\"device\": \(problem)") }
            guard let routeValue = object["route"] else { throw TripProblem("\"route\" is missing; expected \(shape)") }
            let (line, routeProperties) = try routeLine(routeValue, snapshot: snapshot)
            guard line.count <= maxVertices else {
                throw TripProblem("\"route\" has \(line.count) positions, over fences.maxVertices (\(maxVertices))")
            }
            let route: TripRoute
            do {
                route = try TripRoute(line)
            } catch {
                throw TripProblem("\"route\": \(error.message)")
            }
            let corridor = try number(object, "corridor", "metres either side of the route", positive: true) ?? TripPlan.defaultCorridor
            let offRouteAfter = try number(object, "offRouteAfter", "seconds", positive: false) ?? TripPlan.defaultOffRouteAfter
            let speedLimit = try speedLimit(object["speedLimit"], routeProperties: routeProperties)
            var by: Double?
            if let byValue = object["by"], byValue != .null {
                guard case .string(let text) = byValue, let time = ISO8601Time.parse(text), ISO8601Time.supportedRange.contains(time) else {
                    throw TripProblem("\"by\" must be an ISO-8601 time such as 2026-12-02T09:30:00Z, found \(byValue.serialized())")
                }
                by = time
            }
            var destination: (any TripDestination)?
            if let toValue = object["to"], toValue != .null {
                destination = try fenceDestination(toValue, snapshot: snapshot, corridor: corridor)
            }
            let plan = TripPlan(
                route: route, corridor: corridor, offRouteAfter: offRouteAfter, destination: destination, by: by, speedLimit: speedLimit)
            return .success(TripRequest(id: id, device: device, payload: payload, created: created, plan: plan))
        } catch {
            return .failure(error)
        }
    }

    /// `speedLimit`, if given (null: not given): m/s, or `{"property": NAME}`, the route's
    /// property (its fence's, or its Feature's) read as the trigger key reads a fence's (km/h, or
    /// a string with a unit: ``SpeedLimit``); a route without a readable value there is refused.
    private static func speedLimit(_ value: JSONValue?, routeProperties: JSONObject) throws(TripProblem) -> Double? {
        guard let value, value != .null else { return nil }
        switch SpeedLimit.parse(value).limit {
        case .fixed(let limit)?:
            return limit
        case .property(let name)?:
            guard let limit = SpeedLimit.metresPerSecond(property: routeProperties[name]) else {
                throw TripProblem(
                    "\"speedLimit\": the route's property \"\(name)\" is not a speed (a number of km/h, or a string such as \"50 mph\"), "
                        + "found \(routeProperties[name]?.serialized() ?? "none")")
            }
            return limit
        case nil:
            throw TripProblem(
                "\"speedLimit\" must be a number of metres per second above 0, or {\"property\": NAME} (the route's property, "
                    + "in km/h or with a unit), found \(value.serialized())")
        }
    }

    /// The route's positions and properties: a line fence's (`{"layer", "fence"}`) or a GeoJSON
    /// LineString's (a geometry, without properties, or a Feature with one).
    private static func routeLine(_ value: JSONValue, snapshot: EngineSnapshot) throws(TripProblem) -> (line: [Coordinate], properties: JSONObject) {
        guard case .object(let object) = value else {
            throw TripProblem("\"route\" must be {\"layer\": LAYER, \"fence\": FENCE_ID} or a GeoJSON LineString, found \(value.typeName)")
        }
        if object["layer"] != nil || object["fence"] != nil {
            let fence = try fence(object, key: "route", snapshot: snapshot)
            guard case .lines(let lines) = fence.fence.geometry, lines.count == 1 else {
                throw TripProblem("\"route\": fence \"\(fence.fence.id)\" in layer \"\(fence.fence.layer)\" is a \(fence.fence.geometry.kindName); a route is a LineString")
            }
            return (lines[0], fence.fence.properties)
        }
        var geometry = object
        var properties = JSONObject()
        if object["type"] == .string("Feature") {
            if case .object(let given)? = object["properties"] { properties = given }
            guard case .object(let inner)? = object["geometry"] else {
                throw TripProblem("\"route\": the Feature has no geometry object; expected a LineString")
            }
            geometry = inner
        }
        guard geometry["type"] == .string("LineString") else {
            let found = geometry["type"].map { $0.serialized() } ?? "no \"type\""
            throw TripProblem("\"route\" must be {\"layer\": LAYER, \"fence\": FENCE_ID} or a GeoJSON LineString, found \(found)")
        }
        guard case .array(let positions)? = geometry["coordinates"] else {
            throw TripProblem("\"route\": a LineString needs \"coordinates\": [[lon, lat], ...]")
        }
        var line: [Coordinate] = []
        line.reserveCapacity(positions.count)
        for (k, position) in positions.enumerated() {
            guard case .array(let pair) = position, pair.count >= 2, let lon = pair[0].numberValue, let lat = pair[1].numberValue else {
                throw TripProblem("\"route\": position \(k) must be [lon, lat], found \(position.serialized())")
            }
            line.append(Coordinate(lat: lat, lon: lon))
        }
        return (line, properties)
    }

    /// The `to` fence, matched with its own geometry and the largest buffer of the triggers
    /// that watch its layer (its `properties.buffer` first, as for them); a Point or a line with
    /// no buffer from them takes the corridor.
    private static func fenceDestination(_ value: JSONValue, snapshot: EngineSnapshot, corridor: Double) throws(TripProblem) -> FenceDestination {
        guard case .object(let object) = value else {
            throw TripProblem("\"to\" must be {\"layer\": LAYER, \"fence\": FENCE_ID}, found \(value.typeName)")
        }
        let prepared = try fence(object, key: "to", snapshot: snapshot)
        let fence = prepared.fence
        var buffer: Double?
        for setting in snapshot.settings where setting.layer == fence.layer {
            buffer = max(buffer ?? 0, fence.buffer ?? setting.buffer)
        }
        var effective = buffer ?? fence.buffer ?? 0
        if fence.geometry.needsBuffer, !(effective > 0) { effective = corridor }
        return FenceDestination(fence: prepared, buffer: effective)
    }

    private static func fence(_ object: JSONObject, key: String, snapshot: EngineSnapshot) throws(TripProblem) -> PreparedFence {
        let fields = "{\"layer\": LAYER, \"fence\": FENCE_ID}"
        guard case .string(let layer)? = object["layer"] else { throw TripProblem("\"\(key)\" needs \"layer\" as a string: \(fields)") }
        guard case .string(let id)? = object["fence"] else { throw TripProblem("\"\(key)\" needs \"fence\" as a string: \(fields)") }
        guard snapshot.layerNames.contains(layer) else {
            throw TripProblem("\"\(key)\": no fence layer \"\(layer)\" (layers: \(snapshot.layerNames.sorted().joined(separator: ", ")))")
        }
        guard let fence = snapshot.fence(layer: layer, id: id) else { throw TripProblem("\"\(key)\": no fence \"\(id)\" in layer \"\(layer)\"") }
        return fence
    }

    /// The number at `key`, if given (null: not given); `positive`: more than 0, else at least 0.
    private static func number(_ object: JSONObject, _ key: String, _ what: String, positive: Bool) throws(TripProblem) -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let n) = value, n.isFinite, positive ? n > 0 : n >= 0 else {
            throw TripProblem("\"\(key)\" must be a number of \(what) \(positive ? "above 0" : "at least 0"), found \(value.serialized())")
        }
        return n
    }

    /// The stored row of this trip, open.
    var row: TripRow { TripRow(id: id, payload: payload, device: device, created: created) }
}

/// Why a trip payload was rejected (published on `PREFIX/trips/TRIP_ID/error`).
struct TripProblem: Error, Sendable, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}
