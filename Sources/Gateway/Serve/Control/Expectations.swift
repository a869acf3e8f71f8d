import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Expected arrivals (docs/expectations.md): a dispatcher publishes, retained,
/// `PREFIX/expect/ID` `{"device", "layer", "fence", "by"}`; the gateway publishes one result on
/// `PREFIX/expect/ID/result` (`arrived` at the device's first confirmed enter into the fence, or
/// its stay there, with a fix time at or before `by`; `missed` when the wall clock passes `by`
/// first), then clears the retained topic. An empty payload cancels; a new payload replaces.
/// Rejected payloads get `PREFIX/expect/ID/error`.
///
/// The decisions are an ``ExpectationBook``'s, in one mutex. Enters and stays reach it from the
/// device shards while they build a step's item (``observe(device:notes:stays:into:)``): the
/// result message and the settling then commit in the enter's own transaction. Deadlines, stay
/// checks and clears are this service's loop (every ``interval`` seconds). Every change goes
/// through the ``EventCommitter`` (the expectation rows, the result as an outbox message with its
/// deterministic id), so a restart or a `kill -9` neither loses nor repeats a decision, and the
/// outbox delivers the result at least once.
final class Expectations: Service, Sendable {
    let name = "expectations"
    let prefix: String
    /// `PREFIX/expect/ID`, and their error topics.
    private let topics: ControlTopics
    let client: MQTTClient
    let store: GatewayStore
    let committer: EventCommitter
    let warnings: Warnings
    let logger: Logger
    /// `output.qos` of the results.
    let qos: Int
    /// ``payloadLimit``, or `input.maxPayload` if smaller: a larger payload is rejected.
    let maxPayload: Int
    /// The largest expectation payload (open ones are kept in memory: at most 100 MB for
    /// ``capacity`` of them; a real one is about 120 bytes).
    static let payloadLimit = 1024
    let snapshot: @Sendable () -> EngineSnapshot
    /// How soon work left by the loop (a clear whose commit is not stored yet, a stay check
    /// being answered) is looked at again (seconds).
    let interval: Double
    /// The most open expectations.
    static let capacity = 100_000
    /// The most expectations a query reply lists.
    static let replyLimit = 1000
    /// Settled rows whose retained copy never came back are deleted after this long (seconds).
    static let settledRetention: Double = 30 * 86400

    private let book: LeveledMutex<ExpectationBook>
    /// The book's open count, read without its lock on the update path.
    private let openCount = Atomic<Int>(0)
    /// Questions about a device's stays, answered by its shard (``MonitorPool`` reads them).
    private let questions: AsyncStream<DeviceShard.DeviceQuestion>.Continuation
    /// Stay checks to make, and decided ids whose retained topic is to be cleared once committed.
    private let work = LeveledMutex<(checks: [(ExpectedArrival, Int)], clears: [(id: String, resultID: String)])>(
        ([], []), level: .expectationWork)
    /// Fired by ``shutdown()``: the loop ends.
    private let stop = StopSignal()
    /// Wakes the loop: an expectation opened, changed or decided (a deadline, a stay check or a clear to do).
    private let wakeup = Wakeup()
    /// The loop sleeps at most this long while expectations are open (seconds): their deadlines
    /// are wall-clock times, and the wall clock may be stepped meanwhile.
    static let longestSleep: Double = 60
    /// Fired when the loop has returned.
    private let exited = StopSignal()

    /// Reads the stored expectations (deleting settled ones older than ``settledRetention``).
    init(
        config: GatewayConfig, client: MQTTClient, store: GatewayStore, committer: EventCommitter, warnings: Warnings, logger: Logger,
        snapshot: @escaping @Sendable () -> EngineSnapshot, questions: AsyncStream<DeviceShard.DeviceQuestion>.Continuation,
        interval: Double = 0.2, capacity: Int = Expectations.capacity
    ) async {
        self.questions = questions
        prefix = config.output.prefix
        topics = ControlTopics(prefix: config.output.prefix, kind: "expect", levels: 1, client: client, warnings: warnings)
        self.client = client
        self.store = store
        self.committer = committer
        self.warnings = warnings
        self.logger = logger
        qos = config.output.qos
        maxPayload = min(config.input.maxPayload, Self.payloadLimit)
        self.snapshot = snapshot
        self.interval = interval
        let (book, checks) = await Self.load(from: store, capacity: capacity, warnings: warnings, logger: logger)
        work.withLock { $0.checks = checks }
        openCount.store(book.openCount, ordering: .relaxed)
        self.book = LeveledMutex(book, level: .expectationBook)
    }

