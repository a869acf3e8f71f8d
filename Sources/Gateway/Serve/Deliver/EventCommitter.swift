import Dispatch
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Group commit between the device monitors and the database: monitors hand over what an
/// update decided (state change, events, state publication) without waiting; this service
/// commits everything pending in one transaction once the previous one ended and
/// `gateway.commitInterval` has passed since it began (at once with ``CommitterState/company`` items), then
/// hands the events to the outbox publishers and the device states to the state publisher.
/// So an event and the state change that caused it are committed together, before the event
/// is published (docs/configuration.md "Durability"; docs/architecture.md "Commit and outbox"). Every
/// decision (when a commit starts, what it takes, what follows a refusal, when the database is
/// tried again) is a value's, ``CommitterState`` with its ``CommitRound``s; the database is a
/// ``CommitStore``, so tests reach every failure path with a fake one.
///
/// The commits run on the store's own queue, one at a time. Items that ``LocalBrokerLink`` hands
/// over on the network thread (the feed updates) are committed by that thread itself after its
/// burst of reads (``commitBurst()``), when the store's queue is idle
/// (``GatewayStore/performHereIfIdle(_:)``): then the commit costs no thread wake-up, and the
/// fresh events are published in the same turn. Any other item, and those of a burst that
/// finds the store busy, queue a job there (``GatewayStore/perform(_:)``): the first item while
/// none is queued queues one, and a job that finds more pending when it ends queues the next.
/// A task in between would cost two thread wake-ups per commit (to the task and back), more
/// than a small commit itself.
///
/// Only with `gateway.durability: normal`: a commit then writes the WAL without waiting for
/// the disk (the writer's checkpoint, which syncs, is a store job of its own). With `full`
/// every commit waits for a sync, and the network thread must go on reading meanwhile, so all
/// commits are the store queue's.
/// Where a monitor step's results go (``DeviceShard``): the gateway's ``EventCommitter``.
package protocol StepSink: Sendable {
    /// Hands over one step's results without waiting; true when the caller must wait for room.
    func enqueue(_ item: EventCommitter.Item, inBurst: Bool) -> Bool
    func waitForRoom() async
    /// The same, blocking the calling thread (the network thread).
    func waitForRoomBlocking()
}

/// Where the committer hands one destination's messages: its ``OutboxPublisher``.
package protocol CommittedOutbox: Sendable {
    /// Delivers rows just committed, numbered, in order, from memory.
    func deliverFresh(rows: [OutboxRow])
    /// Messages the database refused, to publish from memory.
    func publishVolatile(_ messages: [OutboxMessage])
    /// Ids of events published from memory that the broker acknowledged.
    var deliveredFromMemory: Set<String> { get }
    /// The database took these events again, with outbox rows (see ``OutboxWindow/committedFromMemory(_:)``).
    func committedFromMemory(_ events: Set<String>)
    /// Acknowledgements and settling due, for the group commit to carry (no rows to insert).
    func takeProgress() -> StoreBatch?
    /// The group commit that carried ``takeProgress()``'s batch ended.
    func progressCarried(committed: Bool)
}

extension CommittedOutbox {
    package var deliveredFromMemory: Set<String> { [] }
    package func committedFromMemory(_ events: Set<String>) {}
    package func takeProgress() -> StoreBatch? { nil }
    package func progressCarried(committed: Bool) {}
}

