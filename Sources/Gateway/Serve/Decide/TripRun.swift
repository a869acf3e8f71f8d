import GeotriggerCore
import Store

/// One open trip where its device's shard decides it (docs/trips.md): the request's identity,
/// its ``TripProgress`` and what of it was last handed to the committer.
package struct TripRun: Sendable {
    let id: String
    let device: String
    /// When the gateway accepted it (wall clock, whole milliseconds): part of its event ids.
    let created: Double
    var progress: TripProgress
    /// The fields last committed (nil: none since the request's row was stored).
    var committed: TripProgress.Committed?
    /// The fix time of the last fix whose fields were committed (nil: none since the start).
    var committedAt: Double?
    /// Its progress topic, made at its first progress message and kept: one string for every
    /// message of the trip rather than one each.
    var progressTopic: String?

    init(_ request: TripRequest, restoring committed: TripProgress.Committed? = nil) {
        id = request.id
        device = request.device
        created = request.created
        progress = committed.map { TripProgress(plan: request.plan, restoring: $0) } ?? TripProgress(plan: request.plan)
        self.committed = committed
    }
}

/// What is sent to a device's shard about its trips (``Trips`` decides, the shard carries out).
package enum TripOrder: Sendable {
    /// Follow this trip from now on (a new one, a replacement, or one restored at start).
    case assign(TripRun)
    /// Stop following trip `id` created at `created`; `clearProgress`: clear its progress topic
    /// (a dispatcher's cancel), once what was decided before is committed.
    case cancel(id: String, device: String, created: Double, clearProgress: Bool)

    var device: String {
        switch self {
        case .assign(let run): run.device
        case .cancel(_, let device, _, _): device
        }
    }
}

/// Turns what a ``TripRun`` decided into what is committed and published: its events (journal
/// and outbox, on `PREFIX/events/trips/DEVICE`), its progress (retained on
/// `PREFIX/trips/TRIP_ID/progress`, once committed) and its committed fields, all in one item
/// (docs/trips.md "Events", "Progress", "Restarts").
struct TripEmission: Sendable {
    let gatewayID: String
    let prefix: String
    let qos: Int

    /// The reserved trigger name of trip events.
    static let trigger = "trips"

    func progressTopic(_ id: String) -> String { "\(prefix)/trips/\(id)/progress" }

    /// Hands over `events` (just decided by `run`) and, when due, its progress and committed
    /// fields; `wall`: the gateway's wall clock. True when the trip has ended (arrived or
    /// missed): its row is settled in the same item.
    @discardableResult
    func emit(_ events: [TripEvent], of run: inout TripRun, wall: Double, into item: inout EventCommitter.Item?) -> Bool {
        guard !events.isEmpty || run.progress.shouldPublishProgress else { return false }
        var out = item ?? EventCommitter.Item()
        for event in events { append(event, of: run, emitted: wall, to: &out) }
        let final = run.progress.state.isFinal
        if run.progress.shouldPublishProgress {
            let topic = run.progressTopic ?? progressTopic(run.id)
            run.progressTopic = topic
            // Between changes at QoS 0: the next replaces a lost one within 10 s of fix time, and
            // only a broken connection loses one, after which every retained topic is published
            // again (docs/trips.md "Progress").
            out.retained.append(.init(topic: topic, payload: progressPayload(run), atMostOnce: !run.progress.progressFollowsChange))
            run.progress.progressPublished()
        }
        let committed = run.progress.committed
        let time = run.progress.lastTime
        if final {
            out.trips.append(.settle(id: run.id, created: run.created, state: committed.encoded(), settled: wall))
        } else if committed != run.committed,
                  !events.isEmpty || run.committedAt.map({ (time ?? .infinity) - $0 >= Self.alongCommitInterval }) ?? true {
            out.trips.append(.progress(id: run.id, created: run.created, state: committed.encoded()))
            run.committed = committed
            run.committedAt = time
        }
        item = out
        return final
    }

    /// Between events, a trip's `along` is committed at most this often, in seconds of fix time:
    /// what a restart may have to find again by searching forward from an older `along`. Not
    /// with every progress message: for a fleet reporting every 10 s that was a database write
    /// per update (docs/trips.md "Restarts").
    static let alongCommitInterval = 60.0

    /// The retained progress: `{"trip", "device", "state", "along", "remaining", "offBy",
    /// "eta", "speed", "time"}`, those without a value left out (the `trips` query's rows).
    func progressJSON(_ run: TripRun) -> JSONValue {
        var object = JSONObject()
        object["trip"] = .string(run.id)
        object["device"] = .string(run.device)
        let figures = run.progress.figures
        Self.addFigures(figures, to: &object)
        if let time = figures.time { object["time"] = .string(ISO8601Time.format(time)) }
        return .object(object)
    }

    /// The bytes of ``progressJSON(_:)``, written straight out (``JSONObjectWriter``): this is
    /// built at every progress message, for a fleet reporting every 10 s at every update
    /// (docs/performance.md "Trips").
    func progressPayload(_ run: TripRun) -> [UInt8] {
        let figures = run.progress.figures
        // The keys and punctuation take 93 bytes, the state up to 9, the numbers and times
        // mostly under 60.
        var out = JSONObjectWriter(capacity: 176 + run.id.utf8.count + run.device.utf8.count)
        out.string("trip", run.id)
        out.string("device", run.device)
        out.string("state", figures.state.rawValue)
        out.number("along", Self.round(figures.along))
        out.number("remaining", Self.round(figures.remaining))
        if let offBy = figures.offBy { out.number("offBy", Self.round(offBy)) }
        if let eta = figures.eta, eta.isFinite { out.time("eta", eta.rounded()) }
        if let speed = figures.speed { out.number("speed", Self.round(speed)) }
        if let time = figures.time { out.time("time", time) }
        return out.finish()
    }