    /// The book of the expectations stored in `store` (settled ones older than
    /// ``settledRetention`` deleted first), and the stay checks its open ones need: at most
    /// `capacity` open ones are read (those accepted first), and at most as many settled ones as
    /// fill a live book (`2 x capacity` entries); the rest stay in the database, counted in a
    /// warning. Every open one is decided again from its device's stay (``checkStays()``).
    static func load(
        from store: GatewayStore, capacity: Int, warnings: Warnings, logger: Logger
    ) async -> (ExpectationBook, [(ExpectedArrival, Int)]) {
        var book = ExpectationBook(capacity: capacity)
        var checks: [(ExpectedArrival, Int)] = []
        do {
            try await store.purgeSettledExpectations(before: WallClock.now() - Self.settledRetention)
            let capacity = book.capacity
            let stored = try await store.expectations(openLimit: capacity, settledLimit: capacity)
            for action in book.restore(stored.rows, leftOut: stored.openLeftOut) {
                if case .checkStay(let expectation, let generation) = action { checks.append((expectation, generation)) }
            }
            if !stored.rows.isEmpty {
                logger.notice("expectations restored from the database", [
                    "open": "\(book.openCount)", "settled": "\(stored.rows.count - book.openCount)",
                ])
            }
            if stored.openLeftOut + stored.settledLeftOut > 0 {
                let text = "\(stored.openLeftOut) open and \(stored.settledLeftOut) settled expectations in the database were left out at "
                    + "start: at most \(capacity) are open at once (\(book.openCount) restored); they stay stored for a later start"
                logger.warning(text, ["open.left.out": "\(stored.openLeftOut)", "settled.left.out": "\(stored.settledLeftOut)"])
                warnings.set("expectations-left-out", text)
            }
        } catch {
            warnings.set("expectations-store", "cannot read the saved expectations: \(error)")
        }
        return (book, checks)
    }

    /// The topic filter the gateway subscribes to.
    var filter: String { topics.filter }

    /// Whether `topic` is `PREFIX/expect/ID` (one level), compared as bytes (asked of every message).
    func handles(_ topic: String) -> Bool { topics.matches(topic) }

    // MARK: Messages

    /// Applies one message of `PREFIX/expect/ID` at once: an expectation, or (empty) a cancel.
    func apply(_ message: MQTTMessage) {
        let id = topics.name(of: message.topic)
        let now = WallClock.now()
        if message.payload.isEmpty {
            apply { $0.cancel(id) }
            warnings.clear("expect-\(id)")
            return
        }
        switch ExpectedArrival.parse(message.payload, id: id, topic: message.topic, snapshot: snapshot(), maxPayload: maxPayload, received: now) {
        case .failure(let problem):
            reject(id, problem.message)
        case .success(let expectation):
            apply { $0.offer(expectation, now: now) }
            warnings.clear("expect-\(id)")
        }
    }

    /// Runs `body` on the book and performs its actions; the commits are handed over under the
    /// book's lock, so the database sees the changes of an id in the order they were decided.
    private func apply(_ body: (inout ExpectationBook) -> [ExpectationBook.Action]) {
        var publish: [ExpectationBook.Action] = []
        var actionsWereEmpty = true
        book.withLock { b in
            let actions = body(&b)
            actionsWereEmpty = actions.isEmpty
            var item = EventCommitter.Item()
            for action in actions {
                switch action {
                case .store(let change): item.expectations.append(change)
                case .decide(let decision): append(decision, to: &item)
                case .checkStay(let expectation, let generation): work.withLock { $0.checks.append((expectation, generation)) }
                case .clearRetained, .reject: publish.append(action)
                }
            }
            openCount.store(b.openCount, ordering: .relaxed)
            if !item.expectations.isEmpty { _ = committer.enqueue(item) }
        }
        if !publish.isEmpty || !actionsWereEmpty { wakeup.poke() }
        for action in publish {
            switch action {
            case .clearRetained(let id): clearRetained(id)
            case .reject(let id, let reason): reject(id, reason)
            default: break
            }
        }
    }

    /// Commits `decisions` (from the deadline loop or a stay check).
    private func commit(_ decisions: [ExpectationDecision]) {
        guard !decisions.isEmpty else { return }
        var item = EventCommitter.Item()
        for decision in decisions { append(decision, to: &item) }
        _ = committer.enqueue(item)
    }