package final class EventCommitter: Service, StepSink, Sendable {
    /// What one monitor step produced.
    package struct Item: Sendable {
        var state: DeviceStateChange?
        package var events: [JournalEvent] = []
        var outbox: [OutboxMessage] = []
        /// A device's retained state (and what follows from it) to publish once committed.
        var publication: DevicePublication?
        /// Expected arrivals opened, settled or removed (``Expectations``), committed with the rest.
        var expectations: [ExpectationChange] = []
        /// Trips' committed progress (``Trips``, the shards), committed with the rest.
        var trips: [TripChange] = []
        /// Retained topics to publish (a nil payload clears) once committed, in order: trips'
        /// progress (docs/trips.md "Progress").
        var retained: [RetainedMessage] = []

        /// Nothing to commit or publish.
        var isEmpty: Bool {
            state == nil && events.isEmpty && outbox.isEmpty && publication == nil && expectations.isEmpty && trips.isEmpty
                && retained.isEmpty
        }
    }

    /// A retained message published by the ``StatePublisher`` once its item is committed.
    struct RetainedMessage: Sendable, Equatable {
        var topic: String
        /// Nil: the retained message is cleared.
        var payload: [UInt8]?
        /// Published at QoS 0 (a trip's progress between its changes, docs/trips.md "Progress");
        /// else QoS 1.
        var atMostOnce = false
    }

    package let name = "committer"
    /// The database (``GatewayStore`` in `serve`; a fake in tests).
    let store: any CommitStore
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    let publishers: [OutboxDestination: any CommittedOutbox]
    let statePublisher: StatePublisher
    /// Whether the network thread commits its bursts itself (`durability: normal`).
    let commitsBursts: Bool
    /// Where refused batches are kept while the database fails (nil: memory only).
    let spill: SpillFile?
    /// Told after a commit that stored events (journal retention looks at the size then).
    let journalGrew: @Sendable () -> Void
    /// Commits run by that network thread, and commit jobs queued on the store's queue.
    let networkThreadCommits = Atomic<Int>(0)
    let queuedCommits = Atomic<Int>(0)

    /// Everything pending and every decision about it (``CommitterState``).
    private let state: LeveledMutex<CommitterState>
    /// Fired by ``shutdown()``: ``run()`` returns then.
    private let stopped = StopSignal()

    /// `limit`: monitors wait while this many items are pending (back-pressure from a slow
    /// disk). `retryCap`: journal events kept for a retry while the database fails. `retry`:
    /// what the database refused of the spill file at the start, retried after `retryDelay`
    /// as a refused commit is. `interval`: `gateway.commitInterval`.
    package init(
        store: any CommitStore, counters: GatewayCounters, warnings: Warnings, logger: Logger,
        publishers: [OutboxDestination: any CommittedOutbox], statePublisher: StatePublisher,
        limit: Int = 20_000, retryCap: Int = 100_000, spill: SpillFile? = nil, retry: StoreBatch = StoreBatch(),
        interval: Double = 0, retryDelay: Double = 1, journalGrew: @escaping @Sendable () -> Void = {}
    ) {
        self.store = store
        self.journalGrew = journalGrew
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        self.publishers = publishers
        self.statePublisher = statePublisher
        self.commitsBursts = store.durability == .normal
        self.spill = spill
        var initial = CommitterState(interval: interval, limit: limit, retryCap: retryCap, retryDelay: retryDelay)
        let start = initial.resume(retry)
        state = LeveledMutex(initial, level: .committerPending)
        begin(start)
    }

    /// Hands over one step's results without waiting. True when too much is pending: the
    /// caller then waits with ``waitForRoom()`` or ``waitForRoomBlocking()``, after releasing
    /// what it holds (a shard hands over under its lock, so a device's steps stay in order).
    /// `inBurst`: the caller is the network thread in a burst of reads, which ends with
    /// ``commitBurst()`` (unless this fills the committer, nothing is queued now).
    package func enqueue(_ item: Item, inBurst: Bool = false) -> Bool {
        let deferred = inBurst && commitsBursts
        let (mustWait, start) = state.withLock { $0.add(item, deferred: deferred, now: MonotonicClock.now()) }
        begin(start)
        return mustWait
    }

    /// Waits while more than `limit` items are pending.
    package func waitForRoom() async {
        await withCheckedContinuation { c in
            if !state.withLock({ $0.addWaiter({ c.resume() }) }) { c.resume() }
        }
    }

    /// Blocks the calling thread (libmosquitto's network thread) while more than `limit` items
    /// are pending.
    package func waitForRoomBlocking() {
        let gate = ThreadGate()
        if state.withLock({ $0.addWaiter({ gate.open() }) }) { gate.wait() }
    }

    /// Returns once everything handed over before the call is committed (or failed). Queues
    /// the commit itself when none is: the last burst of a network thread that stopped before
    /// its ``commitBurst()`` (the main broker's connection stops first at shutdown) left its
    /// items pending.
    package func flush() async {
        await withCheckedContinuation { c in
            let (idle, start) = state.withLock { $0.flush(c) }
            if idle { c.resume() }
            begin(start)
        }
    }

    package func shutdown() async {
        await flush()
        state.withLock { $0.finish() }
        stopped.fire()
    }

    /// Counts what the spill file dropped at its cap, in the `spill-cap` warning (logged with
    /// each new count). Those events were published from memory and are retried from memory
    /// (up to `retryCap`); only a kill before the database recovers loses them.
    private func spillCapReached(_ spill: SpillFile, _ dropped: SpillFile.Dropped) {
        let total = state.withLock { $0.spillDropped(dropped) }
        let cap = spill.cap % (1 << 20) == 0 ? "\(spill.cap >> 20) MiB" : "\(spill.cap) bytes"
        warnings.set("spill-cap", "the spill file \(spill.path) reached its cap of \(cap): its oldest \(total.batches) refused batches "
            + "(\(total.events) events) were dropped from it; a kill before the database recovers loses them")
    }

    /// The commits run as jobs on the store's queue; this only waits for ``shutdown()``.
    package func run() async throws {
        await stopped.wait()
    }

    /// On the network thread after each burst of reads (``LocalBrokerLink/afterReads()``): commits
    /// what is pending right there when the store's queue is idle, else queues the commit
    /// behind the store's jobs and goes on reading. Nothing when a commit is queued or running
    /// (it takes the items), the database is being retried (once a second), or every commit is
    /// the store queue's (`durability: full`).
    func commitBurst() {
        guard commitsBursts else { return }
        let start = state.withLock { $0.burstEnded(now: MonotonicClock.now()) }
        guard start == .now else { return begin(start) }
        if commitHereIfIdle(store) {
            networkThreadCommits.add(1, ordering: .relaxed)
        } else {
            queuedCommits.add(1, ordering: .relaxed)
        }
    }

    /// The store opened from its existential once per commit: the commit then runs isolated
    /// to it, without a hop.
    private func commitHereIfIdle<Store: CommitStore>(_ store: Store) -> Bool {
        store.performHereIfIdle { store in self.commit(on: store) }
    }

    private func queueCommit() {
        queuedCommits.add(1, ordering: .relaxed)
        queueCommit(on: store)
    }

    private func queueCommit<Store: CommitStore>(on store: Store) {
        store.perform { store in self.commit(on: store) }
    }

    /// Does what ``CommitterState`` said: queues the commit now, or arms its timer (one per
    /// commit, only at fleet rates), or the retry's.
    private func begin(_ start: CommitterState.Start) {
        switch start {
        case .none:
            break
        case .now:
            queueCommit()
        case .later(let seconds):
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                begin(state.withLock { $0.timerFired(now: MonotonicClock.now()) })
            }
        case .retry(let seconds):
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                begin(state.withLock { $0.retryDue() })
            }
        }
    }

    /// Carries out what a ``CommitRound`` decided.
    private func apply(_ effects: [CommitRound.Effect]) {
        for effect in effects {
            switch effect {
            case .warn(let key, let text):
                warnings.set(key, text)
            case .resolve(let key, let text):
                warnings.clear(key, resolved: text)
            case .removeSpill:
                spill?.remove()
                state.withLock { $0.spillRemoved() }
            case .spill(let batch):
                guard let spill else { continue }
                do {
                    let dropped = try spill.append(batch)
                    warnings.clear("spill", resolved: "the spill file takes writes again")
                    if dropped.batches > 0 { spillCapReached(spill, dropped) }
                } catch {
                    warnings.set("spill", "the events the database refuses cannot be kept in the spill file (\(error)): a kill before the database recovers loses them")
                }
            case .committedFromMemory(let destination, let events):
                publishers[destination]?.committedFromMemory(events)
            case .deliverFresh(let destination, let rows):
                publishers[destination]?.deliverFresh(rows: rows)
            case .publishVolatile(let destination, let messages):
                publishers[destination]?.publishVolatile(messages)
            }
        }
    }

    /// One group commit, on the store's queue: takes everything pending, commits it, hands the
    /// events and states on, and starts what ``CommitterState/roundEnded(retry:now:)`` says
    /// (the next commit, the retry's timer).
    private func commit<Store: CommitStore>(on store: isolated Store) {
        let taken = state.withLock { $0.takeRound(now: MonotonicClock.now()) }
        for resume in taken.waiters { resume() }
        let round = taken.round
        var delivered: [OutboxDestination: Set<String>] = [:]
        if !round.retried.outbox.isEmpty {
            for (destination, publisher) in publishers { delivered[destination] = publisher.deliveredFromMemory }
        }
        var batch = round.batch(delivered: delivered)
        var retry = StoreBatch()
        if !batch.isEmpty {
            // The outboxes' acknowledgements ride along: no transaction of their own.
            var carried: [any CommittedOutbox] = []
            for publisher in publishers.values {
                guard let progress = publisher.takeProgress() else { continue }
                batch.acknowledgements += progress.acknowledgements
                for (destination, through) in progress.settled { batch.settle(destination, through: through) }
                carried.append(publisher)
            }
            var committed = false
            defer { for publisher in carried { publisher.progressCarried(committed: committed) } }
            do {
                let receipt = try store.commit(batch)
                committed = true
                if !batch.events.isEmpty { journalGrew() }
                apply(round.committed(batch, receipt: receipt))
            } catch {
                let refused = round.refused(batch, warning: CommitRound.warning(for: error, database: store.path, spill: spill?.path))
                apply(refused.effects)
                retry = refused.retry
            }
            counters.countEvents(round.taken.events.lazy.map { (trigger: $0.trigger, type: $0.type) })
            counters.events.add(round.taken.events.count, ordering: .relaxed)
        }
        // Published whatever the database answered: a device's retained state follows its
        // decisions even while the database refuses them (they are retried).
        for publication in taken.publications {
            statePublisher.publish(publication)
        }
        for message in taken.retained {
            statePublisher.publish(topic: message.topic, payload: message.payload, atMostOnce: message.atMostOnce)
        }
        let (idle, next) = state.withLock { $0.roundEnded(retry: retry, now: MonotonicClock.now()) }
        for w in idle { w.resume() }
        // Behind whatever else waits on the store's queue (reads, acknowledgements).
        begin(next)
    }
}
