import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Trips on the control plane (docs/trips.md): a dispatcher publishes, retained,
/// `PREFIX/trips/TRIP_ID` (``TripRequest``); the device's shard follows the trip along its route
/// and publishes its progress and events (`DeviceShard+Trips.swift`); once it has arrived or was
/// missed the gateway clears the retained request. An empty payload cancels (the progress topic
/// is cleared); a new payload replaces. Rejected payloads get `PREFIX/trips/TRIP_ID/error`.
///
/// The requests, budgets and settling are a ``TripBook``'s, in one mutex; the book's changes are
/// committed through the ``EventCommitter`` (the trip rows), and orders go to the device's shard
/// through ``MonitorPool`` in the order they were decided. Clears wait for the settling to be
/// committed (this service's loop), so a restart neither loses nor repeats a trip.
///
/// With `feeds[].shard`, only the trips of this gateway's share of the devices are kept; the
/// others are ignored, as their updates are (docs/trips.md "Several gateways").
final class Trips: Service, Sendable {
    let name = "trips"
    let prefix: String
    /// `PREFIX/trips/TRIP_ID`, and their error topics.
    private let topics: ControlTopics
    let client: MQTTClient
    let store: GatewayStore
    let committer: EventCommitter
    let warnings: Warnings
    let logger: Logger
    let snapshot: @Sendable () -> EngineSnapshot
    /// `fences.maxVertices`: a route with more positions is rejected.
    let maxVertices: Int
    /// `runtime.maxBytes`, shared with the runtime fences (``RuntimeFences/heldBytes``).
    let maxBytes: Int
    let fenceBytes: @Sendable () -> Int
    /// Told what the open trips hold of `runtime.maxBytes` after every change.
    let tripBytes: @Sendable (Int) -> Void
    /// Whether this gateway decides `device`'s trips (its feeds' shards).
    let owns: @Sendable (String) -> Bool
    /// The most open trips.
    static let capacity = 10_000
    /// Settled rows are deleted after this long (seconds).
    static let settledRetention: Double = 30 * 86400
    /// How soon a clear whose settling is not stored yet is looked at again (seconds).
    let interval: Double
    /// An ended trip's progress topic is cleared this long after its end (seconds): a day.
    let progressKept: Double
    /// The trip deadlines of the loop are wall-clock times: it looks at most this long ahead.
    static let longestSleep = 60.0
    /// Publishes (and clears) the progress topics, retained.
    let statePublisher: StatePublisher?

    private let book: LeveledMutex<TripBook>
    /// Orders for the shards, read by ``MonitorPool``.
    private let orders: AsyncStream<TripOrder>.Continuation
    /// Trips read from the database at start, for the shards (taken once by the pool).
    private let restored: Mutex<[TripRun]>
    /// Settled trips whose retained request is to be cleared once their settling is committed.
    private let clears = LeveledMutex<[(id: String, created: Double)]>([], level: .tripWork)
    /// Progress topics of ended trips, and when (wall clock) each is to be cleared, oldest first.
    private let expiries = LeveledMutex<[(id: String, created: Double, at: Double)]>([], level: .tripWork)
    private let stop = StopSignal()
    private let wakeup = Wakeup()

