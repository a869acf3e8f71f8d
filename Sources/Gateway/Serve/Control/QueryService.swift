import FoundationEssentials
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Request/response queries on `PREFIX/query/GATEWAY_ID` (the dispatcher's "who is inside?").
///
/// The reply goes to the MQTT v5 response topic (with the request's correlation data), else to
/// the JSON's `replyTo` (its `correlation` is copied into the reply), else to
/// `PREFIX/query/GATEWAY_ID/reply`. A reply topic must lie under `PREFIX/replies/` (so a
/// client cannot make the gateway publish on event, state or status topics under its ACL);
/// any other gets `{"error"}` on `PREFIX/query/GATEWAY_ID/reply`. Queries:
/// `{"inside": {"layer", "fence"}}`, `{"device": ID}`, `{"near": {"lat", "lon", "radius", "limit"}}`,
/// `{"fences": LAYER}` or `{"fences": {"layer", "offset", "limit"}}`, `{"expectations": DEVICE_OR_*}`
/// (open expected arrivals),
/// `{"track": {"device", "since", "offset", "limit"}}` (a device's recent positions, paged) or
/// `{"track": {"devices", "since", "partBytes"}}` (several devices', ``TrackPartsWriter``),
/// `{"events": {"since", "until", "types", "devices", "limit", "offset"}}` (the journal's events, paged),
/// `{"features": {"bbox", "layers", "limit", "partBytes"}}` (fence geometry as a GeoJSON
/// FeatureCollection, under 900 KiB: ``FeatureCollectionWriter``; with `partBytes` in parts of
/// at most that many bytes, published one after the other to the same reply topic, for
/// mosquitto's websockets listener, which sends large messages slowly). The `inside`, `near`,
/// `fences`, `track` and `events` replies list rows within the same 900 KiB (``ReplyRowsWriter``), with
/// `"truncated": true` when rows were left out. Anything else gets
/// `{"error": "..."}`. Queries wait in their own queue
/// of 256 (never on the update path); past it a query is answered `{"error": "busy"}` at once.
/// The device shards answer about their own devices.
///
/// A reply's budget counts everything each of its messages carries beside its JSON: the reply
/// topic, the MQTT v5 correlation data copied from the query and the packet's own header
/// (``messageOverhead(topic:correlationData:)``; user properties are not copied). One querying
/// user (``ReplyWriting``) has at most 4 replies being written (published and not all
/// acknowledged by the broker) at a time; a query past that is answered `{"error": "busy"}`.
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
    /// The replies being written per querying user, and their parts' message ids.
    private let writing = Mutex(ReplyWriting())
    /// Parts published and not acknowledged (so an acknowledgement of another's message skips the lock).
    private let partsInFlight = Atomic<Int>(0)
    /// The journal's reader for `events` queries: a read-only connection of its own, opened by
    /// the first one (nil until then). The WAL lets it read beside the writer, so a query never
    /// waits for a commit nor a commit for a query.
    private let journalReader = Mutex<GatewayStore?>(nil)

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
    func enqueue(_ message: MQTTMessage) {
        guard !queue.trySend(message) else { return }
        let request = QueryRequest.parse(message.payload, file: message.topic)
        reply(.object(["error": .string("busy: \(queue.capacity) queries are waiting; ask again later")]), to: message, request: request)
    }

    func run() async throws {
        while let message = await queue.next() {
            await answer(message)
        }
    }

    func shutdown() async {
        queue.finish()
        if let reader = journalReader.withLock({ $0.take() }) { await reader.close() }
    }

    // MARK: Answering

    private func answer(_ message: MQTTMessage) async {
        let request = QueryRequest.parse(message.payload, file: message.topic)
        let (target, refusal) = QueryRequest.replyTopic(
            asked: message.responseTopic ?? request.replyTo, repliesPrefix: repliesPrefix, fallback: "\(topic)/reply")
        if let refusal { return reply(.object(["error": .string(refusal)]), to: message, request: request) }
        let user = ReplyWriting.user(ofReplyTopic: target, repliesPrefix: repliesPrefix)
        guard writing.withLock({ $0.begin(user: user) }) else {
            let busy = "busy: \(ReplyWriting.perUser) replies to \(repliesPrefix)\(user) are still being written; ask again once one has arrived"
            return reply(.object(["error": .string(busy)]), to: message, request: request)
        }
        // Every message of the reply carries the JSON correlation, the topic and the v5
        // correlation data beside its rows: the writers count them all.
        let appended = (request.correlation.map { #","correlation":"#.utf8.count + $0.serializedBytes().count } ?? 0)
            + Self.messageOverhead(topic: target, correlationData: replyProperties(for: message)?.correlationData)
        let answers: [[UInt8]]
        do {
            switch try await respond(to: request.kind.get(), appended: appended) {
            case .value(let answer): answers = [Self.object(answer)]
            case .written(let written): answers = written
            }
        } catch let error as QueryProblem {
            answers = [Self.object(.object(["error": .string(error.message)]))]
        } catch {
            answers = [Self.object(.object(["error": .string("\(error)")]))]
        }
        reply(written: answers, to: message, request: request, user: user)
    }

    /// The bytes of one reply message besides its payload: the PUBLISH's fixed header (at most
    /// 5), the topic (2 + its length), the packet id (2), and with MQTT v5 the properties'
    /// length (at most 4) and the correlation data (3 + its length).
    static func messageOverhead(topic: String, correlationData: [UInt8]?) -> Int {
        5 + 2 + topic.utf8.count + 2 + 4 + (correlationData.map { 3 + $0.count } ?? 0)
    }

    /// `answer` as a JSON object's bytes.
    private static func object(_ answer: JSONValue) -> [UInt8] { JSONValue.object(answer.objectValue ?? JSONObject()).serializedBytes() }

    /// The v5 properties of a reply to `message`: its correlation data (nil on v3.1.1, or for a
    /// query with neither correlation data nor a response topic).
    private func replyProperties(for message: MQTTMessage) -> MQTTPublishProperties? {
        guard client.configuration.protocolVersion == .v5, message.correlationData != nil || message.responseTopic != nil else { return nil }
        return MQTTPublishProperties(correlationData: message.correlationData)
    }

    /// Publishes `answer` to the query's reply topic (its `correlation` copied in), or an error
    /// to the default reply topic when the asked topic is not under ``repliesPrefix``. Not
    /// counted among the replies being written (an error or a refusal: one small message).
    private func reply(_ answer: JSONValue, to message: MQTTMessage, request: QueryRequest) {
        reply(written: [Self.object(answer)], to: message, request: request, user: nil)
    }

    /// ``reply(_:to:request:)`` with the answer already written as JSON objects, published in
    /// order to the same topic (each with the correlation); a refused reply topic gets one error.
    /// `user`: the querying user whose slot (``ReplyWriting/begin(user:)``) the reply holds until
    /// the broker has acknowledged its parts. Published on the network thread, where the
    /// acknowledgements are read, so the parts' ids are recorded before any can arrive.
    private func reply(written answers: [[UInt8]], to message: MQTTMessage, request: QueryRequest, user: String?) {
        let (target, refusal) = QueryRequest.replyTopic(
            asked: message.responseTopic ?? request.replyTo, repliesPrefix: repliesPrefix, fallback: "\(topic)/reply")
        let payloads = refusal.map { [JSONValue.object(["error": .string($0)]).serializedBytes()] } ?? answers
        let properties = replyProperties(for: message)
        let correlation = request.correlation
        client.perform { [self] in
            var published: [Int32] = []
            for (i, answer) in payloads.enumerated() {
                var payload = answer
                if let correlation {
                    // The object's last member: `}` becomes `,"correlation":VALUE}` (no comma after `{`).
                    payload.removeLast()
                    if payload.count > 1 { payload.append(UInt8(ascii: ",")) }
                    payload.append(contentsOf: #""correlation":"#.utf8)
                    correlation.write(to: &payload)
                    payload.append(UInt8(ascii: "}"))
                }
                do {
                    published.append(try client.publish(topic: target, payload: payload, qos: .atLeastOnce, retain: false, properties: properties))
                } catch {
                    if payloads.count == 1 {
                        logger.warning("cannot publish a query reply", ["mqtt.topic": target, "error": "\(error)"])
                    } else {
                        // The parts after a lost one would not make a whole reply: stop there.
                        logger.warning(
                            "cannot publish a query reply",
                            ["mqtt.topic": target, "part": "\(i + 1) of \(payloads.count)", "error": "\(error)"])
                    }
                    break
                }
            }
            guard let user else { return }
            partsInFlight.add(published.count, ordering: .relaxed)
            writing.withLock { $0.published(user: user, messageIDs: published) }
        }
    }

    /// The broker acknowledged message `ack`: whether it was a part of a reply (called on the
    /// network thread, before the other owners of the client's acknowledgements).
    func acknowledged(_ ack: MQTTAcknowledgement) -> Bool {
        guard partsInFlight.load(ordering: .relaxed) > 0 else { return false }
        let mine = writing.withLock { $0.acknowledged(ack.messageId) }
        if mine { partsInFlight.subtract(1, ordering: .relaxed) }
        return mine
    }

    /// Replies being written, of every querying user (for tests).
    var repliesBeingWritten: Int { writing.withLock { $0.count } }

    /// A query's answer: a value, or JSON objects already written (the `features`, `fences`,
    /// `near` and `inside` replies, written within their byte budget as they grow: one message,
    /// or the `features` reply's parts in order).
    private enum Answer {
        case value(JSONValue)
        case written([[UInt8]])
    }

    /// `correlationBytes`: what every message of the reply carries beside its rows (the JSON
    /// correlation, the topic, the v5 correlation data): the writers count them.
    private func respond(to kind: QueryRequest.Kind, appended correlationBytes: Int) async throws -> Answer {
        switch kind {
        case .inside(let layer, let fence): return .written([try await inside(layer: layer, fence: fence, correlationBytes: correlationBytes)])
        case .device(let device): return .value(try await deviceState(device))
        case .near(let point, let radius, let limit):
            return .written([near(point, radius: radius, limit: limit, correlationBytes: correlationBytes)])
        case .fences(let layer, let offset, let limit):
            return .written([try fences(layer, offset: offset, limit: limit, correlationBytes: correlationBytes)])
        case .expectations(let device):
            guard let expectations else { throw QueryProblem("expectations are not kept by this gateway") }
            return .value(expectations.list(device: device))
        case .trips(let device): return .value(await tripList(device: device))
        case .features(let query): return .written(try features(query, correlationBytes: correlationBytes))
        case .track(let device, let since, let offset, let limit):
            return .written([try await track(device, since: since, offset: offset, limit: limit, correlationBytes: correlationBytes)])
        case .tracks(let devices, let since, let partBytes):
            return .written(try await tracks(devices, since: since, partBytes: partBytes, correlationBytes: correlationBytes))
        case .events(let query): return .written([try await events(query, correlationBytes: correlationBytes)])
        }
    }

    /// The reply to `{"trips": {"device": ID}}` (or `{}`): the open trips with their progress, by
    /// trip id: `{"trips": [{"trip", "device", "state", "along", "remaining", "offBy", "eta",
    /// "speed", "time", "by", "created"}], "count": N}`, at most ``tripReplyLimit`` listed
    /// (`"truncated": true` beyond).
    private func tripList(device: String?) async -> JSONValue {
        let query = DeviceShard.Query.trips(device: device)
        var trips: [JSONValue] = []
        for shard in device.map({ [pool.shard(for: $0)] }) ?? pool.shards {
            let answer = await withCheckedContinuation { c in
                Task { await shard.mailbox.send(.query(query, c)) }
            }
            trips += answer.trips
        }
        trips.sort { ($0.objectValue?["trip"]?.stringValue ?? "") < ($1.objectValue?["trip"]?.stringValue ?? "") }
        var reply: JSONObject = ["trips": .array(Array(trips.prefix(Self.tripReplyLimit))), "count": .number(Double(trips.count))]
        if trips.count > Self.tripReplyLimit { reply["truncated"] = .bool(true) }
        return .object(reply)
    }

    /// The most trips a `trips` reply lists.
    static let tripReplyLimit = 1000

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

    /// The `inside` reply: the confirmed stays in the fence, by device id, as many as fit in
    /// 900 KiB (`count`: all of them; `truncated` when some were left out).
    private func inside(layer: String, fence: String, correlationBytes: Int) async throws -> [UInt8] {
        guard snapshot().fence(layer: layer, id: fence) != nil else {
            throw QueryProblem("no fence \"\(fence)\" in layer \"\(layer)\"")
        }
        let answer = await ask(.inside(layer: layer, fence: fence))
        let states = await answer.allStates(store: store, snapshot: snapshot())
        var stays = DeviceStateStay.stays(in: states, layer: layer, fence: fence)
        stays.sort { $0.device < $1.device }
        var writer = ReplyRowsWriter(
            head: ["layer": .string(layer), "fence": .string(fence), "count": .number(Double(stays.count))], rows: "inside",
            appended: correlationBytes)
        for stay in stays {
            var entry = stay.entry
            entry["layer"] = nil
            entry["fence"] = nil
            entry["name"] = nil
            var row = JSONObject()
            row["device"] = .string(stay.device)
            for (key, value) in entry.entries { row[key] = value }
            guard writer.append(.object(row)) else { break }
        }
        return writer.finish(truncated: writer.count < stays.count)
    }

    private func deviceState(_ device: String) async throws -> JSONValue {
        if let state = await ask(.device(device)).allStates(store: store, snapshot: snapshot()).first { return state }
        throw QueryProblem("no device \"\(device)\" is known to this gateway")
    }

    /// The `near` reply: the `limit` watched fences nearest to `point` within `radius`, nearest
    /// first, as many as fit in 900 KiB (`truncated` when more lie within the radius). The
    /// search measures the fences near the point, not every fence within the radius.
    private func near(_ point: Coordinate, radius: Double, limit: Int, correlationBytes: Int) -> [UInt8] {
        let snapshot = self.snapshot()
        let (nearest, more) = snapshot.nearestWatchedFences(to: point, within: radius, count: limit)
        var writer = ReplyRowsWriter(head: JSONObject(), rows: "near", appended: correlationBytes)
        for near in nearest {
            let fence = snapshot.fences[near.fence].fence
            let added = writer.append(.object([
                "layer": .string(fence.layer), "fence": .string(fence.id), "name": fence.name.map(JSONValue.string) ?? .null,
                "distance": .number((near.distance * 10).rounded() / 10),
            ]))
            guard added else { break }
        }
        return writer.finish(truncated: more || writer.count < nearest.count)
    }

    /// The `features` reply: the fences of the layers asked whose box meets `bbox`, in layer
    /// then file order, at most `limit` of them and 900 KiB with `correlationBytes` added to
    /// every message; one message, or with `partBytes` its parts.
    private func features(_ query: FeaturesQuery, correlationBytes: Int) throws -> [[UInt8]] {
        var writer = FeatureCollectionWriter(
            budget: FeatureCollectionWriter.replyBudget, partBytes: query.partBytes, appended: correlationBytes)
        if let partBytes = query.partBytes, partBytes < writer.emptyPartBytes {
            throw QueryProblem(
                "\"features\": \"partBytes\" \(partBytes) is less than the \(writer.emptyPartBytes) bytes a part takes "
                    + "without features beside this correlation and reply topic: expected partBytes of at least that, "
                    + "or less correlation data")
        }
        let snapshot = self.snapshot()
        var layers: Set<String>?
        if let asked = query.layers {
            let known = Set(snapshot.layerNames)
            let unknown = asked.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw QueryProblem(
                    "\"features\": \"layers\" names no fence layer \(unknown.map { "\"\($0)\"" }.joined(separator: ", ")) "
                        + "(layers: \(snapshot.layerNames.sorted().joined(separator: ", ")))")
            }
            layers = Set(asked)
        }
        let (numbers, more) = snapshot.fenceNumbers(meeting: query.bbox?.bounds, layers: layers, limit: query.limit, offset: query.offset)
        var truncated = more
        for f in numbers {
            let added = writer.append(snapshot.fences[f].fence, buffer: snapshot.largestBuffer(ofFence: f), triggers: snapshot.triggerNames(watchingFence: f))
            guard added else {
                truncated = true
                break
            }
        }
        return writer.finishParts(truncated: truncated)
    }

    /// The `track` reply: `device`'s recent positions (DeviceShard+Track.swift) from `since` (nil:
    /// the last 24 hours), oldest first, `offset` of them skipped, at most `limit` and 900 KiB of
    /// them: `{"device", "offset", "positions": [{"lat", "lon", "time"}], "truncated"}`
    /// (`truncated` when positions after those listed were left out: the next page starts at
    /// `offset` + those listed). Its shard answers, after the work queued before; a device it
    /// does not know gets `{"error"}` like the `device` query.
    private func track(_ device: String, since: Double?, offset: Int, limit: Int, correlationBytes: Int) async throws -> [UInt8] {
        guard let page = await trackPage(device, since: since, offset: offset, limit: limit) else {
            throw QueryProblem("no device \"\(device)\" is known to this gateway")
        }
        var writer = ReplyRowsWriter(
            head: ["device": .string(device), "offset": .number(Double(offset))], rows: "positions", appended: correlationBytes)
        for position in page.positions {
            let row: JSONObject = [
                "lat": .number(position.lat), "lon": .number(position.lon), "time": .string(ISO8601Time.format(position.time)),
            ]
            guard writer.append(.object(row)) else { break }
        }
        return writer.finish(truncated: page.more || writer.count < page.positions.count)
    }

    /// A page of `device`'s recent track from its shard, after the work queued before; nil for a
    /// device the gateway does not know.
    private func trackPage(_ device: String, since: Double?, offset: Int, limit: Int) async -> (positions: [RecentTrack.Position], more: Bool)? {
        let shard = pool.shard(for: device)
        let query = DeviceShard.Query.track(device: device, since: since, offset: offset, limit: limit)
        return await withCheckedContinuation { c in
            Task { await shard.mailbox.send(.query(query, c)) }
        }.track
    }

    /// The `track` reply for several devices (``TrackPartsWriter``): each device's recent
    /// positions from `since` (nil: the last 24 hours), in the order asked, as many as fit in
    /// 900 KiB; one message, or with `partBytes` its parts. `truncated` when the positions after
    /// the last listed, or the devices after it, were left out: the asker continues from that
    /// device. A device the gateway does not know is listed as `"unknown": true` (with several
    /// gateways, another may know it).
    private func tracks(_ devices: [String], since: Double?, partBytes: Int?, correlationBytes: Int) async throws -> [[UInt8]] {
        var writer = TrackPartsWriter(partBytes: partBytes, appended: correlationBytes)
        if let partBytes, partBytes < writer.emptyPartBytes + TrackPartsWriter.shortestPosition {
            throw QueryProblem(
                "\"track\": \"partBytes\" \(partBytes) leaves no room for a position beside this correlation and reply topic: "
                    + "expected partBytes of at least \(writer.emptyPartBytes + TrackPartsWriter.shortestPosition)")
        }
        var truncated = false
        devices: for device in devices {
            guard let page = await trackPage(device, since: since, offset: 0, limit: writer.positionsThatMayFit) else {
                guard writer.unknown(device: device) else {
                    truncated = true
                    break
                }
                continue
            }
            guard writer.begin(device: device) else {
                truncated = true
                break
            }
            for position in page.positions {
                guard writer.append(position) else {
                    writer.end()
                    truncated = true
                    break devices
                }
            }
            writer.end()
            if page.more {
                truncated = true
                break
            }
        }
        return writer.finishParts(truncated: truncated)
    }

    /// The `events` reply: the journal's events (``GatewayStore/eventPage(_:offset:limit:maxSteps:)``)
    /// of fix time from `since` (nil: ``EventsQuery/defaultWindow`` before now, wall clock) to
    /// before `until`, of the types and devices asked, oldest first, `offset` of them skipped, at
    /// most `limit` and 900 KiB of them, each as it was published: `{"count", "offset", "events":
    /// [EVENT], "truncated"}` (`count`: the events that match, listed or not; `truncated` when
    /// events after those listed match: the next page starts at `offset` + those listed). A read past ``eventsQuerySteps`` is refused with what to narrow.
    private func events(_ query: EventsQuery, correlationBytes: Int) async throws -> [UInt8] {
        let journal = JournalQuery(since: query.since ?? WallClock.now() - EventsQuery.defaultWindow, until: query.until,
                                   devices: query.devices, types: query.types)
        let page: (payloads: [String], more: Bool, count: Int)
        do {
            page = try await journalReaderOpened().eventPage(journal, offset: query.offset, limit: query.limit, maxSteps: Self.eventsQuerySteps)
        } catch let error as SQLiteError where error.isInterrupted {
            throw QueryProblem(
                "\"events\": the query reads more of the journal than a reply may (\(Self.eventsQuerySteps) SQLite steps): "
                    + "ask for a shorter window (since, until), fewer types or devices, or a smaller offset")
        }
        var writer = ReplyRowsWriter(
            head: ["count": .number(Double(page.count)), "offset": .number(Double(query.offset))], rows: "events", appended: correlationBytes)
        for payload in page.payloads {
            guard writer.append(json: payload) else { break }
        }
        return writer.finish(truncated: page.more || writer.count < page.payloads.count)
    }

    /// How much of the journal one `events` query may read, in SQLite instructions: about
    /// 200,000 events looked at (15 instructions per event filtered by device or type), 0.2 s
    /// of CPU on a 2-core x86 box for events of 570 bytes, a second or so on a Raspberry Pi;
    /// an hour at 10 events a second is 36,000.
    static let eventsQuerySteps = 3_000_000

    /// The journal's reader, opened at the first `events` query (queries are answered one at a
    /// time, so no two open it).
    private func journalReaderOpened() async throws -> GatewayStore {
        if let reader = journalReader.withLock({ $0 }) { return reader }
        let reader = try await GatewayStore(path: store.path, options: GatewayStore.Options(readOnly: true))
        journalReader.withLock { $0 = reader }
        return reader
    }

    /// The `fences` reply: layer `layer`'s fences in file order, `offset` of them skipped, at
    /// most `limit` and 900 KiB of them (`count`: the layer's fences; `truncated` when fences
    /// after those listed were left out: the next page starts at `offset` + those listed).
    /// Only the rows that fit are written, from the layer's run of fences in the snapshot.
    private func fences(_ layer: String, offset: Int, limit: Int, correlationBytes: Int) throws -> [UInt8] {
        let snapshot = self.snapshot()
        guard snapshot.layerNames.contains(layer) else {
            throw QueryProblem("no fence layer \"\(layer)\" (layers: \(snapshot.layerNames.sorted().joined(separator: ", ")))")
        }
        let numbers = snapshot.fenceNumbers(ofLayer: layer)
        var writer = ReplyRowsWriter(
            head: ["layer": .string(layer), "count": .number(Double(numbers.count)), "offset": .number(Double(offset))], rows: "fences",
            appended: correlationBytes)
        let page = numbers.dropFirst(offset)
        for f in page.prefix(limit) {
            let fence = snapshot.fences[f].fence
            var row: JSONObject = [
                "id": .string(fence.id), "name": fence.name.map(JSONValue.string) ?? .null,
                "properties": .object(fence.properties), "geometry": .string(fence.geometry.kindName),
            ]
            if fence.truncated { row["truncated"] = .bool(true) }
            guard writer.append(.object(row)) else { break }
        }
        return writer.finish(truncated: writer.count < page.count)
    }
}
