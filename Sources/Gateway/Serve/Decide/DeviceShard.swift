import FoundationEssentials
import GeotriggerCore
import Store
import Synchronization

/// One part of the ``MonitorPool``: owns the monitors of the devices whose id hashes to it.
///
/// An update whose device's monitor is in memory (or a new device) is handled right where it
/// arrives, under the shard's lock: on libmosquitto's network thread for the MQTT feeds. A
/// hop to another thread per update cost more than the update itself on a small box (a futex
/// wake-up and two context switches; `docs/performance.md`). Everything else (clock ticks, new
/// snapshots, restores, queries, and updates of a device whose state must first be read from
/// the store) goes through the shard's bounded mailbox and its own task, under the same lock.
///
/// Every device still has its own monitor (the pure ``DeviceMonitor`` value); the shard is its
/// executor. One actor or task per device would cost ~4 KB and a hop per update
/// (docs/architecture.md "Performance mechanisms"); a few shards keep 10,000 devices in a few
/// MB, and a device's steps in order.
package final class DeviceShard: Sendable {
    enum Work: Sendable {
        /// An update of a device read from the store first (hibernated, or saved by the
        /// previous run), or queued behind such an update of the same device.
        case update(LocationUpdate, receivedAt: Double, trackerID: String?, owntracks: OwnTracksTopics?, userLevel: Int)
        /// Gateway clock tick: silence confirmations, stale exits, held-back device states,
        /// hibernation, forgetting.
        case tick(Double)
        /// A new fence/trigger snapshot (SIGHUP).
        case adopt(EngineSnapshot, Double)
        /// A monitor restored from the database at start, with when its device last reported
        /// (gateway clock; nil: not known, taken as the restore's time).
        case restore([UInt8], Double, lastReport: Double?)
        /// The feed's connection went down / came back (stale clocks pause).
        case pause(Double)
        case resume(Double)
        /// One device's own feed went down / came back (the gpsd feed's device): only its stale
        /// clock pauses. Remembered for a device restored or woken while paused.
        case pauseDevice(String, Double)
        case resumeDevice(String, Double)
        /// Resumes the continuation once everything sent before it has been handled.
        case barrier(CheckedContinuation<Void, Never>)
        /// A query about this shard's devices (DeviceShard+Query.swift).
        case query(Query, CheckedContinuation<QueryAnswer, Never>)
        /// A trip to follow or to stop following (DeviceShard+Trips.swift).
        case trip(TripOrder)
    }

    /// A device's monitor and what the gateway remembers beside it.
    struct Slot {
        var monitor: DeviceMonitor
        var lastReceived: Double
        var trackerID: String?
        /// The `owntracks` feed the device reports through (nil: another format).
        var owntracks: OwnTracksTopics?
        /// What its steps emit: saved state, publications, events within
        /// `input.maxEventsPerDevice`.
        var emission = OutcomeEmission()
        /// An OwnTracks phone's regions and transitions, while a trigger with `phones` on
        /// applies to it (nil otherwise).
        var phone: PhoneSlot?
        /// Its recent track (the `track` query; DeviceShard+Track.swift), and the bytes it held
        /// when last measured (the shard's budget counts them).
        var track = RecentTrack()
        var trackBytes = 0
        /// What the database holds of its committed facts, with the journal's later events
        /// folded in (``settleState(of:in:)``).
        var committed = CommittedFacts.none

        init(monitor: DeviceMonitor, lastReceived: Double) {
            self.monitor = monitor
            self.lastReceived = lastReceived
        }

        /// A monitor restored from the database's `bytes`.
        init(restored monitor: DeviceMonitor, from bytes: [UInt8], lastReceived: Double) {
            self.init(monitor: monitor, lastReceived: lastReceived)
            emission = OutcomeEmission(publishedStays: monitor.stays, decisions: monitor.decisions)
            committed = CommittedFacts(serialized: bytes) ?? .none
        }
    }

    /// A slot on the heap, so that the shard's dictionary holds one reference per device. A
    /// `Slot` inline (304 bytes) made every bucket of the dictionary that big, and a dictionary
    /// keeps between 1.33 and 2.67 buckets per entry (its table doubles past 3/4 full): ~1 KB
    /// per device at 100,000 devices (heaptrack); boxed, a device costs its slot and a few
    /// words of buckets. One `inout` access to `slot` per step of the device (a class's
    /// stored property is checked for exclusive access at run time, once per access).
    final class SlotBox {
        var slot: Slot

        init(_ slot: Slot) { self.slot = slot }
    }

    /// What the shard's lock guards.
    struct State {
        var snapshot: EngineSnapshot
        var slots: [String: SlotBox] = [:]
        /// Hibernated devices: when each last reported (gateway clock, for forgetting).
        var hibernated: [String: Double] = [:]
        /// Since when the feeds' connection is down (gateway clock).
        var paused: Double?
        /// Devices whose own feed is down, since when (gateway clock).
        var pausedDevices: [String: Double] = [:]
        /// Devices whose updates go through the mailbox, with how many are on the way: one
        /// read from the store first, and every later update behind it, so they stay in order.
        var queued: [String: Int] = [:]
        /// The pool stopped: updates are no longer taken.
        var finished = false
        /// Open trips of this shard's devices, by device (docs/trips.md): decided here, beside
        /// the monitors, whether the device's slot is in memory or not.
        var trips: [String: [TripRun]] = [:]
        /// No open trip's `by` is earlier (wall clock; infinity: none; exact after a tick).
        var tripDeadline = Double.infinity
        /// The recent tracks of hibernated devices, with their bytes (back in the slot when the
        /// device wakes; DeviceShard+Track.swift).
        var hibernatedTracks: [String: (track: RecentTrack, bytes: Int)] = [:]
        /// Bytes the shard's tracks hold together, in slots and hibernated.
        var trackBytes = 0
    }

    /// What ``handleNow(_:receivedAt:trackerID:owntracks:userLevel:inBurst:)`` did with an update.
    enum Handling {
        /// Handled; `mustWait`: the committer is full, wait for room before the next one.
        case handled(mustWait: Bool)
        /// Send it as ``Work/update(_:receivedAt:trackerID:owntracks:userLevel:)`` to the mailbox.
        case mustQueue
        /// The pool has stopped; the update is dropped.
        case stopped
    }

    let mailbox: BoundedQueue<Work>
    let context: ServeContext
    let census: Census
    let eventRate: EventRateWarning
    /// Which idle devices leave memory on a tick.
    let retention: ShardRetention
    /// Devices in memory plus hibernated ones (for the status counters).
    let deviceCount = Atomic<Int>(0)
    /// When this shard's next tick is due (monotonic seconds, as a bit pattern; infinity:
    /// none): the earliest of its devices' deadlines (``due(_:now:)``: a hold ended by
    /// silence, a held-back state publication, a hibernation) and the first hibernated
    /// device's forgetting, at most every ``tickInterval``. Set under the lock; the pool's
    /// clock reads it.
    private let tickDueBits = Atomic<UInt64>(Double.infinity.bitPattern)
    /// The pool's clock: poked when a tick became due sooner than it sleeps.
    private let clock: Wakeup
    /// Seconds between ticks while a device is in memory.
    let tickInterval: Double

    /// Devices of this shard with a state saved by the previous run (restored at start).
    let saved: Set<String>
    let state: LeveledMutex<State>
    /// Builds what trips decide (DeviceShard+Trips.swift).
    let tripEmission: TripEmission
    /// Bytes this shard's recent tracks may hold (its share of `output.trackMemory`; 0: none kept).
    let trackBudget: Int

    init(context: ServeContext, snapshot: EngineSnapshot, capacity: Int, census: Census, eventRate: EventRateWarning,
         saved: Set<String> = [], clock: Wakeup = Wakeup(), tickInterval: Double = 0.5, trackBudget: Int? = nil) {
        self.context = context
        self.trackBudget = trackBudget ?? context.config.output.trackMemory
        self.clock = clock
        self.tickInterval = tickInterval
        self.census = census
        self.eventRate = eventRate
        self.retention = ShardRetention(hibernateAfter: context.config.gateway.hibernateAfter, forgetAfter: context.config.gateway.forgetAfter)
        self.saved = saved
        self.mailbox = BoundedQueue(capacity: capacity)
        self.state = LeveledMutex(State(snapshot: snapshot), level: .deviceShard)
        tripEmission = TripEmission(gatewayID: context.config.gateway.id, prefix: context.config.output.prefix, qos: context.config.output.qos)
    }

    /// Handles `update` now, on the calling thread, if its device's monitor is in memory or
    /// the device is new; a device whose state is in the store (or with updates still queued)
    /// must go through the mailbox instead. `inBurst`: see ``EventCommitter/enqueue(_:inBurst:)``.
    func handleNow(
        _ update: LocationUpdate, receivedAt now: Double, trackerID: String?, owntracks: OwnTracksTopics?, userLevel: Int = 0, inBurst: Bool = false
    ) -> Handling {
        state.withLock { s in
            if s.finished { return .stopped }
            let device = update.device
            if let waiting = s.queued[device] {
                s.queued[device] = waiting + 1
                return .mustQueue
            }
            // One hash lookup; the slot is changed in place through its box.
            let box: SlotBox
            if let found = s.slots[device] {
                box = found
            } else {
                if s.hibernated[device] != nil || saved.contains(device) {
                    s.queued[device] = 1
                    return .mustQueue
                }
                guard admitNewDevice(device, userLevel: userLevel) else { return .handled(mustWait: false) }
                box = SlotBox(Slot(monitor: DeviceMonitor(device: device, snapshot: s.snapshot, now: now), lastReceived: now))
                s.slots[device] = box
                // The census counted it when it admitted it.
                recount(s.slots.count + s.hibernated.count, admitted: 1)
            }
            var mustWait = false
            handOver(handle(update, now: now, trackerID: trackerID, owntracks: owntracks, slot: &box.slot, trips: &s.trips,
                            trackBytes: &s.trackBytes),
                     mustWait: &mustWait, inBurst: inBurst)
            if s.trackBytes > trackBudget { trimTracks(&s) }
            return .handled(mustWait: mustWait)
        }
    }

    /// Whether a new device may be tracked (``ShardAdmission``: under `input.maxDevices`, and
    /// under `input.maxDevicesPerUser` for its feed's user level); else its update is counted
    /// as `tooManyDevices` and the warning raised.
    private func admitNewDevice(_ device: String, userLevel: Int) -> Bool {
        // The census raises and clears the `too-many-devices` warning itself, with its flag.
        let decision = census.admit(device, userLevel: userLevel).decision
        switch decision.verdict {
        case .admitted:
            return true
        case .overLimit:
            context.counters.drop(.tooManyDevices)
            return false
        case .overUserLimit(let user):
            context.counters.drop(.tooManyDevices)
            context.warnings.set(ShardAdmission.userWarning, census.admission.userWarningText(user), origin: .client)
            return false
        }
    }

    /// When this shard's next tick is due (monotonic; infinity: nothing is due until a device
    /// comes).
    var tickDue: Double { Double(bitPattern: tickDueBits.load(ordering: .relaxed)) }

    /// Under the lock: a tick is due by `due` (a device came into memory, an update began a
    /// hold or held a position back); pokes the pool's clock if it sleeps longer.
    func ticksDue(by due: Double) {
        guard due < tickDue else { return }
        tickDueBits.store(due.bitPattern, ordering: .relaxed)
        clock.poke()
    }

    /// Under the lock, after a tick at `now` found its devices next due at `slotsDue`: the next
    /// one is due then, or when the first hibernated device is to be forgotten.
    private func scheduleTicks(_ s: State, slotsDue: Double, now: Double) {
        let due = min(slotsDue, s.hibernated.values.min().map { $0 + retention.forgetAfter } ?? .infinity, tripsDue(s, now: now))
        tickDueBits.store(max(due, now + tickInterval).bitPattern, ordering: .relaxed)
    }

    /// When `slot` next needs a tick (gateway clock): its monitor's next deadline (a hold
    /// confirmed by silence, a dwell, `staleAfter`), the end of `output.stateInterval` for a
    /// position held back, its phone's waiting claims, its hibernation (not while paused: a
    /// resume asks for a tick). A device that only reports needs none: an idle gateway whose
    /// devices stopped sleeps from their last publication to their hibernation. `hasTrips`: it
    /// has open trips, and stays in memory until they end (their deadlines are the shard's).
    private func due(_ slot: borrowing Slot, now: Double, hasTrips: Bool = false) -> Double {
        var due = retention.fateDue(
            lastReceived: slot.lastReceived, paused: slot.monitor.isPaused || hasTrips, deadline: slot.monitor.nextDeadline())
        if slot.emission.positionUnpublished { due = min(due, slot.emission.lastPublished + context.config.output.stateInterval) }
        if let phone = slot.phone, phone.ledger.waitingClaims > 0 { due = min(due, now + tickInterval) }
        return due
    }

    /// Updates this shard's device count and the census total; `admitted`: devices among the
    /// new count that the census counted already (``Census/admit(_:userLevel:)``).
    private func recount(_ count: Int, admitted: Int = 0) {
        let before = deviceCount.exchange(count, ordering: .relaxed)
        let change = count - before - admitted
        if change != 0 { census.total.add(change, ordering: .relaxed) }
    }

    /// Stops taking updates and ends the mailbox (the pool's shutdown).
    func finish() {
        state.withLock { $0.finished = true }
        mailbox.finish()
    }

    /// Handles the mailbox's work until it is finished.
    func run() async {
        while let work = await mailbox.next() {
            switch work {
            case .update(let update, let now, let trackerID, let owntracks, let userLevel):
                await handleQueued(update, now: now, trackerID: trackerID, owntracks: owntracks, userLevel: userLevel)
            case .tick(let now):
                await mutate(reschedules: false) { s, mustWait in tick(now: now, state: &s, mustWait: &mustWait) }
            case .adopt(let newSnapshot, let now):
                await mutate { s, mustWait in
                    s.snapshot = newSnapshot
                    for (device, box) in s.slots {
                        var changed = false
                        let notes = box.slot.monitor.adopt(newSnapshot, now: now, stateChanged: &changed)
                        box.slot.phone?.adopt(newSnapshot, device: device)
                        handOver(item(notes, changed: changed, now: now, slot: &box.slot, forcePublish: true), mustWait: &mustWait)
                    }
                }
            case .restore(let bytes, let now, let lastReport):
                await mutate { s, mustWait in
                    do {
                        let (monitor, notes) = try DeviceMonitor.restore(from: bytes, snapshot: s.snapshot, now: now)
                        // An update may have woken the device (from the database, newer) before
                        // its restore arrived: never go back to the state read at start.
                        guard s.slots[monitor.device] == nil, s.queued[monitor.device] == nil else { return }
                        var slot = Slot(restored: monitor, from: bytes, lastReceived: min(now, lastReport ?? now))
                        // Its clocks start at `now`: paused from there while its feed is down.
                        if s.pausedDevices[monitor.device] != nil { slot.monitor.pause(at: now) }
                        context.statePublisher.publish(context.publication(of: monitor, updated: WallClock.now()))
                        handOver(item(notes, changed: !notes.isEmpty, now: now, slot: &slot), mustWait: &mustWait)
                        s.slots[monitor.device] = SlotBox(slot)
                    } catch {
                        context.logger.error("a saved monitor state could not be read and is ignored", ["error": "\(error)"])
                    }
                }
            case .pause(let now):
                await mutate { s, _ in
                    s.paused = now
                    for box in s.slots.values { box.slot.monitor.pause(at: now) }
                }
            case .resume(let now):
                await mutate { s, _ in
                    s.paused = nil
                    for (device, box) in s.slots where s.pausedDevices[device] == nil { box.slot.monitor.resume(at: now) }
                }
            case .pauseDevice(let device, let now):
                await mutate { s, _ in
                    if s.pausedDevices[device] == nil { s.pausedDevices[device] = now }
                    s.slots[device]?.slot.monitor.pause(at: now)
                }
            case .resumeDevice(let device, let now):
                await mutate { s, _ in
                    s.pausedDevices[device] = nil
                    // A monitor that is not paused keeps its clocks (resume would restart them).
                    if s.paused == nil, let box = s.slots[device], box.slot.monitor.isPaused { box.slot.monitor.resume(at: now) }
                }
            case .barrier(let c):
                c.resume()
            case .query(let query, let c):
                let result = state.withLock { s in
                    if case .track(let device, let since, let offset, let limit) = query {
                        return track(of: device, since: since, offset: offset, limit: limit, state: &s, now: WallClock.now())
                    }
                    return answer(query, slots: s.slots, hibernated: s.hibernated, trips: s.trips, now: WallClock.now())
                }
                c.resume(returning: result)
            case .trip(let order):
                await apply(order)
            }
        }
    }

    /// Under the lock, after an update of `slot` at `now`: a tick is due when the slot needs
    /// one, unless one comes within ``tickInterval`` anyway (as under load: one atomic read).
    private func wakesClock(for slot: Slot, now: Double, hasTrips: Bool = false) {
        if tickDue > now + tickInterval { ticksDue(by: max(due(slot, now: now, hasTrips: hasTrips), now + tickInterval)) }
    }

    /// Runs `body` under the lock (it hands items over with ``handOver(_:mustWait:inBurst:)``), then
    /// waits for room if that filled the committer. `reschedules`: a tick is due a
    /// ``tickInterval`` on (a snapshot adopted, a restore, a pause or a resume: rare), unless
    /// `body` says itself when (a tick, an update).
    func mutate(reschedules: Bool = true, _ body: (inout State, inout Bool) -> Void) async {
        let mustWait = state.withLock { s in
            var mustWait = false
            body(&s, &mustWait)
            recount(s.slots.count + s.hibernated.count)
            if reschedules, !s.slots.isEmpty { ticksDue(by: MonotonicClock.now() + tickInterval) }
            return mustWait
        }
        if mustWait { await context.committer.waitForRoom() }
    }

    /// Hands `item` to the committer (``EventCommitter/enqueue(_:inBurst:)``: it only queues it
    /// for the next group commit); call with the lock held, so a device's steps reach it in
    /// order. `mustWait`: set when the committer is full.
    func handOver(_ item: EventCommitter.Item?, mustWait: inout Bool, inBurst: Bool = false) {
        if let item, context.committer.enqueue(item, inBurst: inBurst) { mustWait = true }
    }

    /// An update that came through the mailbox: its device's state is read from the store
    /// (outside the lock; no other update of the device is handled meanwhile), then it is
    /// handled like any other.
    private func handleQueued(_ update: LocationUpdate, now: Double, trackerID: String?, owntracks: OwnTracksTopics?, userLevel: Int) async {
        let device = update.device
        // Only a device hibernated in this run, or saved by the previous one and not restored
        // yet, has a state in the database: a new device needs no read (which would wait
        // behind the commits on the store's queue).
        let stored = state.withLock { s in
            s.slots[device] == nil && (s.hibernated.removeValue(forKey: device) != nil || saved.contains(device))
        }
        let bytes = stored ? try? await context.store.deviceState(device) : nil
        await mutate { s, mustWait in
            if let waiting = s.queued[device] { s.queued[device] = waiting > 1 ? waiting - 1 : nil }
            if s.slots[device] == nil {
                if let bytes, let (monitor, notes) = try? DeviceMonitor.restore(from: bytes, snapshot: s.snapshot, now: now) {
                    var slot = Slot(restored: monitor, from: bytes, lastReceived: now)
                    handOver(item(notes, changed: !notes.isEmpty, now: now, slot: &slot), mustWait: &mustWait)
                    s.slots[device] = SlotBox(slot)
                } else {
                    s.slots[device] = SlotBox(Slot(monitor: DeviceMonitor(device: device, snapshot: s.snapshot, now: now), lastReceived: now))
                }
                // A hibernated device's track comes back with it.
                if let kept = s.hibernatedTracks.removeValue(forKey: device), let box = s.slots[device] {
                    box.slot.track = kept.track
                    box.slot.trackBytes = kept.bytes
                }
                // Tracked already (restored, or queued behind its own updates): counted for its
                // user, never refused.
                census.attribute(device, user: ShardAdmission.user(of: device, level: userLevel))
            }
            let box = s.slots[device]!
            handOver(handle(update, now: now, trackerID: trackerID, owntracks: owntracks, slot: &box.slot, trips: &s.trips,
                            trackBytes: &s.trackBytes), mustWait: &mustWait)
            if s.trackBytes > trackBudget { trimTracks(&s) }
        }
    }

    /// Applies one update to its device's slot, and to its open trips (`trips`, the shard's)
    /// when it is accepted; what is to be handed over, if anything.
    private func handle(
        _ update: LocationUpdate, now: Double, trackerID: String?, owntracks: OwnTracksTopics?, slot: inout Slot,
        trips: inout [String: [TripRun]], trackBytes: inout Int
    ) -> EventCommitter.Item? {
        if let trackerID { slot.trackerID = trackerID }
        slot.owntracks = owntracks
        let snapshot = slot.monitor.snapshot
        if owntracks != nil, slot.phone == nil, snapshot.pushesPhoneRegions, snapshot.pushesPhoneRegions(to: update.device) {
            slot.phone = PhoneSlot(device: update.device, stays: slot.monitor.stays, snapshot: snapshot)
        }
        let outcome = slot.monitor.handle(update, receivedAt: now)
        switch outcome.disposition {
        case .accepted:
            context.counters.accepted.add(1, ordering: .relaxed)
            slot.lastReceived = now
            if trackBudget > 0 { trackBytes += record(update, in: &slot) }
            if let runtime = context.runtimeFences, runtime.isFollowed(update.device) { runtime.followedDeviceMoved(update) }
        case .filtered:
            context.counters.drop(.filtered)
            slot.lastReceived = now
            wakesClock(for: slot, now: now)
            return nil
        case .outOfOrder:
            context.counters.drop(.outOfOrder)
            return nil
        case .duplicate:
            context.counters.drop(.duplicate)
            return nil
        }
        if outcome.positionChanged { slot.emission.positionChanged() }
        var result = item(outcome.notifications, changed: outcome.stateChanged, now: now, slot: &slot)
        // One dictionary check per update while the shard has trips, none otherwise.
        let hasTrips = !trips.isEmpty && trips[update.device] != nil
        if hasTrips { follow(update, trips: &trips, into: &result) }
        // A hold begun, a position held back: the shard's clock wakes for it.
        wakesClock(for: slot, now: now, hasTrips: hasTrips)
        guard let phone = slot.phone,
              let push = phone.plan.observe(update.coordinate, time: update.time, now: now, device: update.device, snapshot: snapshot)
        else { return result }
        return pushed(push, to: update.device, via: slot.owntracks ?? .standard, at: update.time, with: result)
    }

    /// `item` with the `setWaypoints` command of `push` for `device`'s phone in its outbox: a
    /// message like an event's, committed before it goes out and delivered in order, QoS 1,
    /// not retained, on the `cmd` topic beside the device's own in its feed's tree
    /// (`owntracks/USER/DEVICE/cmd` for the OwnTracks apps' own tree).
    private func pushed(_ push: PhonePush, to device: String, via feed: OwnTracksTopics, at time: Double,
                        with item: EventCommitter.Item?) -> EventCommitter.Item {
        var item = item ?? EventCommitter.Item()
        item.outbox.append(OutboxMessage(
            destination: .local, eventID: "setWaypoints/\(device)/\(time)",
            topic: feed.topic(beside: device, "cmd"), payload: push.commandJSON.serializedBytes(), qos: 1))
        context.counters.countPhones { counts in
            for trigger in push.triggers { counts.triggers[trigger, default: .init()].pushes += 1 }
            if push.capped { counts.regionsCapped += 1 }
        }
        if push.capped {
            context.warnings.set(
                "phoneRegionsCapped",
                "the triggers with phones on give \(device) more than \(TriggerOptions.maximumPhoneRegions) regions: the nearest \(TriggerOptions.maximumPhoneRegions) are pushed")
        }
        return item
    }

    /// A phone's transition (``PhoneTransition``), judged against the gateway's own decisions
    /// for its device (``PhoneTransitionLedger``) and counted; `now`: the gateway clock.
    func phoneSaid(_ transition: PhoneTransition, device: String, now: Double) {
        state.withLock { s in
            guard let box = s.slots[device], let phone = box.slot.phone else {
                context.counters.countPhones { $0.unknownDevice += 1 }
                context.warnings.set(
                    "phoneUnknownDevice", "a phone's transition came from \(device), which has no region from this gateway",
                    origin: .client)
                return
            }
            let snapshot = box.slot.monitor.snapshot
            guard let rid = phone.region(of: transition), let triggers = phoneTriggers(giving: rid, phone: phone, snapshot: snapshot),
                  !triggers.isEmpty
            else {
                context.counters.countPhones { $0.unknownRegion += 1 }
                context.warnings.set(
                    "phoneUnknownRegion",
                    "\(device) reported a transition for a region the gateway did not give it (\(transition.rid ?? transition.desc ?? "no rid"))",
                    origin: .client)
                return
            }
            count(phone.ledger.phoneSaid(rid: rid, enter: transition.enter, time: transition.time, triggers: triggers, now: now))
        }
    }

    /// The triggers of `phone` that watch fence `rid` (`LAYER/FENCE`), or nil if it is no fence.
    private func phoneTriggers(giving rid: String, phone: PhoneSlot, snapshot: EngineSnapshot) -> [String]? {
        guard let slash = rid.firstIndex(of: "/") else { return nil }
        let triggers = snapshot.triggerNames(watching: String(rid[..<slash]), fence: String(rid[rid.index(after: slash)...]))
        return triggers?.filter { phone.triggers.contains($0) }
    }

    /// Counts a ledger's verdicts per trigger.
    private func count(_ verdicts: [PhoneTransitionLedger.Verdict]) {
        guard !verdicts.isEmpty else { return }
        context.counters.countPhones { counts in
            for verdict in verdicts {
                if verdict.agrees { counts.triggers[verdict.trigger, default: .init()].agree += 1 }
                else { counts.triggers[verdict.trigger, default: .init()].disagree += 1 }
            }
        }
    }

    /// Gateway clock tick at `now`: each slot's deadlines, its held-back position's trailing
    /// publish, then which slots leave memory.
    private func tick(now: Double, state s: inout State, mustWait: inout Bool) {
        tickTrips(&s, mustWait: &mustWait)
        let paused = s.paused != nil
        let stateInterval = context.config.output.stateInterval
        var leaving: [(device: String, fate: ShardRetention.Fate)] = []
        var slotsDue = Double.infinity  // when the first staying device needs the next tick
        // Each slot changed in place through its box (slots leave only after the walk), and
        // looked at where it is, not copied (a copy retains each of its references).
        for (device, box) in s.slots {
            let fate = tick(
                &box.slot, now: now, paused: paused, stateInterval: stateInterval, hasTrips: s.trips[device] != nil, slotsDue: &slotsDue,
                mustWait: &mustWait)
            if fate != .stays { leaving.append((device, fate)) }
        }
        for (device, fate) in leaving {
            switch fate {
            case .stays:
                break
            case .forgotten:
                if let box = s.slots.removeValue(forKey: device) { s.trackBytes -= box.slot.trackBytes }
                forget(device, mustWait: &mustWait)
            case .hibernates(let saves):
                var slot = s.slots.removeValue(forKey: device)!.slot
                // Its held-back position goes out now: no later tick publishes it (a slot that
                // leaves memory before its interval ends, with `gateway.hibernateAfter` under
                // `output.stateInterval`).
                if slot.emission.publishesHeldBack(now: now, stateInterval: stateInterval, leaving: true) {
                    handOver(item([], changed: false, now: now, slot: &slot, forcePublish: true), mustWait: &mustWait)
                }
                if saves { handOver(save(&slot), mustWait: &mustWait) }
                s.hibernated[device] = slot.lastReceived
                if slot.trackBytes > 0 { s.hibernatedTracks[device] = (slot.track, slot.trackBytes) }
                context.logger.debug("hibernated a device idle for gateway.hibernateAfter", ["device.id": device])
            }
        }
        for (device, lastReport) in s.hibernated where retention.forgets(lastReport: lastReport, now: now) {
            s.hibernated[device] = nil
            if let kept = s.hibernatedTracks.removeValue(forKey: device) { s.trackBytes -= kept.bytes }
            forget(device, mustWait: &mustWait)
        }
        scheduleTicks(s, slotsDue: slotsDue, now: now)
    }

    /// One slot's part of a tick at `now`: its deadlines, its held-back position's trailing
    /// publish and its phone's expired claims; whether it stays in memory (if so, `slotsDue`
    /// takes its next tick into account).
    private func tick(_ slot: inout Slot, now: Double, paused: Bool, stateInterval: Double, hasTrips: Bool, slotsDue: inout Double,
                      mustWait: inout Bool) -> ShardRetention.Fate {
        if let deadline = slot.monitor.nextDeadline(), deadline <= now {
            var changed = false
            let notes = slot.monitor.advance(to: now, stateChanged: &changed)
            handOver(item(notes, changed: changed, now: now, slot: &slot), mustWait: &mustWait)
        }
        // A position the interval held back goes out when the interval ends: the retained
        // state ends where the device stopped.
        if slot.emission.publishesHeldBack(now: now, stateInterval: stateInterval) {
            handOver(item([], changed: false, now: now, slot: &slot, forcePublish: true), mustWait: &mustWait)
        }
        if let phone = slot.phone, phone.ledger.waitingClaims > 0 { count(phone.ledger.expire(now: now)) }
        let fate = retention.fate(
            lastReceived: slot.lastReceived, now: now, paused: paused || slot.monitor.isPaused,
            hasDeadline: hasTrips || slot.monitor.nextDeadline() != nil, unsaved: slot.emission.unsaved)
        if fate == .stays { slotsDue = min(slotsDue, due(slot, now: now, hasTrips: hasTrips)) }
        return fate
    }

    /// The slot's state as it is in memory, to be saved (hibernation, a stop).
    private func save(_ slot: inout Slot) -> EventCommitter.Item {
        slot.emission.saved(decisions: slot.monitor.decisions)
        slot.committed = slot.monitor.committedFacts
        return EventCommitter.Item(state: DeviceStateChange(device: slot.monitor.device, state: slot.monitor.serialized()))
    }

    /// Saves every state in memory that differs from the database's (positions, pending
    /// crossings: docs/configuration.md "Durability"), at a stop, before the committer's last commit.
    func saveUnsaved() async {
        await mutate { s, mustWait in
            for box in s.slots.values where box.slot.emission.unsaved { handOver(save(&box.slot), mustWait: &mustWait) }
        }
    }

    /// When each device of this shard last reported (gateway clock), in memory or hibernated.
    func lastReports() -> [String: Double] {
        state.withLock { s in
            var reports = s.hibernated
            for (device, box) in s.slots { reports[device] = box.slot.lastReceived }
            return reports
        }
    }

    /// Forgets a device: its state leaves the database and its retained state is cleared.
    private func forget(_ device: String, mustWait: inout Bool) {
        census.release(device)
        context.logger.info("forgetting a device idle for gateway.forgetAfter", ["device.id": device])
        handOver(EventCommitter.Item(
            state: DeviceStateChange(device: device, state: nil), publication: .forgotten(device)), mustWait: &mustWait)
    }

    /// What a step's notifications, state change and device state publication give to hand
    /// over (nil: nothing), as the slot's ``OutcomeEmission`` decides; updates its bookkeeping.
    /// `forcePublish`: the state is published whatever the interval (a new snapshot, a held-back
    /// position's trailing publish).
    func item(_ notes: [FenceNotification], changed: Bool, now: Double, slot: inout Slot, forcePublish: Bool = false) -> EventCommitter.Item? {
        var item = EventCommitter.Item()
        let device = slot.monitor.device
        // Device state: when the inside set changes, else at most every stateInterval.
        var stays: [DeviceMonitor.Stay]?
        let decided = slot.emission.savesState(decisions: slot.monitor.decisions, stateChanged: changed, notified: !notes.isEmpty)
        if decided {
            let current = slot.monitor.stays
            stays = current
            if let phone = slot.phone { count(phone.ledger.gatewayStays(phone.keys(current), time: slot.monitor.lastFixTime ?? now)) }
            context.expectations?.observe(device: device, notes: notes, stays: current, into: &item)
        }
        let publish = slot.emission.publishes(stays: stays, now: now, stateInterval: context.config.output.stateInterval, force: forcePublish)
        // The wall clock only for what is emitted (most updates emit nothing).
        guard publish || !notes.isEmpty else {
            if decided { settleState(of: &slot, in: &item) }
            return item.isEmpty ? nil : item
        }
        let wall = WallClock.now()
        // The state above keeps every decision; only what is inside its schedule leaves.
        let (published, outside) = notes.inSchedule(clock: wall)
        if outside > 0 { context.counters.outsideSchedule.add(outside, ordering: .relaxed) }
        // Past `input.maxEventsPerDevice` in a minute of the device's fix time (or ten times it
        // in a minute of the gateway's clock), an event is counted, not journaled or published;
        // the state above and the publication below still tell where the device is.
        for note in published {
            switch slot.emission.admitEvent(fixTime: slot.monitor.lastFixTime ?? note.position.time, now: now, limit: eventRate.limit) {
            case .emit:
                context.eventBuilder.append(note, emitted: wall, trackerID: slot.trackerID, owntracks: slot.owntracks, to: &item)
            case .limited(let first, let window):
                context.counters.eventRateLimited.add(1, ordering: .relaxed)
                eventRate.refused(device: device, now: now, first: first, window: window)
            }
        }
        if publish {
            slot.emission.published(at: now)
            item.publication = context.publication(of: slot.monitor, updated: wall)
        }
        if decided { settleState(of: &slot, in: &item) }
        return item.isEmpty ? nil : item
    }

    /// A step decided something a restart must not lose: its state goes into `item` unless
    /// the step's journaled events tell all of it (the database's state, with the journal's
    /// later events folded in, gives the monitor's committed facts again: docs/architecture.md
    /// "Commit and outbox"). At most a device's first update (its triggers newly know it), a
    /// silent baseline or a decision nothing journals (outside its schedule, past
    /// `input.maxEventsPerDevice`, an unpublished exit) writes the state itself.
    private func settleState(of slot: inout Slot, in item: inout EventCommitter.Item) {
        let device = slot.monitor.device
        var told = slot.committed
        for event in item.events where event.device == device {
            guard let type = JournaledDecision.Kind(rawValue: event.type) else { continue }
            told = told.applying(JournaledDecision(type: type, trigger: event.trigger, layer: event.layer, fence: event.fence,
                                                   fixTime: event.fixTime))
        }
        let facts = slot.monitor.committedFacts
        if told != facts {
            item.state = DeviceStateChange(device: device, state: slot.monitor.serialized())
        } else {
            slot.emission.toldByJournal()
        }
        slot.committed = facts
    }
}
