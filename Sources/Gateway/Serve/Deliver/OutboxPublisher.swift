import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Delivers one destination's committed events (`local`: the main broker, `remote`: the
/// upstream) in order: its outbox table's rows (OwnTracks transitions, refused events, rows from
/// before schema 5), then its stream on the journal (the events themselves), each in order.
///
/// At most `window` events are handed to libmosquitto at a time; libmosquitto resends those
/// itself after a reconnect, so they are never handed over twice in one run. A message stops
/// waiting only when the broker acknowledged it with success: its table row is deleted, and
/// the stream is settled up to the oldest stream event still in flight. A failure (v5 reason
/// >= 0x80, such as an ACL denial) keeps it (a stream event moves to the table, so the stream
/// goes on), counts it and raises a warning; it is tried again after a restart. An event
/// libmosquitto refuses for good (larger than the broker's Maximum Packet Size, say) is
/// parked: it leaves the outbox, stays in the journal, is counted (`undeliverable`) and
/// warned about, and the events after it go on. Events that could not be committed
/// (database fault) are published from memory instead, up to a cap.
///
/// The bookkeeping is ``OutboxWindow``'s, a state machine held in one `Mutex`; this class only
/// feeds it and performs what it returns (publishes, reads, commits, warnings). Events just
/// committed to the stream are handed to libmosquitto by a job on the network thread that the
/// committer queues (``deliverFresh(rows:)``), when nothing that ``run()`` hands over can
/// come before them (the usual case): one thread hop from the commit to the publish instead
/// of two. Everything else (database reads, the table, acknowledgements, settling) is
/// ``run()``'s, and while it hands messages over, fresh ones wait for it.
final class OutboxPublisher: CommittedOutbox, Service, Sendable {
    enum Signal: Sendable {
        /// Rows were committed that are only in the database (read them back).
        case committed
        /// Rows were committed and handed over in memory (``deliverFresh(rows:)``).
        case fresh
        case acknowledged(MQTTAcknowledgement)
        case connected
        /// The acknowledgements gathered since the last progress commit are due.
        case progressDue
    }

    /// Acknowledgements and the stream's settling ride with the next group commit
    /// (``takeProgress()``); when none comes they are committed on their own after this long
    /// (seconds), at once for an event the broker refused, and at the end. Waiting only delays
    /// removal: after a `kill -9` the events acknowledged since are sent again, with the same
    /// ids (docs/configuration.md "Durability").
    static let progressInterval = 2.0

    let name: String
    let destination: OutboxDestination
    let client: MQTTClient
    let store: GatewayStore
    let window: Int
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    /// Cap of events kept in memory while the database fails.
    let volatileCap: Int

    private let signals: BoundedQueue<Signal>
    private let committedPending = Atomic<Bool>(false)
    private let freshPending = Atomic<Bool>(false)
    /// The cursor, the window, what waits in memory and what is due to be committed.
    private let machine: LeveledMutex<OutboxWindow>
    /// Rows kept after a failed acknowledgement (counted in the status warnings).
    let failedCount = Atomic<Int>(0)
    /// Events parked as undeliverable, since start.
    let undeliverableCount = Atomic<Int>(0)
    /// Events kept in memory (database fault) that were dropped past the cap, since start.
    let volatileDropped = Atomic<Int>(0)
    /// Events handed to libmosquitto and not yet acknowledged.
    let inflightCount = Atomic<Int>(0)
    /// Told when nothing is in flight any more or the connection is lost, for
    /// ``waitForAcknowledgements(within:)``.
    private let settled = Changes()
    /// Acknowledgements taken on the network thread as they arrived (not queued for ``run()``).
    let acknowledgementsTakenOnArrival = Atomic<Int>(0)
    /// A `progressDue` signal will be sent (a timer runs).
    private let progressTimer = Atomic<Bool>(false)

    init(
        destination: OutboxDestination, client: MQTTClient, store: GatewayStore, window: Int,
        counters: GatewayCounters, warnings: Warnings, logger: Logger, volatileCap: Int = 100_000
    ) {
        self.name = "outbox-\(destination.rawValue)"
        self.destination = destination
        self.client = client
        self.store = store
        self.window = window
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        self.volatileCap = volatileCap
        self.signals = BoundedQueue(capacity: window + 1024)
        self.machine = LeveledMutex(OutboxWindow(
            destination: destination, window: window, volatileCap: volatileCap, progressInterval: Self.progressInterval),
            level: .outboxWindow)
    }

