import Store

/// ``EventCommitter``'s state and the decisions about it, apart from the store, the timers and
/// the publishers: when the next commit starts, what it takes, when a refused commit is tried
/// again (docs/configuration.md "Durability": once a second) and that nothing starts after a stop. What one
/// commit does with the database's answer is its ``CommitRound``'s. The committer keeps this
/// value under its pending lock and carries out what the methods return (a ``Start``, waiters
/// to resume); every path, the failures' included, is a unit test without a store
/// (`CommitScheduleTests`, `CommitterStateTests`).
struct CommitterState {
    /// How the next commit starts.
    enum Start: Equatable {
        /// Nothing to do: a commit is queued, running or finished, or waits for a timer.
        case none
        /// Queue it now.
        case now
        /// Arm the timer for `seconds`; when it fires, ask ``timerFired(now:)``.
        case later(seconds: Double)
        /// The database refused the last commit: arm the retry timer for `seconds`; when it
        /// fires, ask ``retryDue()``. Until then no commit starts.
        case retry(seconds: Double)
    }

    /// Items in a batch (state changes and events) that make a commit start without waiting
    /// for ``interval``: past a fleet's rate (a burst, `bench e2e`) a transaction is large
    /// anyway, and events leave as soon as before. At 16 (about 8 events with their states) a
    /// fleet of 1,000 devices with a few events a second started most commits early, with 8
    /// events each, and a longer interval changed nothing (docs/performance.md "On the box").
    /// 64: most events now come without a state (schema 11), so 64 items are about as many
    /// events as 128 were with their states; at 128, full rate waited twice as long for it
    /// (built-to-subscriber p50 19 ms against 10).
    static let company = 64

    /// `gateway.commitInterval`: a commit begins at least this long after the previous one
    /// began, so that at fleet rates one transaction (and its WAL pages) carries the decisions
    /// of many updates; an item that finds the store idle since longer commits at once.
    let interval: Double
    /// Monitors wait while more items than this are pending (back-pressure from a slow disk).
    let limit: Int
    /// Journal events kept for a retry while the database refuses writes.
    let retryCap: Int
    /// How long after a refused commit the database is tried again.
    let retryDelay: Double

    var batch = StoreBatch()
    var publications: [DevicePublication] = []
    /// Retained topics to publish once their commit ended (trips' progress).
    var retained: [EventCommitter.RetainedMessage] = []
    /// Monitors waiting for room (a resumed continuation or an opened gate).
    var waiters: [@Sendable () -> Void] = []
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    var committing = false
    /// A commit job is queued on the store's queue, waits for ``interval`` or for its retry,
    /// or runs.
    var scheduled = false
    /// When the last commit began (monotonic clock).
    var lastStart = -Double.infinity
    /// A scheduled commit waits for ``interval`` (``start(now:)``).
    var waiting = false
    /// A timer is armed (at most one at a time: at full rate a commit every few
    /// milliseconds would otherwise arm one each, and every arming wakes libdispatch's
    /// timer thread).
    var timerArmed = false
    /// After ``finish()``: no more commits start.
    var finished = false
    /// State and journal of batches the database refused, tried again with the next commit.
    var retry = StoreBatch()
    /// What the spill file dropped at its cap since the database last took writes.
    var spillDropped = SpillFile.Dropped()

    init(interval: Double = 0, limit: Int = 20_000, retryCap: Int = 100_000, retryDelay: Double = 1) {
        self.interval = interval
        self.limit = limit
        self.retryCap = retryCap
        self.retryDelay = retryDelay
    }

    var count: Int { batch.stateChanges.count + batch.events.count }
    var isEmpty: Bool {
        count == 0 && publications.isEmpty && retained.isEmpty && batch.outbox.isEmpty && batch.expectations.isEmpty
            && batch.trips.isEmpty
    }
    /// Nothing handed over waits for a commit. A refused batch waiting for its retry does not
    /// count: it was published from memory and spilled when it was refused.
    var isIdle: Bool { isEmpty && !committing }

    // MARK: Handing over

    /// Takes one step's results. `deferred`: the caller is the network thread in a burst,
    /// which ends with ``burstEnded(now:)``. `mustWait`: more than ``limit`` items are pending.
    /// (`now` is read only when a commit may start: not per item of a burst.)
    mutating func add(_ item: EventCommitter.Item, deferred: Bool, now: @autoclosure () -> Double) -> (mustWait: Bool, start: Start) {
        // Most items carry one or two of these (a trip's progress only its retained message).
        if !item.events.isEmpty { batch.events.append(contentsOf: item.events) }
        // The state takes its own step's events into account, and those handed over before.
        if var state = item.state {
            state.eventsBefore = batch.events.count
            batch.stateChanges.append(state)
        }
        if !item.outbox.isEmpty { batch.outbox.append(contentsOf: item.outbox) }
        if !item.expectations.isEmpty { batch.expectations.append(contentsOf: item.expectations) }
        if !item.trips.isEmpty { batch.trips.append(contentsOf: item.trips) }
        if !item.retained.isEmpty { retained.append(contentsOf: item.retained) }
        if let publication = item.publication { publications.append(publication) }
        let full = count > limit
        return (full, deferred && !full ? .none : start(now: now()))
    }