    /// `state`, `along`, `remaining` (0.1 m), `offBy` (0.1 m), `eta` (ISO time), `speed` (0.1 m/s).
    static func addFigures(_ figures: TripFigures, to object: inout JSONObject) {
        object["state"] = .string(figures.state.rawValue)
        object["along"] = .number(round(figures.along))
        object["remaining"] = .number(round(figures.remaining))
        if let offBy = figures.offBy { object["offBy"] = .number(round(offBy)) }
        if let eta = figures.eta, eta.isFinite { object["eta"] = .string(ISO8601Time.format(eta.rounded())) }
        if let speed = figures.speed { object["speed"] = .number(round(speed)) }
    }

    /// The event's payload: the event schema's common keys (`id`, `gateway`, `trigger` =
    /// `trips`, `device`, `type`, `notification` = the type, `position` of the deciding fix (the
    /// last fix for `missed`; null before any), `time`, `message`, `emitted`), `trip` and the
    /// progress figures (`speed` the reading at the deciding fix), and `speedLimit` (m/s, 0.01)
    /// on `overspeed` and `speedOk`; no `fence` or `visit`.
    func eventJSON(_ event: TripEvent, of run: TripRun, emitted: Double) -> JSONValue {
        var object = JSONObject()
        object["id"] = .string(Self.eventID(trip: run.id, created: run.created, type: event.kind.rawValue, time: event.time))
        object["gateway"] = .string(gatewayID)
        object["trigger"] = .string(Self.trigger)
        object["device"] = .string(run.device)
        object["type"] = .string(event.kind.rawValue)
        object["notification"] = .string(event.kind.rawValue)
        object["trip"] = .string(run.id)
        if let position = event.figures.position, let time = event.figures.time {
            object["position"] = .object([
                "lat": .number(position.lat), "lon": .number(position.lon), "time": .string(ISO8601Time.format(time)),
            ])
        } else {
            object["position"] = .null
        }
        object["time"] = .string(ISO8601Time.format(event.time))
        Self.addFigures(event.figures, to: &object)
        if event.kind == .overspeed || event.kind == .speedOk, let limit = run.progress.plan.speedLimit {
            object["speedLimit"] = .number((limit * 100).rounded() / 100)
        }
        object["message"] = .string(Self.message(event, of: run))
        object["emitted"] = .string(ISO8601Time.format(emitted, milliseconds: true))
        return .object(object)
    }

    static func message(_ event: TripEvent, of run: TripRun) -> String {
        let figures = event.figures
        switch event.kind {
        case .tripStarted: return "\(run.device) started trip \(run.id)"
        case .offRoute: return "\(run.device) is off the route of trip \(run.id) (\(Int((figures.offBy ?? 0).rounded())) m away)"
        case .backOnRoute: return "\(run.device) is back on the route of trip \(run.id)"
        case .arrived: return "\(run.device) arrived (trip \(run.id))"
        case .late:
            let eta = figures.eta.map { " (ETA \(ISO8601Time.format($0.rounded())))" } ?? ""
            return "\(run.device) will be late on trip \(run.id)\(eta)"
        case .missed: return "\(run.device) did not arrive by the deadline of trip \(run.id)"
        case .overspeed, .speedOk:
            let limit = run.progress.plan.speedLimit.map { Self.speedText($0) } ?? "?"
            let speed = figures.speed.map { "\(Self.speedText($0)) m/s, " } ?? ""
            return event.kind == .overspeed
                ? "\(run.device) is over the speed limit of trip \(run.id) (\(speed)limit \(limit) m/s)"
                : "\(run.device) is back under the speed limit of trip \(run.id) (\(speed)limit \(limit) m/s)"
        }
    }

    /// `13.9` (one decimal, none when whole).
    static func speedText(_ value: Double) -> String {
        let r = round(value)
        return r == r.rounded() && abs(r) < 1e15 ? String(Int64(r)) : String(r)
    }

    /// Deterministic, like fence events' ids: from the trip id, its creation time, the type and
    /// the deciding time (whole milliseconds), 32 lowercase hex digits. A trip id used again is
    /// created at another time, so its events never repeat an earlier trip's ids.
    static func eventID(trip: String, created: Double, type: String, time: Double) -> String {
        var h = StableHash()
        h.combine("geotrigger-trip-1")
        for part in [trip, milliseconds(created), type, milliseconds(time)] { h.combine(part) }
        let (a, b) = h.finish()
        return hex(a) + hex(b)
    }

    private func append(_ event: TripEvent, of run: TripRun, emitted: Double, to item: inout EventCommitter.Item) {
        let json = eventJSON(event, of: run, emitted: emitted)
        let payload = json.serializedBytes()
        let id = json.objectValue?["id"]?.stringValue ?? ""
        item.events.append(JournalEvent(
            id: id, device: run.device, trigger: Self.trigger, layer: "", fence: "", type: event.kind.rawValue, fixTime: event.time,
            emittedTime: emitted, payload: String(decoding: payload, as: UTF8.self)))
        item.outbox.append(OutboxMessage(
            destination: .local, eventID: id, topic: "\(prefix)/events/\(Self.trigger)/\(run.device)", payload: payload, qos: qos,
            payloadInJournal: true))
    }

    private static func round(_ value: Double) -> Double {
        guard value.isFinite else { return 0 }
        let r = (value * 10).rounded() / 10
        return r == 0 ? 0 : r
    }

    private static func milliseconds(_ time: Double) -> String {
        let ms = (time * 1000).rounded()
        return ms.isFinite && abs(ms) < 9e18 ? String(Int64(ms)) : "0"
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