    /// Feeds the machine under its lock and publishes how many messages are in flight.
    /// The progress due, for the committer's next group commit to carry
    /// (``OutboxWindow/progressForGroupCommit(now:)``); answer with ``progressCarried(committed:)``.
    package func takeProgress() -> StoreBatch? {
        withWindow { $0.progressForGroupCommit(now: MonotonicClock.now()) }
    }

    /// The group commit that carried ``takeProgress()``'s batch ended.
    package func progressCarried(committed: Bool) {
        withWindow { window in
            if committed { window.progressCommitted(outboxSequences: []) } else { window.progressCommitFailed() }
        }
    }

    private func withWindow<Result: Sendable>(_ body: (inout OutboxWindow) -> Result) -> Result {
        let (result, settles) = machine.withLock { window in
            let result = body(&window)
            inflightCount.store(window.inflightCount, ordering: .relaxed)
            return (result, window.inflightCount == 0)
        }
        if settles { settled.changed() }
        return result
    }

    /// Delivers rows just committed to this destination's outbox, from memory: they go out
    /// without a database read (which would wait behind the next group commit), on the network
    /// thread, or through ``run()`` when something older must go first. No rows: as
    /// ``deliverWaiting()``.
    func deliverFresh(rows: [OutboxRow]) {
        guard !rows.isEmpty else { return deliverWaiting() }
        withWindow { $0.freshRowsCommitted(rows) }
        client.perform { [self] in publishFresh() }
    }

