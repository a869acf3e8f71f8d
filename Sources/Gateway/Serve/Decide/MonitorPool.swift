import GeotriggerCore
import Synchronization

/// The device monitors: one ``DeviceShard`` per core, each device always on the same shard
/// (by a stable hash of its id), and a clock that ticks a shard every `tickInterval` seconds
/// while it has a device in memory (else when a hibernated one is to be forgotten), and
/// otherwise sleeps.
/// New fence snapshots (runtime fences, SIGHUP) arrive on the `snapshots` stream and are
/// adopted in order; questions about one device (expected arrivals) arrive on `questions` and
/// go to its shard.
/// Updates are handled on the caller's thread when their monitor is in memory (see
/// ``DeviceShard``).
package final class MonitorPool: Service, Sendable {
    package let name = "monitors"
    let shards: [DeviceShard]
    let tickInterval: Double
    /// `input.maxEventsPerDevice`'s warning, cleared by the clock below.
    let eventRate: DeviceShard.EventRateWarning
    /// How many devices' monitor states the previous run saved.
    let savedCount: Int
    private let committer: any StepSink
    private let context: ServeContext
    private let stopping = Atomic<Bool>(false)
    /// Fired by ``shutdown()`` with `stopping`: the clock's loop ends.
    private let ticks = StopSignal()
    /// Wakes the clock's loop: a shard's tick became due sooner (a device came into memory).
    private let clockWakeup: Wakeup

    /// Monitor states saved by the previous run, and when each of those devices last reported
    /// on the running clock: restored when the pool starts, then let go.
    private let initial: Mutex<(states: [String: [UInt8]], reports: [String: Double])>
    /// The running clock (``RunningClock``), carried across restarts.
    let clock: RunningClock
    /// The running clock is saved this often (seconds), and with every device at the stop.
    static let clockSaveInterval = 600.0
    /// The feeds' connection going down and up (``feedsDown(at:)``), in the order it happened.
    private let connectionChanges: AsyncStream<DeviceShard.Work>
    private let connectionContinuation: AsyncStream<DeviceShard.Work>.Continuation
    /// Snapshots to adopt (``RuntimeFences`` yields them).
    private let snapshots: AsyncStream<EngineSnapshot>?
    /// Questions about one device for its shard (``Expectations`` yields them).
    private let questions: AsyncStream<DeviceShard.DeviceQuestion>?
    /// Trips to follow or stop following, for the device's shard (``Trips`` yields them).
    private let tripOrders: AsyncStream<TripOrder>?
    /// The current snapshot has a trigger with `phones` on (phones' transitions are judged).
    private let phonesOn: Atomic<Bool>
    /// The next snapshot adopted replaces a SIGHUP reload's fences: once every shard took it,
    /// the freed memory of the previous ones goes back to the system.
    private let trimAfterAdoption = Atomic<Bool>(false)

    package init(
        context: ServeContext, snapshot: EngineSnapshot, snapshots: AsyncStream<EngineSnapshot>? = nil,
        questions: AsyncStream<DeviceShard.DeviceQuestion>? = nil, tripOrders: AsyncStream<TripOrder>? = nil, trips: [TripRun] = [],
        shardCount: Int,
        initialStates: [String: [UInt8]] = [:], clock: RunningClock = RunningClock(carried: 0), lastReports: [String: Double] = [:],
        mailboxCapacity: Int = 1024, tickInterval: Double = 0.5
    ) {
        self.clock = clock
        self.context = context
        self.snapshots = snapshots
        self.questions = questions
        self.tripOrders = tripOrders
        let count = max(1, shardCount)
        var saved = [Set<String>](repeating: [], count: count)
        for device in initialStates.keys { saved[Int(StableHash.of(device) % UInt64(count))].insert(device) }
        let census = DeviceShard.Census(
            limit: context.config.input.maxDevices, perUser: context.config.input.maxDevicesPerUser, warnings: context.warnings)
        let eventRate = DeviceShard.EventRateWarning(limit: context.config.input.maxEventsPerDevice, warnings: context.warnings)
        self.eventRate = eventRate
        let clockWakeup = Wakeup()
        self.clockWakeup = clockWakeup
        self.shards = saved.map {
            DeviceShard(context: context, snapshot: snapshot, capacity: mailboxCapacity, census: census, eventRate: eventRate, saved: $0,
                        clock: clockWakeup, tickInterval: tickInterval, trackBudget: context.config.output.trackMemory / count)
        }
        self.committer = context.committer
        self.initial = Mutex((initialStates, lastReports))
        self.phonesOn = Atomic(snapshot.pushesPhoneRegions)
        context.counters.phoneTriggers(snapshot.phoneTriggerNames)
        self.savedCount = initialStates.count
        self.tickInterval = tickInterval
        (connectionChanges, connectionContinuation) = AsyncStream.makeStream(of: DeviceShard.Work.self)
        // Before any update: a restored trip sees its device's first fix after the restart.
        var tripsByShard = [[TripRun]](repeating: [], count: shards.count)
        for run in trips { tripsByShard[Int(StableHash.of(run.device) % UInt64(shards.count))].append(run) }
        for (shard, runs) in zip(shards, tripsByShard) { shard.restoreTrips(runs) }
    }

    func shard(for device: String) -> DeviceShard {
        shards[Int(StableHash.of(device) % UInt64(shards.count))]
    }

    /// Hands an update to its device's monitor from a task, waiting while the committer (or the
    /// shard's mailbox, for a device read from the store first) is full.
    package func submit(_ update: LocationUpdate, receivedAt now: Double, trackerID: String? = nil, owntracks: OwnTracksTopics? = nil, userLevel: Int = 0) async {
        let shard = shard(for: update.device)
        switch shard.handleNow(update, receivedAt: now, trackerID: trackerID, owntracks: owntracks, userLevel: userLevel) {
        case .handled(let mustWait):
            if mustWait { await committer.waitForRoom() }
        case .mustQueue:
            await shard.mailbox.send(.update(update, receivedAt: now, trackerID: trackerID, owntracks: owntracks, userLevel: userLevel))
        case .stopped:
            break
        }
    }

    /// The same from libmosquitto's network thread in a burst of reads (``LocalBrokerLink``), which
    /// commits what the burst handed over at its end: blocks that thread instead of waiting,
    /// which holds back the broker as a full inbound queue would.
    func submitInBurst(_ update: LocationUpdate, receivedAt now: Double, trackerID: String? = nil, owntracks: OwnTracksTopics? = nil, userLevel: Int = 0) {
        let shard = shard(for: update.device)
        switch shard.handleNow(update, receivedAt: now, trackerID: trackerID, owntracks: owntracks, userLevel: userLevel, inBurst: true) {
        case .handled(let mustWait):
            if mustWait { committer.waitForRoomBlocking() }
        case .mustQueue:
            let work = DeviceShard.Work.update(update, receivedAt: now, trackerID: trackerID, owntracks: owntracks, userLevel: userLevel)
            if !shard.mailbox.trySend(work) { ThreadGate.block { await shard.mailbox.send(work) } }
        case .stopped:
            break
        }
    }

    /// A phone's transition message for `device` (docs/phones.md): judged and counted by its
    /// shard right here, never an event.
    func phoneSaid(_ transition: PhoneTransition, device: String, now: Double) {
        shard(for: device).phoneSaid(transition, device: device, now: now)
    }

    /// The feeds' broker connection went down: every device's gateway clocks (`staleAfter`,
    /// silence) stop (docs/configuration.md "Timing"). Callable from any thread, without waiting; the
    /// shards take the changes in the order they were reported.
    func feedsDown(at now: Double) { connectionContinuation.yield(.pause(now)) }

    /// The feeds' broker connection is back: the clocks go on where ``feedsDown(at:)`` stopped them.
    func feedsUp(at now: Double) { connectionContinuation.yield(.resume(now)) }

    /// Stops `device`'s gateway clocks (`staleAfter`, silence) while its own feed is down.
    func pause(device: String, at now: Double) async {
        await shard(for: device).mailbox.send(.pauseDevice(device, now))
    }

    /// Restarts `device`'s gateway clocks where ``pause(device:at:)`` stopped them.
    func resume(device: String, at now: Double) async {
        await shard(for: device).mailbox.send(.resumeDevice(device, now))
    }

    /// Restores a saved monitor at start.
    func restore(device: String, state: [UInt8], lastReport: Double?, now: Double) async {
        let lastReport = lastReport.map { clock.monotonic(atRunning: $0) }
        await shard(for: device).mailbox.send(.restore(state, now, lastReport: lastReport))
    }

    /// Sends the same work to every shard.
    func broadcast(_ work: DeviceShard.Work) async {
        for shard in shards { await shard.mailbox.send(work) }
    }

    /// Swaps in a new fence/trigger snapshot (fenceRemoved exits follow).
    func adopt(_ newSnapshot: EngineSnapshot) async {
        phonesOn.store(newSnapshot.pushesPhoneRegions, ordering: .relaxed)
        context.counters.phoneTriggers(newSnapshot.phoneTriggerNames)
        await broadcast(.adopt(newSnapshot, MonotonicClock.now()))
        if trimAfterAdoption.exchange(false, ordering: .relaxed) {
            // Every shard has handled its `.adopt` (and so dropped the previous snapshot) once
            // the barrier returns; malloc keeps what was freed until asked (``GatewaySetup/releaseFreedMemory()``).
            await barrier()
            GatewaySetup.releaseFreedMemory()
        }
    }

    /// Asks ``adopt(_:)`` to hand the freed memory back after the next snapshot (a SIGHUP
    /// reload's): trimming a large heap after every runtime fence change would cost too much.
    func releaseMemoryAfterNextAdoption() { trimAfterAdoption.store(true, ordering: .relaxed) }

    /// Some trigger has `phones` on.
    var pushesPhoneRegions: Bool { phonesOn.load(ordering: .relaxed) }

    /// Returns once every shard handled everything sent before the call.
    package func barrier() async {
        for shard in shards {
            await withCheckedContinuation { c in
                Task { await shard.mailbox.send(.barrier(c)) }
            }
        }
    }

    var queueDepth: Int { shards.reduce(0) { $0 + $1.mailbox.count } }
    var deviceCount: Int { shards.reduce(0) { $0 + $1.deviceCount.load(ordering: .relaxed) } }

    package func run() async throws {
        await withTaskGroup(of: Void.self) { inbound in
            if let snapshots {
                inbound.addTask { [self] in
                    for await snapshot in snapshots { await adopt(snapshot) }
                }
            }
            if let tripOrders {
                inbound.addTask { [self] in
                    for await order in tripOrders { await shard(for: order.device).mailbox.send(.trip(order)) }
                }
            }
            if let questions {
                inbound.addTask { [self] in
                    for await question in questions {
                        let shard = shard(for: question.device)
                        await shard.mailbox.send(.query(.device(question.device), question.reply))
                    }
                }
            }
            await runShards()
            inbound.cancelAll()  // the shards have stopped: nothing more to adopt or answer
        }
    }

    /// The shards' tasks, the clock and the connection changes, until ``shutdown()``.
    private func runShards() async {
        await withTaskGroup(of: Void.self) { group in
            for shard in shards {
                group.addTask { await shard.run() }
            }
            group.addTask { [self] in
                for await change in connectionChanges { await broadcast(change) }
            }
            group.addTask { [self] in
                let saved = initial.withLock { s in defer { s = ([:], [:]) }; return s }
                let now = MonotonicClock.now()
                for (device, state) in saved.states {
                    await restore(device: device, state: state, lastReport: saved.reports[device], now: now)
                }
                var jumps = ClockJumpDetector(wall: WallClock.now(), monotonic: now)
                var lastSave = now
                var lastJump: Double?
                // The first look one tickInterval after the start; then whenever something is
                // due: a shard's tick (``DeviceShard/tickDue``), the running clock's save, the
                // event-rate warning's clearing, the clock-jump warning's end. Ends at the
                // shutdown (or when cancelled).
                guard await ticks.sleep(seconds: tickInterval) else { return }
                await repeating(until: ticks, wakeup: clockWakeup) {
                    let now = MonotonicClock.now()
                    if let step = jumps.check(wall: WallClock.now(), monotonic: now) {
                        clockJumped(step)
                        lastJump = now
                    } else if let jump = lastJump, now - jump >= 3600 {
                        context.warnings.clear("clock-jump", resolved: "no wall-clock jump for an hour")
                        lastJump = nil
                    }
                    if now - lastSave >= Self.clockSaveInterval {
                        lastSave = now
                        try? await context.store.saveRunningClock(seconds: clock.running(atMonotonic: now))
                    }
                    eventRate.clearIfQuiet(now: now)
                    var next = min(lastSave + Self.clockSaveInterval, lastJump.map { $0 + 3600 } ?? .infinity,
                                   eventRate.clearDue ?? .infinity)
                    for shard in shards where !stopping.load(ordering: .relaxed) {
                        let due = shard.tickDue
                        guard due <= now else {
                            next = min(next, due)
                            continue
                        }
                        // A busy shard skips a tick rather than queueing clock work behind
                        // updates; either way the next look is a tickInterval on.
                        _ = shard.mailbox.trySend(.tick(now))
                        next = min(next, now + tickInterval)
                    }
                    return next
                }
            }
        }
    }

    /// The wall clock stepped by `step` seconds: logged and warned; nothing is forgotten or
    /// decided for it (idle times run on the monotonic clock).
    private func clockJumped(_ step: Double) {
        let text = "the wall clock jumped \(step > 0 ? "forward" : "back") by \(Int(abs(step).rounded())) s at \(ISO8601Time.format(WallClock.now())) (clockJump): idle devices are unaffected; expectation deadlines follow the wall clock"
        context.warnings.set("clock-jump", text)
    }

    package func shutdown() async {
        await barrier()
        // Positions and pending crossings live in memory between decisions: saved now, for
        // the committer's last commit (it stops after the monitors).
        for shard in shards { await shard.saveUnsaved() }
        // Every device's last report on the running clock: the next start forgets by it.
        var reports: [String: Double] = [:]
        for shard in shards {
            for (device, last) in shard.lastReports() { reports[device] = clock.running(atMonotonic: last) }
        }
        do {
            try await context.store.saveRunningClock(seconds: clock.running(atMonotonic: MonotonicClock.now()), lastReports: reports)
        } catch {
            context.logger.warning("could not save the running clock: devices may be forgotten later than gateway.forgetAfter", ["error": "\(error)"])
        }
        stopping.store(true, ordering: .relaxed)
        ticks.fire()
        connectionContinuation.finish()
        for shard in shards { shard.finish() }
    }
}