    /// Reads the stored trips (deleting settled ones older than ``settledRetention``): open ones
    /// are parsed again against the live fences and handed to the shards at start
    /// (``takeRestored()``).
    init(
        config: GatewayConfig, client: MQTTClient, store: GatewayStore, committer: EventCommitter, warnings: Warnings, logger: Logger,
        snapshot: @escaping @Sendable () -> EngineSnapshot, orders: AsyncStream<TripOrder>.Continuation,
        fenceBytes: @escaping @Sendable () -> Int = { 0 }, tripBytes: @escaping @Sendable (Int) -> Void = { _ in },
        statePublisher: StatePublisher? = nil, interval: Double = 0.2, progressKept: Double = 86400, capacity: Int = Trips.capacity
    ) async {
        self.statePublisher = statePublisher
        self.progressKept = progressKept
        prefix = config.output.prefix
        topics = ControlTopics(prefix: prefix, kind: "trips", levels: 1, client: client, warnings: warnings)
        self.client = client
        self.store = store
        self.committer = committer
        self.warnings = warnings
        self.logger = logger
        self.snapshot = snapshot
        self.orders = orders
        self.fenceBytes = fenceBytes
        self.tripBytes = tripBytes
        self.interval = interval
        maxVertices = config.fences.maxVertices
        maxBytes = config.runtime.maxBytes
        owns = Self.owner(config)
        var book = TripBook(capacity: capacity)
        var runs: [TripRun] = []
        var expiries: [(id: String, created: Double, at: Double)] = []
        do {
            try await store.purgeSettledTrips(before: WallClock.now() - Self.settledRetention)
            let current = snapshot()
            for row in try await store.trips() {
                if let settled = row.settled {
                    // A retained copy of its request (its clear did not go out before the stop)
                    // is cleared when the broker sends it; its progress a day after its end.
                    book.restoreSettled(row)
                    if settled + progressKept > WallClock.now() { expiries.append((row.id, row.created, settled + progressKept)) }
                    continue
                }
                let topic = "\(prefix)/trips/\(row.id)"
                switch TripRequest.parse(row.payload, id: row.id, topic: topic, snapshot: current, maxVertices: maxVertices, created: row.created) {
                case .failure(let problem):
                    let text = "trip \(row.id) saved by the last run cannot be followed again: \(problem.message)"
                    logger.warning(text, ["trip": row.id])
                    warnings.set("trip-\(row.id)", text)
                case .success(let request):
                    let committed = row.progress.flatMap { try? TripProgress.Committed(decoding: $0) }
                    guard committed?.state.isFinal != true else {
                        book.restoreSettled(row)
                        continue
                    }
                    book.restoreOpen(row, bytes: request.bytes)
                    runs.append(TripRun(request, restoring: committed))
                }
            }
            if !runs.isEmpty { logger.notice("trips restored from the database", ["open": "\(runs.count)"]) }
        } catch {
            warnings.set("trips-store", "cannot read the saved trips: \(error)")
        }
        tripBytes(book.openBytes)
        self.book = LeveledMutex(book, level: .tripBook)
        self.restored = Mutex(runs)
        self.expiries.withLock { $0 = expiries.sorted { $0.at < $1.at } }
    }

    /// The owner rule: with every MQTT feed sharded (`feeds[].shard`) and no gpsd feed, the
    /// devices of those shards; else every device.
    static func owner(_ config: GatewayConfig) -> @Sendable (String) -> Bool {
        var shards: [FeedShard] = []
        for feed in config.feeds {
            switch feed {
            case .mqtt(_, _, _, let shard?, _): shards.append(shard)
            case .mqtt, .gpsd: return { _ in true }
            }
        }
        if shards.isEmpty { return { _ in true } }
        let owned = shards
        return { device in owned.contains { $0.contains(device) } }
    }

    /// The open trips read at start, for the shards (once).
    func takeRestored() -> [TripRun] { restored.withLock { r in defer { r = [] }; return r } }

    /// The topic filter the gateway subscribes to.
    var filter: String { topics.filter }

    /// Whether `topic` is `PREFIX/trips/TRIP_ID` (one level).
    func handles(_ topic: String) -> Bool { topics.matches(topic) }

    // MARK: Messages

    /// Applies one message of `PREFIX/trips/TRIP_ID`: a trip, or (empty) a cancel.
    func apply(_ message: MQTTMessage) {
        let id = topics.name(of: message.topic)
        if message.payload.isEmpty {
            apply { $0.cancel(id) }
            warnings.clear("trip-\(id)")
            return
        }
        let created = (WallClock.now() * 1000).rounded() / 1000
        switch TripRequest.parse(message.payload, id: id, topic: message.topic, snapshot: snapshot(), maxVertices: maxVertices, created: created) {
        case .failure(let problem):
            reject(id, problem.message)
        case .success(let request):
            guard owns(request.device) else { return }
            let budget = maxBytes - fenceBytes()
            apply { $0.offer(request, budget: budget) }
        }
    }