    /// The network thread's burst of reads ended: the commit of what it handed over.
    mutating func burstEnded(now: @autoclosure () -> Double) -> Start {
        isEmpty ? .none : start(now: now())
    }

    /// Registers `resume` to run once there is room; false (not registered) if there is room now.
    mutating func addWaiter(_ resume: @escaping @Sendable () -> Void) -> Bool {
        if count <= limit { return false }
        waiters.append(resume)
        return true
    }

    /// Someone waits until everything handed over so far is committed (or refused): true when
    /// that is so already (resume it now), else it is resumed by ``roundEnded(retry:now:)``;
    /// `start` queues the commit of what is pending when none is.
    mutating func flush(_ waiter: CheckedContinuation<Void, Never>) -> (idle: Bool, start: Start) {
        if isIdle { return (true, .none) }
        idleWaiters.append(waiter)
        return (false, !isEmpty && schedule() ? .now : .none)
    }

    /// The stop: after its last flush, nothing starts, not even a retry (what it holds was
    /// spilled when it was refused, so the next start commits it first).
    mutating func finish() {
        finished = true
    }

    // MARK: Starting

    /// Marks a job as queued; true if the caller must queue it (none was).
    mutating func schedule() -> Bool {
        guard !scheduled, !finished else { return false }
        scheduled = true
        return true
    }

    /// Claims the next commit: at once when ``interval`` has passed since the last one began
    /// or the batch has ``company`` items already, else once it has passed. A commit waiting
    /// for the timer starts at once when the company comes.
    mutating func start(now: Double) -> Start {
        if waiting {
            guard count >= Self.company else { return .none }
            waiting = false
            return .now
        }
        guard schedule() else { return .none }
        let wait = lastStart + interval - now
        if wait <= 0 || count >= Self.company { return .now }
        waiting = true
        return arm(wait)
    }

    /// The timer fired: it starts the waiting commit once ``interval`` has passed since the
    /// last one began (it may have been armed for an earlier commit), else it is armed for
    /// the rest; with no commit waiting it is done.
    mutating func timerFired(now: Double) -> Start {
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

    // MARK: One commit

    /// What one commit takes.
    struct Round {
        var round: CommitRound
        /// Device states to publish once the database answered, whatever it answered.
        var publications: [DevicePublication]
        /// Retained topics to publish then, in order.
        var retained: [EventCommitter.RetainedMessage]
        /// Monitors that waited for room: there is room now.
        var waiters: [@Sendable () -> Void]
    }

    /// A commit begins: it takes everything pending and what the last refused one left.
    mutating func takeRound(now: Double) -> Round {
        let taken = Round(round: CommitRound(taken: batch, retried: retry, retryCap: retryCap),
                          publications: publications, retained: retained, waiters: waiters)
        batch = StoreBatch()
        publications = []
        retained = []
        waiters = []
        retry = StoreBatch()
        committing = true
        lastStart = now
        return taken
    }

    /// The commit ended; `retry` is what the database refused of it (empty: it took it). When
    /// nothing is pending, `idle` are the flushes to resume. A refused commit keeps its claim
    /// (``scheduled``): nothing starts a commit before the retry timer fires, so the database
    /// is tried once every ``retryDelay``, the items meanwhile with the retry.
    mutating func roundEnded(retry: StoreBatch, now: Double) -> (idle: [CheckedContinuation<Void, Never>], start: Start) {
        committing = false
        self.retry = retry
        let refused = !retry.isEmpty
        scheduled = refused
        var next: Start = refused ? .retry(seconds: retryDelay) : .none
        guard isIdle else {
            if !refused { next = start(now: now) }
            return ([], next)
        }
        let idle = idleWaiters
        idleWaiters = []
        return (idle, next)
    }

    /// What a start found in the spill file and the database refused again
    /// (`GatewayServer.applySpill`): retried as a refused commit's rows are.
    mutating func resume(_ refused: StoreBatch) -> Start {
        guard !refused.isEmpty else { return .none }
        retry = refused
        scheduled = true
        return .retry(seconds: retryDelay)
    }

    /// The retry timer fired: the commit that holds the claim since the refusal is queued,
    /// unless the committer stopped meanwhile.
    func retryDue() -> Start {
        finished ? .none : .now
    }

    // MARK: The spill file

    /// The spill file dropped `dropped` at its cap: the totals since the database last took writes.
    mutating func spillDropped(_ dropped: SpillFile.Dropped) -> SpillFile.Dropped {
        spillDropped.batches += dropped.batches
        spillDropped.events += dropped.events
        return spillDropped
    }

    /// The database took what was refused: the spill file is removed, nothing is dropped.
    mutating func spillRemoved() {
        spillDropped = SpillFile.Dropped()
    }
}