    /// The settling and the result message of `decision`; the clear follows once committed.
    private func append(_ decision: ExpectationDecision, to item: inout EventCommitter.Item) {
        let expectation = decision.expectation
        item.expectations.append(.settle(decision.row))
        item.outbox.append(OutboxMessage(
            destination: .local, eventID: decision.id, topic: "\(prefix)/expect/\(expectation.id)/result",
            payload: decision.resultJSON(emitted: WallClock.now()).serializedBytes(), qos: qos))
        work.withLock { $0.clears.append((id: expectation.id, resultID: decision.id)) }
        wakeup.poke()
        logger.info("expectation settled", [
            "expectation": expectation.id, "device.id": expectation.device, "result": decision.result,
            "time": ISO8601Time.format(decision.time),
        ])
    }

    /// Publishes why a payload was rejected (not retained), shaped like a runtime fence's error,
    /// and sets a status warning.
    private func reject(_ id: String, _ reason: String) {
        topics.reject(id, ["expectation": .string(id)], reason: reason,
                      warning: "expect-\(id)", "expectation \(id) rejected (a previous version, if any, stays): \(reason)")
    }

    private func clearRetained(_ id: String) {
        do {
            try topics.clearRetained(id)
        } catch {
            // The retained copy comes back at the next connect and is cleared then.
            book.withLock { $0.clearFailed(id) }
            logger.debug("cannot clear a settled expectation's topic", ["expectation": id, "error": "\(error)"])
        }
    }

    // MARK: The update path

    /// Called by a device shard while it builds a step's item (under its lock) when the step
    /// changed the device's state or notified: each confirmed enter (inferred ones included) and
    /// each confirmed stay (`stays`, as the step left them) may meet an open expectation of the
    /// device; the decisions join `item`, so they commit with the enter.
    func observe(device: String, notes: [FenceNotification], stays: [DeviceMonitor.Stay], into item: inout EventCommitter.Item) {
        guard openCount.load(ordering: .relaxed) > 0 else { return }
        book.withLock { b in
            guard b.hasOpen(device: device) else { return }
            let now = WallClock.now()
            var decisions: [ExpectationDecision] = []
            for note in notes where note.type == .enter {
                decisions += b.arrival(device: device, layer: note.layer, fence: note.fenceID, time: note.position.time, now: now)
            }
            for stay in stays.sorted(by: { $0.since < $1.since }) where b.hasOpen(device: device) {
                decisions += b.arrival(device: device, layer: stay.layer, fence: stay.fence, time: stay.since, now: now)
            }
            for decision in decisions { append(decision, to: &item) }
            openCount.store(b.openCount, ordering: .relaxed)
        }
    }

    // MARK: Queries

    /// The reply to `{"expectations": DEVICE_OR_*}`: the open expectations (of one device, or
    /// all for `*`), by deadline: `{"expectations": [{"expectation", "device", "layer", "fence",
    /// "by", "received"}], "count": N}`, at most ``replyLimit`` listed (`"truncated": true` beyond).
    func list(device: String) -> JSONValue {
        let open = book.withLock { $0.open(device: device == "*" ? nil : device) }
        let rows: [JSONValue] = open.prefix(Self.replyLimit).map { e in
            .object([
                "expectation": .string(e.id), "device": .string(e.device), "layer": .string(e.layer), "fence": .string(e.fence),
                "by": .string(ISO8601Time.format(e.by)), "received": .string(ISO8601Time.format(e.received, milliseconds: true)),
            ])
        }
        var reply: JSONObject = ["expectations": .array(rows), "count": .number(Double(open.count))]
        if open.count > Self.replyLimit { reply["truncated"] = .bool(true) }
        return .object(reply)
    }

    // MARK: The loop

    /// The deadlines, the stay checks, the clears: first ``interval`` after the start, then
    /// whenever something was opened, changed or decided (a poke), at the next deadline (at
    /// most ``longestSleep`` ahead), and every ``interval`` while work is left; with nothing
    /// open it sleeps until poked.
    func run() async throws {
        defer { exited.fire() }
        guard await stop.sleep(seconds: interval) else { return }
        await repeating(until: stop, wakeup: wakeup) {
            let now = WallClock.now()
            var due: [ExpectationDecision] = []
            book.withLock { b in
                due = b.tick(now: now)
                commit(due)
                openCount.store(b.openCount, ordering: .relaxed)
            }
            await checkStays()
            await clearSettled()
            return nextLook()
        }
    }