    /// Runs `body` on the book and performs its actions: the commits and the orders are handed
    /// over under the book's lock, so the database and the shards see an id's changes in the
    /// order they were decided.
    private func apply(_ body: (inout TripBook) -> [TripBook.Action]) {
        var publish: [TripBook.Action] = []
        book.withLock { b in
            var item = EventCommitter.Item()
            for action in body(&b) {
                switch action {
                case .store(let change): item.trips.append(change)
                case .assign(let request):
                    orders.yield(.assign(TripRun(request)))
                    warnings.clear("trip-\(request.id)")
                    logger.info("trip assigned", ["trip": request.id, "device.id": request.device])
                case .cancel(let id, let device, let created, let clearProgress):
                    orders.yield(.cancel(id: id, device: device, created: created, clearProgress: clearProgress))
                case .clearRetained, .reject: publish.append(action)
                }
            }
            if !item.trips.isEmpty { _ = committer.enqueue(item) }
            tripBytes(b.openBytes)
        }
        for action in publish {
            switch action {
            case .clearRetained(let id): clearRetained(id)
            case .reject(let id, let reason): reject(id, reason)
            default: break
            }
        }
    }

    /// Publishes why a payload was rejected (not retained), shaped like a runtime fence's error,
    /// and sets a status warning.
    private func reject(_ id: String, _ reason: String) {
        topics.reject(id, ["trip": .string(id)], reason: reason,
                      warning: "trip-\(id)", "trip \(id) rejected (a previous version, if any, stays): \(reason)")
    }

    private func clearRetained(_ id: String) {
        do {
            try topics.clearRetained(id)
        } catch {
            // The retained copy comes back at the next connect and is cleared then.
            book.withLock { $0.clearFailed(id) }
            logger.debug("cannot clear an ended trip's request", ["trip": id, "error": "\(error)"])
        }
    }

    // MARK: The shards

    /// Called by a shard, under its lock, when trip `id` created at `created` arrived or was
    /// missed: its settling is in the shard's item; the retained request is cleared once that
    /// is committed.
    func ended(id: String, created: Double) {
        let settled = book.withLock { b in
            defer { tripBytes(b.openBytes) }
            return b.ended(id, created: created)
        }
        guard settled else { return }
        clears.withLock { $0.append((id, created)) }
        expiries.withLock { $0.append((id, created, WallClock.now() + progressKept)) }
        wakeup.poke()
    }

    // MARK: The loop

    /// Clears the retained requests of ended trips once their settling is committed (every
    /// ``interval`` while one waits), and their progress topics a day after their end (at the
    /// first due, at most ``longestSleep`` ahead); with neither, sleeps until poked.
    func run() async throws {
        await repeating(until: stop, wakeup: wakeup) {
            await clearSettled()
            let wall = WallClock.now()
            let due = expiries.withLock { e -> [(id: String, created: Double, at: Double)] in
                let count = e.prefix { $0.at <= wall }.count
                defer { e.removeFirst(count) }
                return Array(e.prefix(count))
            }
            for expiry in due {
                // Not when the id holds another trip since (its progress is its own).
                let other = book.withLock { b in b.entries[expiry.id].map { $0.open || $0.created != expiry.created } ?? false }
                if !other { statePublisher?.publish(topic: "\(prefix)/trips/\(expiry.id)/progress", payload: nil) }
            }
            let now = MonotonicClock.now()
            if !clears.withLock({ $0.isEmpty }) { return now + interval }
            guard let next = expiries.withLock({ $0.first?.at }) else { return nil }
            return now + min(max(next - WallClock.now(), 0) + 0.001, Self.longestSleep)
        }
    }

    func shutdown() async { stop.fire() }

    /// The clears whose settling the database holds (and that the id still holds) go out; one
    /// not in the database yet (a commit still queued, or refused and being retried) waits.
    private func clearSettled() async {
        let due = clears.withLock { c in defer { c = [] }; return c }
        guard !due.isEmpty else { return }
        await committer.flush()
        let stored: [String: Double]
        do {
            stored = try await store.settledTrips(due.map(\.id))
            warnings.clear("trips-store", resolved: "trips are read again")
        } catch {
            warnings.set("trips-store", "cannot read the ended trips (their requests are cleared later): \(error)")
            clears.withLock { $0 = due + $0 }
            return
        }
        var later: [(id: String, created: Double)] = []
        for clear in due {
            guard stored[clear.id] == clear.created else {
                // Not stored yet; or replaced or cancelled meanwhile (then nothing is cleared).
                if book.withLock({ $0.isSettled(clear.id, created: clear.created) }) { later.append(clear) }
                continue
            }
            if book.withLock({ $0.clearing(clear.id, created: clear.created) }) { clearRetained(clear.id) }
        }
        if !later.isEmpty { clears.withLock { $0 += later } }
    }
}