    /// Tells ``run()`` that fresh rows wait for it.
    private func signalFresh() {
        if !freshPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.fresh)
        }
    }

    /// On the network thread: hands the fresh stream events to libmosquitto when the machine
    /// says so (``OutboxWindow/takeFresh()``), outside its lock, then records their message ids
    /// (``OutboxWindow/freshPublished(_:)``); otherwise leaves them to ``run()``. Acknowledgements
    /// are taken on this thread too, so none can come between a publish and that record. Run
    /// anywhere else (the committer's thread, when no connection loop runs and
    /// ``MQTTClient/perform(_:)`` runs the job in place) it leaves them to ``run()``, whose
    /// publishes go through the network thread.
    private func publishFresh() {
        guard client.isNetworkThread else { return signalFresh() }
        var action = withWindow { $0.takeFresh() }
        if case .publish(let messages) = action {
            let publications = messages.map { message in
                Self.publication(Result {
                    try client.publish(topic: message.topic, payload: message.payload, qos: MQTTQoS(message.qos))
                })
            }
            let parked: [OutboxWindow.Parked]
            (action, parked) = withWindow { ($0.freshPublished(publications), $0.takeParked()) }
            report(parked)
        }
        if action == .wakeRun { signalFresh() }
    }

    /// What a publish's result means for the outbox.
    static func publication(_ result: Result<Int32, any Error>) -> OutboxWindow.Publication {
        switch result {
        case .success(let id): .inFlight(id)
        case .failure(let error as MosquittoError) where error.isPermanentForPublish: .undeliverable(reason: error.message)
        case .failure: .failed
        }
    }

    /// Counts and warns about parked events (never under the machine's lock), naming the
    /// trigger, device and fence of the last; the stream settles past them at the next
    /// progress commit.
    private func report(_ parked: [OutboxWindow.Parked]) {
        guard let last = parked.last else { return }
        counters.undeliverable.add(parked.count, ordering: .relaxed)
        let total = undeliverableCount.add(parked.count, ordering: .relaxed).newValue
        let event = EventSummary(payload: last.message.payload)
        let what = "event \(last.message.eventID) (trigger \(event.trigger), device \(event.device), fence \(event.fence), \(last.message.payload.count) bytes)"
        warnings.set("outbox-\(destination.rawValue)-undeliverable",
                     "\(total) event\(total == 1 ? "" : "s") could not be delivered to the \(destination.rawValue) broker and \(total == 1 ? "is" : "are") kept in the journal only; last: \(what): \(last.reason)")
        for item in parked {
            logger.error("an event cannot be delivered: it leaves the outbox and stays in the journal",
                         ["outbox": destination.rawValue, "event.id": item.message.eventID, "event.bytes": "\(item.message.payload.count)",
                          "mqtt.topic": item.message.topic, "error": item.reason])
        }
        armProgressTimer(at: Self.progressInterval)
    }

    /// Has ``run()`` deliver what waits in the database (rows it must read back) or in memory
    /// (events the database refused): nothing is handed over here.
    func deliverWaiting() {
        if !committedPending.exchange(true, ordering: .acquiringAndReleasing) {
            _ = signals.trySend(.committed)
        }
    }

    /// Called on libmosquitto's network thread for every acknowledgement of `client`.
    /// The usual one, a stream event's success while nothing waits for the room it leaves, is
    /// taken here and settled by ``run()`` at the next progress commit (the timer wakes it):
    /// waking ``run()`` for each burst of acknowledgements was a pool thread's wake-up per
    /// event. Table rows, refusals, and room that a backlog waits for go to ``run()``.
    func acknowledged(_ ack: MQTTAcknowledgement) {
        client.assertOnNetworkThread()
        if withWindow({ $0.takeAcknowledgementOnArrival(ack) }) {
            counters.acked.add(1, ordering: .relaxed)
            acknowledgementsTakenOnArrival.add(1, ordering: .relaxed)
            armProgressTimer(at: Self.progressInterval)
            return
        }
        if !signals.trySend(.acknowledged(ack)) {
            logger.error("acknowledgement queue full: the event stays in the outbox and is sent again after a restart",
                         ["outbox": destination.rawValue])
        }
    }

    /// The broker connection came up: deliver whatever waits.
    func connected() { _ = signals.trySend(.connected) }

    /// The broker connection went down: a wait for acknowledgements ends.
    func disconnected() { settled.changed() }

    /// Publishes events of this destination that could not be committed, from memory (oldest
    /// dropped past the cap).
    func publishVolatile(_ messages: [OutboxMessage]) {
        let dropped = withWindow { $0.keepVolatile(messages) }
        if dropped > 0 {
            let total = volatileDropped.add(dropped, ordering: .relaxed).newValue
            warnings.set("outbox-\(destination.rawValue)-volatile",
                         "the database fails and \(total) \(destination.rawValue) events kept in memory were dropped, oldest first (cap \(volatileCap))")
        }
        deliverWaiting()
    }

    var deliveredFromMemory: Set<String> { withWindow { $0.deliveredFromMemory } }

    func committedFromMemory(_ events: Set<String>) {
        guard !events.isEmpty else { return }
        withWindow { $0.committedFromMemory(events) }
    }

    /// Waits (at most `seconds`) until no event is in flight or the connection is gone.
    func waitForAcknowledgements(within seconds: Double) async {
        _ = await settled.wait(until: { inflightCount.load(ordering: .relaxed) == 0 || !client.isConnected },
                               by: MonotonicClock.now() + seconds)
    }

    func shutdown() async {
        // Give the in-flight events a moment to be acknowledged (the remote outbox: its
        // connection stops after it), then stop.
        await waitForAcknowledgements(within: 5)
        signals.finish()
    }

    func run() async throws {
        let settled = await store.settledStream(destination)
        withWindow { $0.start(settled: settled) }
        var batch: [Signal] = []
        await pump()
        while let first = await signals.next() {
            batch.removeAll(keepingCapacity: true)
            batch.append(first)
            signals.drain(upTo: 4096, into: &batch)
            let refusals: [(OutboxWindow.Handed, MQTTAcknowledgement)] = withWindow { window in
                var refusals: [(OutboxWindow.Handed, MQTTAcknowledgement)] = []
                for signal in batch {
                    switch signal {
                    case .committed:
                        committedPending.store(false, ordering: .releasing)
                        window.committed()
                    case .fresh:
                        freshPending.store(false, ordering: .releasing)
                    case .connected:
                        window.connected()
                    case .progressDue:
                        break
                    case .acknowledged(let ack):
                        switch window.acknowledged(ack) {
                        case .unknown: break
                        case .delivered: counters.acked.add(1, ordering: .relaxed)
                        case .refused(let handed): refusals.append((handed, ack))
                        }
                    }
                }
                return refusals
            }
            for (handed, ack) in refusals {
                let count = failedCount.add(1, ordering: .relaxed).newValue
                let reason = "reason 0x\(String(ack.reasonCode, radix: 16)): \(ack.reason)"
                warnings.set("outbox-\(destination.rawValue)-refused",
                             "the \(destination.rawValue) broker refused \(count) event\(count == 1 ? "" : "s") (last \(reason)); they stay in the outbox and are sent again after a restart")
                logger.warning("the broker refused an event; it stays in the outbox",
                               ["outbox": destination.rawValue, "place": handed.place, "mqtt.reason": reason])
            }
            // Hand out what the acknowledgements made room for first: committing them waits
            // for the store's thread, behind the next group commit. The progress timer alone
            // pumps only for what the database or memory still holds (after a failed read, say):
            // fresh rows come with a signal of their own, and a pump would take those the
            // network thread is about to publish.
            let timerOnly = batch.allSatisfy { if case .progressDue = $0 { true } else { false } }
            if !timerOnly || withWindow({ $0.holdsUnhanded }) {
                await pump()
            }
            await commitProgress(final: false)
        }
        await commitProgress(final: true)
    }

    /// Sends `progressDue` after `delay` seconds, unless a timer runs already.
    private func armProgressTimer(at delay: Double) {
        guard !progressTimer.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { [self] in
            try? await Task.sleep(for: .seconds(delay))
            progressTimer.store(false, ordering: .releasing)
            // A full queue has signals to take: the next batch finds the commit due then.
            _ = signals.trySend(.progressDue)
        }
    }

    /// Commits acknowledgements, refused stream events (as table rows, not sent again in this
    /// run) and how far the stream is settled, when due (``OutboxWindow/progressDue(now:final:)``).
    /// On failure all of it is kept for the next try.
    private func commitProgress(final: Bool) async {
        var action = withWindow { $0.progressDue(now: MonotonicClock.now(), final: final) }
        while true {
            switch action {
            case .none:
                return
            case .armTimer(let delay):
                return armProgressTimer(at: delay)
            case .readRefused(let sequence):
                // Still in the stream (it is not settled past while in flight): read it back.
                do {
                    let row = try await store.outboxStream(destination, after: sequence - 1, limit: 1).first
                    action = withWindow { $0.refusedRead(row) }
                } catch {
                    // The stream then stays before it for this run: it is sent again after a restart.
                    logger.warning("could not read a refused event", ["outbox": destination.rawValue, "journal.row": "\(sequence)", "error": "\(error)"])
                    action = withWindow { $0.refusedReadFailed() }
                }
            case .commit(let work):
                do {
                    let receipt = try await store.commit(work)
                    // The refused events' new rows (the batch queues nothing else).
                    withWindow { $0.progressCommitted(outboxSequences: receipt.outbox.map(\.sequence)) }
                } catch {
                    logger.warning("could not commit the outbox's acknowledgements (they are sent again after a restart)", ["outbox": destination.rawValue, "error": "\(error)"])
                    withWindow { $0.progressCommitFailed() }
                }
                return
            }
        }
    }

    /// Hands events to libmosquitto as the machine asks (``OutboxWindow/startPump()``) until
    /// the window is full or nothing waits: events kept in memory, then outbox table rows, then
    /// the stream on the journal. They are published on the network thread
    /// (``MQTTClient/publish(_:)``), a batch at a time. Fresh rows wait for it meanwhile.
    private func pump() async {
        var action = withWindow { $0.startPump() }
        while true {
            switch action {
            case .done:
                return
            case .publish(let messages):
                let results = await client.publish(messages.map {
                    MQTTMessage(topic: $0.topic, payload: $0.payload, qos: MQTTQoS($0.qos))
                })
                let parked: [OutboxWindow.Parked]
                (action, parked) = withWindow { ($0.published(results.map(Self.publication)), $0.takeParked()) }
                report(parked)
            case .read(let source, let after, let limit):
                do {
                    let rows = source == .table ? try await store.outbox(destination, after: after, limit: limit)
                                                : try await store.outboxStream(destination, after: after, limit: limit)
                    action = withWindow { $0.read(rows) }
                } catch {
                    logger.warning("could not read the outbox", ["outbox": destination.rawValue, "error": "\(error)"])
                    action = withWindow { $0.readFailed() }
                }
            }
        }
    }
}

/// The trigger, device and fence an event payload names, for a warning ("?" where it does not).
private struct EventSummary {
    var trigger = "?", device = "?", fence = "?"

    init(payload: [UInt8]) {
        guard case .object(let event)? = try? JSONReader.parse(payload, file: "event", dialect: .json).value else { return }
        if case .string(let s)? = event["trigger"] { trigger = s }
        if case .string(let s)? = event["device"] { device = s }
        if case .object(let f)? = event["fence"], case .string(let layer)? = f["layer"], case .string(let id)? = f["id"] {
            fence = layer + "/" + id
        }
    }
}

extension MQTTQoS {
    /// QoS 0 or 1 from the config's number.
    init(_ level: Int) { self = level == 0 ? .atMostOnce : .atLeastOnce }
}