    /// When the loop looks next (monotonic; nil: when poked).
    private func nextLook() -> Double? {
        let now = MonotonicClock.now()
        if work.withLock({ !$0.checks.isEmpty || !$0.clears.isEmpty }) { return now + interval }
        let deadline = book.withLock { $0.nextDeadline }
        guard deadline.isFinite else { return nil }
        // Woken in the millisecond after the deadline: a miss's `emitted`, written to the
        // millisecond, is never before its `by`.
        let wait = ((deadline * 1000).rounded(.down) + 1) / 1000 - WallClock.now()
        // Passed: an expectation whose stay check is being answered (the answer decides it).
        return now + (wait > 0 ? min(wait, Self.longestSleep) : interval)
    }

    /// Stops the loop, then answers the stay checks still pending (the monitors stop after
    /// this service, so they still answer), until 3 s after the stop began. A check not
    /// answered by then is not dropped: its expectation is stored as open (the committer stops
    /// after this service and commits what it holds), and the next start checks it again.
    func shutdown() async {
        stop.fire()
        let deadline = MonotonicClock.now() + 3
        _ = await exited.sleep(seconds: 3)
        guard exited.isFired else { return }
        await checkStays(until: deadline)
        let left = work.withLock { $0.checks.count }
        if left > 0 { logger.notice("stay checks left to the next start (their expectations are stored as open)", ["checks": "\(left)"]) }
    }

    /// Asks the device shards whether the devices of newly opened (or restored) expectations are
    /// in their fences (a stay that began before the expectation arrived meets it). Checks not
    /// answered (the monitors stopped) or not asked by `deadline` stay queued.
    private func checkStays(until deadline: Double = .infinity) async {
        var checks = work.withLock { w in defer { w.checks = [] }; return w.checks }[...]
        while let (expectation, generation) = checks.first, MonotonicClock.now() < deadline {
            guard let since = await staySince(expectation) else { break }
            checks.removeFirst()
            book.withLock { b in
                commit(b.stay(expectation.id, generation: generation, since: since, now: WallClock.now()))
                openCount.store(b.openCount, ordering: .relaxed)
            }
        }
        if !checks.isEmpty { work.withLock { $0.checks = Array(checks) + $0.checks } }
    }

    /// The fix time since which the device has been confirmed inside the expectation's fence
    /// (the earliest of its triggers' stays; `.some(nil)`: not inside), or nil when the
    /// monitors no longer answer (the gateway stops): then nothing is decided.
    private func staySince(_ expectation: ExpectedArrival) async -> Double?? {
        var unasked = false
        let answer = await withCheckedContinuation { c in
            // Not enqueued: the pool has stopped reading (the gateway stops).
            if case .terminated = questions.yield(DeviceShard.DeviceQuestion(device: expectation.device, reply: c)) {
                unasked = true
                c.resume(returning: DeviceShard.QueryAnswer())
            }
        }
        if unasked { return nil }
        let states = await answer.allStates(store: store, snapshot: snapshot())
        var since: Double?
        for stay in DeviceStateStay.stays(in: states, layer: expectation.layer, fence: expectation.fence) {
            guard let time = stay.since else { continue }
            since = min(since ?? time, time)
        }
        return .some(since)
    }

    /// Clears the retained topics of expectations whose decision is committed (and still what
    /// their id holds). One not in the database yet (a commit still queued, or refused and being
    /// retried) waits for the next round.
    private func clearSettled() async {
        let clears = work.withLock { w in defer { w.clears = [] }; return w.clears }
        guard !clears.isEmpty else { return }
        await committer.flush()
        let stored: [String: String]
        do {
            stored = try await store.expectationResults(clears.map(\.id))
            warnings.clear("expectations-store", resolved: "expectations are read again")
        } catch {
            warnings.set("expectations-store", "cannot read the settled expectations (their topics are cleared later): \(error)")
            work.withLock { $0.clears = clears + $0.clears }
            return
        }
        var later: [(id: String, resultID: String)] = []
        for clear in clears {
            guard stored[clear.id] == clear.resultID else {
                if book.withLock({ $0.entries[clear.id]?.status == .settled(resultID: clear.resultID) }) { later.append(clear) }
                continue
            }
            if book.withLock({ $0.clearing(clear.id, resultID: clear.resultID) }) { clearRetained(clear.id) }
        }
        if !later.isEmpty { work.withLock { $0.clears += later } }
    }
}
