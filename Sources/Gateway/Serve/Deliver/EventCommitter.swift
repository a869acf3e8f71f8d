import Dispatch
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Group commit between the device monitors and the database: monitors hand over what an
/// update decided (state change, events, state publication) without waiting; this service
/// commits everything pending in one transaction once the previous one ended and
/// `gateway.commitInterval` has passed since it began (at once with ``company`` items), then
/// hands the events to the outbox publishers and the device states to the state publisher.
/// So an event and the state change that caused it are committed together, before the event
/// is published (docs/configuration.md "Durability"; docs/architecture.md "Commit and outbox").
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
    }

    struct Pending {
        var batch = StoreBatch()
        var publications: [DevicePublication] = []
        /// Monitors waiting for room (a resumed continuation or an opened gate).
        var waiters: [@Sendable () -> Void] = []
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var committing = false
        /// A commit job is queued on the store's queue (or waits for ``EventCommitter/interval``), or running.
        var scheduled = false
        /// When the last commit began (monotonic clock).
        var lastStart = -Double.infinity
        /// A scheduled commit waits for ``EventCommitter/interval`` (``start(interval:now:)``).
        var waiting = false
        /// A timer is armed (at most one at a time: at full rate a commit every few
        /// milliseconds would otherwise arm one each, and every arming wakes libdispatch's
        /// timer thread).
        var timerArmed = false
        /// After ``shutdown()``: no more jobs are queued.
        var finished = false
        /// State and journal of batches the database refused, tried again with the next commit.
        var retry = StoreBatch()
        /// What the spill file dropped at its cap since the database last took writes.
        var spillDropped = SpillFile.Dropped()
        var count: Int { batch.stateChanges.count + batch.events.count }
        var isEmpty: Bool { count == 0 && publications.isEmpty && batch.outbox.isEmpty && batch.expectations.isEmpty }
        var isIdle: Bool { isEmpty && !committing }

        /// Marks a job as queued; true if the caller must queue it (none was).
        mutating func schedule() -> Bool {
            guard !scheduled, !finished else { return false }
            scheduled = true
            return true
        }

        /// How the next commit starts, once something is pending (``start(interval:now:)``).
        enum Start: Equatable {
            /// Nothing to do: a commit is queued, running or finished, or waits for the timer.
            case none
            /// Queue it now.
            case now
            /// Arm the timer for `seconds`; when it fires, ask ``timerFired(interval:now:)``.
            case later(seconds: Double)
        }

        /// Claims the next commit: at once when `interval` has passed since the last one began
        /// or the batch has ``EventCommitter/company`` items already, else once it has passed. A
        /// commit waiting for the timer starts at once when the company comes.
        mutating func start(interval: Double, now: Double) -> Start {
            if waiting {
                guard count >= EventCommitter.company else { return .none }
                waiting = false
                return .now
            }
            guard schedule() else { return .none }
            let wait = lastStart + interval - now
            if wait <= 0 || count >= EventCommitter.company { return .now }
            waiting = true
            return arm(wait)
        }

        /// The timer fired: it starts the waiting commit once `interval` has passed since the
        /// last one began (it may have been armed for an earlier commit), else it is armed for
        /// the rest; with no commit waiting it is done.
        mutating func timerFired(interval: Double, now: Double) -> Start {
            timerArmed = false
            guard waiting else { return .none }
            let wait = lastStart + interval - now
            guard wait > 0 else {
                waiting = false
                return .now
            }
            return arm(wait)
        }

        /// Arms the timer unless it is armed already (it fires sooner: the commit is then
        /// looked at again).
        private mutating func arm(_ seconds: Double) -> Start {
            if timerArmed { return .none }
            timerArmed = true
            return .later(seconds: seconds)
        }
    }

    /// Items in a batch that make a commit start without waiting for ``interval``: past a fleet's
    /// rate (a burst, `bench e2e`) a transaction is large anyway, and events leave as soon as
    /// before.
    static let company = 16

    package let name = "committer"
    let store: GatewayStore
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    let publishers: [OutboxDestination: any CommittedOutbox]
    let statePublisher: StatePublisher
    /// Monitors wait while this many items are pending (back-pressure from a slow disk).
    let limit: Int
    /// Journal events kept for a retry while the database fails.
    let retryCap: Int
    /// Whether the network thread commits its bursts itself (`durability: normal`).
    let commitsBursts: Bool
    /// `gateway.commitInterval`: a commit begins at least this long after the previous one
    /// began, so that at fleet rates one transaction (and its WAL pages) carries the decisions
    /// of many updates; an item that finds the store idle since longer commits at once.
    let interval: Double
    /// Where refused batches are kept while the database fails (nil: memory only).
    let spill: SpillFile?
    /// Told after a commit that stored events (journal retention looks at the size then).
    let journalGrew: @Sendable () -> Void
    /// Commits run by that network thread, and commit jobs queued on the store's queue.
    let networkThreadCommits = Atomic<Int>(0)
    let queuedCommits = Atomic<Int>(0)

    private let pending = LeveledMutex(Pending(), level: .committerPending)
    /// Fired by ``shutdown()``: ``run()`` returns then.
    private let stopped = StopSignal()

    package init(
        store: GatewayStore, counters: GatewayCounters, warnings: Warnings, logger: Logger,
        publishers: [OutboxDestination: any CommittedOutbox], statePublisher: StatePublisher,
        limit: Int = 20_000, retryCap: Int = 100_000, spill: SpillFile? = nil, retry: StoreBatch = StoreBatch(),
        interval: Double = 0, journalGrew: @escaping @Sendable () -> Void = {}
    ) {
        self.interval = interval
        self.store = store
        self.journalGrew = journalGrew
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        self.publishers = publishers
        self.statePublisher = statePublisher
        self.limit = limit
        self.retryCap = retryCap
        self.commitsBursts = store.options.durability == .normal
        self.spill = spill
        pending.withLock { $0.retry = retry }
        // A spill the database could not take at start: retried like a refused commit.
        if !retry.isEmpty { DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in queueCommit() } }
    }

    /// Hands over one step's results without waiting. True when too much is pending: the
    /// caller then waits with ``waitForRoom()`` or ``waitForRoomBlocking()``, after releasing
    /// what it holds (a shard hands over under its lock, so a device's steps stay in order).
    /// `inBurst`: the caller is the network thread in a burst of reads, which ends with
    /// ``commitBurst()`` (unless this fills the committer, nothing is queued now).
    package func enqueue(_ item: Item, inBurst: Bool = false) -> Bool {
        let deferred = inBurst && commitsBursts
        let (mustWait, start): (Bool, Pending.Start) = pending.withLock { p in
            if let state = item.state { p.batch.stateChanges.append(state) }
            p.batch.events.append(contentsOf: item.events)
            p.batch.outbox.append(contentsOf: item.outbox)
            p.batch.expectations.append(contentsOf: item.expectations)
            if let publication = item.publication { p.publications.append(publication) }
            let full = p.count > limit
            return (full, deferred && !full ? .none : p.start(interval: interval, now: MonotonicClock.now()))
        }
        begin(start)
        return mustWait
    }

    /// Waits while more than `limit` items are pending.
    package func waitForRoom() async {
        await withCheckedContinuation { c in
            if !addWaiter({ c.resume() }) { c.resume() }
        }
    }

    /// Blocks the calling thread (libmosquitto's network thread) while more than `limit` items
    /// are pending.
    package func waitForRoomBlocking() {
        let gate = ThreadGate()
        if addWaiter({ gate.open() }) { gate.wait() }
    }

    /// Registers `resume` to run once there is room; false (not registered) if there is room now.
    private func addWaiter(_ resume: @escaping @Sendable () -> Void) -> Bool {
        pending.withLock { p in
            if p.count <= limit { return false }
            p.waiters.append(resume)
            return true
        }
    }

    /// Returns once everything handed over before the call is committed (or failed). Queues
    /// the commit itself when none is: the last burst of a network thread that stopped before
    /// its ``commitBurst()`` (the main broker's connection stops first at shutdown) left its
    /// items pending.
    package func flush() async {
        await withCheckedContinuation { c in
            let (idle, schedule): (Bool, Bool) = pending.withLock { p in
                if p.isIdle { return (true, false) }
                p.idleWaiters.append(c)
                return (false, !p.isEmpty && p.schedule())
            }
            if idle { c.resume() }
            if schedule { queueCommit() }
        }
    }

    package func shutdown() async {
        await flush()
        pending.withLock { $0.finished = true }
        stopped.fire()
    }

    /// The status warning for a refused commit: one stable line (no SQL text, so a fault is
    /// logged once, not once per failing statement).
    func databaseWarning(_ error: any Error) -> String {
        let cause: String
        if let error = error as? SQLiteError {
            cause = error.isFull
                ? "the database \(store.path) is full (SQLite error \(error.code): \(error.codeDescription))"
                : "the database \(store.path) refused a commit (SQLite error \(error.code): \(error.codeDescription): \(error.message))"
        } else {
            cause = "the database \(store.path) refused a commit (\(error))"
        }
        return cause + "; events are published from memory" + (spill.map { " and kept in \($0.path)" } ?? "")
            + ", monitor state and journal are retried every second"
    }

    /// Counts what the spill file dropped at its cap, in the `spill-cap` warning (logged with
    /// each new count). Those events were published from memory and are retried from memory
    /// (up to `retryCap`); only a kill before the database recovers loses them.
    private func spillCapReached(_ spill: SpillFile, _ dropped: SpillFile.Dropped) {
        let total: SpillFile.Dropped = pending.withLock { p in
            p.spillDropped.batches += dropped.batches
            p.spillDropped.events += dropped.events
            return p.spillDropped
        }
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
        let start = pending.withLock { p in p.isEmpty ? .none : p.start(interval: interval, now: MonotonicClock.now()) }
        guard start == .now else { return begin(start) }
        if store.performHereIfIdle({ store in self.commit(on: store) }) {
            networkThreadCommits.add(1, ordering: .relaxed)
        } else {
            queuedCommits.add(1, ordering: .relaxed)
        }
    }

    private func queueCommit() {
        queuedCommits.add(1, ordering: .relaxed)
        store.perform { store in self.commit(on: store) }
    }

    /// Does what ``Pending/start(interval:now:)`` said: queues the commit now, or arms its
    /// timer (one per commit, only at fleet rates).
    private func begin(_ start: Pending.Start) {
        switch start {
        case .none:
            break
        case .now:
            queueCommit()
        case .later(let seconds):
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                begin(pending.withLock { $0.timerFired(interval: interval, now: MonotonicClock.now()) })
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
                pending.withLock { $0.spillDropped = SpillFile.Dropped() }
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
    /// events and states on, and queues the next commit if more arrived meanwhile.
    private func commit(on store: isolated GatewayStore) {
        let (taken, publications, waiters, retried) = pending.withLock { p in
            let t = (p.batch, p.publications, p.waiters, p.retry)
            p.batch = StoreBatch()
            p.publications = []
            p.waiters = []
            p.retry = StoreBatch()
            p.committing = true
            p.lastStart = MonotonicClock.now()
            return t
        }
        for resume in waiters { resume() }
        let round = CommitRound(taken: taken, retried: retried, retryCap: retryCap)
        var delivered: [OutboxDestination: Set<String>] = [:]
        if !retried.outbox.isEmpty {
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
                let refused = round.refused(batch, warning: databaseWarning(error))
                apply(refused.effects)
                retry = refused.retry
            }
            counters.countEvents(taken.events.lazy.map { (trigger: $0.trigger, type: $0.type) })
            counters.events.add(taken.events.count, ordering: .relaxed)
        }
        for publication in publications {
            statePublisher.publish(publication)
        }
        let failed = !retry.isEmpty
        let (idle, next): ([CheckedContinuation<Void, Never>], Pending.Start) = pending.withLock { p in
            p.committing = false
            p.retry = retry
            // After a refused commit the next one waits a second (below), and nothing queues
            // one before: the database is retried once a second, as docs/configuration.md "Durability" says.
            p.scheduled = failed
            guard p.isIdle else { return ([], failed ? .none : p.start(interval: interval, now: MonotonicClock.now())) }
            let w = p.idleWaiters
            p.idleWaiters = []
            return (w, .none)
        }
        for w in idle { w.resume() }
        if failed {
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in
                if !pending.withLock({ $0.finished }) { queueCommit() }
            }
        } else {
            // Behind whatever else waits on the store's queue (reads, acknowledgements).
            begin(next)
        }
    }
}
