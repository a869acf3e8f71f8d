import FoundationEssentials
import GeotriggerCore
import Store
import Synchronization

/// One worker of the ``MonitorPool``: owns the monitors of the devices whose id hashes to it
/// and drains its own bounded mailbox, so a device's updates are handled one at a time and in
/// order, and a burst makes the ingest wait instead of growing memory.
///
/// Every device still has its own monitor (the pure ``DeviceMonitor`` value); the shard is the
/// executor. One actor or task per device would cost ~4 KB and a hop per update (CONVENTIONS.md
/// figures); one worker per core keeps 10,000 devices in a few MB.
final class DeviceShard: Sendable {
    enum Work: Sendable {
        case update(LocationUpdate, receivedAt: Double, trackerID: String?, owntracks: Bool)
        /// Gateway clock tick: silence confirmations, stale exits, hibernation, forgetting.
        case tick(Double)
        /// A new fence/trigger snapshot (SIGHUP).
        case adopt(EngineSnapshot, Double)
        /// A monitor restored from the database at start.
        case restore([UInt8], Double)
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
    }

    /// A device's monitor and what the gateway remembers beside it.
    struct Slot {
        var monitor: DeviceMonitor
        var lastReceived: Double
        var trackerID: String?
        var owntracks = false
        /// Confirmed stays at the last state publication (publish again when they change).
        var publishedStays: [DeviceMonitor.Stay] = []
        var lastPublished = -Double.infinity
        /// The last accepted position is not yet in the database.
        var positionDirty = false
    }

    let mailbox: BoundedQueue<Work>
    let context: ServeContext
    /// Devices in memory plus hibernated ones (for the status counters).
    let deviceCount = Atomic<Int>(0)

    /// Devices of this shard with a state saved by the previous run (restored at start).
    let saved: Set<String>

    init(context: ServeContext, capacity: Int, saved: Set<String> = []) {
        self.context = context
        self.saved = saved
        self.mailbox = BoundedQueue(capacity: capacity)
    }

    /// Handles work until the mailbox is finished.
    func run(snapshot initial: EngineSnapshot) async {
        var snapshot = initial
        var slots: [String: Slot] = [:]
        /// Hibernated devices: last accepted fix time (for forgetting).
        var hibernated: [String: Double] = [:]
        var paused: Double?
        /// Devices whose own feed is down, since when (gateway clock).
        var pausedDevices: [String: Double] = [:]
        while let work = await mailbox.next() {
            switch work {
            case .update(let update, let now, let trackerID, let owntracks):
                // One hash lookup, and the slot changed in place through `values[index]`
                // (`slots[device]!` as an inout copies the slot out and back, an async call too).
                var index = slots.index(forKey: update.device)
                if index == nil {
                    slots[update.device] = await wake(update.device, snapshot: snapshot, now: now, hibernated: &hibernated)
                    index = slots.index(forKey: update.device)
                }
                if let item = handle(update, now: now, trackerID: trackerID, owntracks: owntracks, slot: &slots.values[index!]) {
                    await context.committer.add(item)
                }
            case .tick(let now):
                await tick(now: now, slots: &slots, hibernated: &hibernated, paused: paused != nil)
            case .adopt(let newSnapshot, let now):
                snapshot = newSnapshot
                for device in Array(slots.keys) {
                    var changed = false
                    let notes = slots[device]!.monitor.adopt(newSnapshot, now: now, stateChanged: &changed)
                    await commit(notes, changed: changed, now: now, slot: &slots[device]!, forcePublish: true)
                }
            case .restore(let bytes, let now):
                do {
                    let (monitor, notes) = try DeviceMonitor.restore(from: bytes, snapshot: snapshot, now: now)
                    // An update may have woken the device (from the database, newer) before
                    // its restore arrived: never go back to the state read at start.
                    guard slots[monitor.device] == nil else { break }
                    var slot = Slot(monitor: monitor, lastReceived: now)
                    slot.publishedStays = monitor.stays
                    // Its clocks start at `now`: paused from there while its feed is down.
                    if pausedDevices[monitor.device] != nil { slot.monitor.pause(at: now) }
                    context.statePublisher.publish(device: monitor.device, payload: payloadBytes(monitor.stateJSON(updated: WallClock.now())))
                    await commit(notes, changed: !notes.isEmpty, now: now, slot: &slot)
                    slots[monitor.device] = slot
                } catch {
                    context.logger.error("a saved monitor state could not be read and is ignored: \(error)")
                }
            case .pause(let now):
                paused = now
                for device in Array(slots.keys) { slots[device]!.monitor.pause(at: now) }
            case .resume(let now):
                paused = nil
                for device in Array(slots.keys) where pausedDevices[device] == nil { slots[device]!.monitor.resume(at: now) }
            case .pauseDevice(let device, let now):
                if pausedDevices[device] == nil { pausedDevices[device] = now }
                slots[device]?.monitor.pause(at: now)
            case .resumeDevice(let device, let now):
                pausedDevices[device] = nil
                // A monitor that is not paused keeps its clocks (resume would restart them).
                if paused == nil, slots[device]?.monitor.isPaused == true { slots[device]!.monitor.resume(at: now) }
            case .barrier(let c):
                c.resume()
            case .query(let query, let c):
                c.resume(returning: answer(query, slots: slots, hibernated: hibernated, now: WallClock.now()))
            }
            deviceCount.store(slots.count + hibernated.count, ordering: .relaxed)
        }
    }

    /// A device's slot: restored from the database if it was hibernated or seen before, else new.
    private func wake(_ device: String, snapshot: EngineSnapshot, now: Double, hibernated: inout [String: Double]) async -> Slot {
        // Only a device hibernated in this run, or saved by the previous one and not restored
        // yet, has a state in the database: a new device needs no read (which would wait
        // behind the commits on the store's queue).
        let stored = hibernated.removeValue(forKey: device) != nil || saved.contains(device)
        if stored, let bytes = try? await context.store.deviceState(device),
            let (monitor, notes) = try? DeviceMonitor.restore(from: bytes, snapshot: snapshot, now: now)
        {
            var slot = Slot(monitor: monitor, lastReceived: now)
            slot.publishedStays = monitor.stays
            await commit(notes, changed: !notes.isEmpty, now: now, slot: &slot)
            return slot
        }
        return Slot(monitor: DeviceMonitor(device: device, snapshot: snapshot, now: now), lastReceived: now)
    }

    /// Applies one update to its device's slot; what is to be committed, if anything.
    private func handle(_ update: LocationUpdate, now: Double, trackerID: String?, owntracks: Bool, slot: inout Slot) -> EventCommitter.Item? {
        if let trackerID { slot.trackerID = trackerID }
        slot.owntracks = owntracks
        let outcome = slot.monitor.handle(update, receivedAt: now)
        switch outcome.disposition {
        case .accepted:
            context.counters.accepted.add(1, ordering: .relaxed)
            slot.lastReceived = now
            if let runtime = context.runtimeFences, runtime.isFollowed(update.device) { runtime.followedDeviceMoved(update) }
        case .filtered:
            context.counters.drop(.filtered)
            slot.lastReceived = now
            return nil
        case .outOfOrder:
            context.counters.drop(.outOfOrder)
            return nil
        case .duplicate:
            context.counters.drop(.duplicate)
            return nil
        }
        if outcome.positionChanged { slot.positionDirty = true }
        return item(outcome.notifications, changed: outcome.stateChanged, now: now, slot: &slot)
    }

    private func tick(now: Double, slots: inout [String: Slot], hibernated: inout [String: Double], paused: Bool) async {
        let wall = WallClock.now()
        var leaving: [String] = []
        for device in Array(slots.keys) {
            if let deadline = slots[device]!.monitor.nextDeadline(), deadline <= now {
                var changed = false
                let notes = slots[device]!.monitor.advance(to: now, stateChanged: &changed)
                await commit(notes, changed: changed, now: now, slot: &slots[device]!)
            }
            let slot = slots[device]!
            // A paused monitor has no deadline but must not hibernate: its stale clock resumes
            // when its feed comes back, with or without a new update.
            if !paused, !slot.monitor.isPaused, now - slot.lastReceived >= context.config.gateway.hibernateAfter,
                slot.monitor.nextDeadline() == nil
            {
                leaving.append(device)
            }
        }
        for device in leaving {
            var slot = slots.removeValue(forKey: device)!
            let fix = slot.monitor.lastUpdate?.time ?? wall
            if wall - fix >= context.config.gateway.forgetAfter {
                await forget(device)
                continue
            }
            if slot.positionDirty {
                slot.positionDirty = false
                await context.committer.add(EventCommitter.Item(state: DeviceStateChange(device: device, state: slot.monitor.serialized())))
            }
            hibernated[device] = fix
        }
        for (device, fix) in hibernated where wall - fix >= context.config.gateway.forgetAfter {
            hibernated[device] = nil
            await forget(device)
        }
    }

    /// Forgets a device: its state leaves the database and its retained state is cleared.
    private func forget(_ device: String) async {
        context.logger.info("forgetting a device idle for gateway.forgetAfter", ["device.id": device])
        await context.committer.add(EventCommitter.Item(
            state: DeviceStateChange(device: device, state: nil), publication: (device: device, payload: nil)))
    }

    /// Turns a step's notifications into events and hands them, with the state change and any
    /// device state publication, to the committer.
    private func commit(_ notes: [FenceNotification], changed: Bool, now: Double, slot: inout Slot, forcePublish: Bool = false) async {
        if let item = item(notes, changed: changed, now: now, slot: &slot, forcePublish: forcePublish) {
            await context.committer.add(item)
        }
    }

    /// What a step's notifications, state change and device state publication give to commit
    /// (nil: nothing); updates the slot's publication bookkeeping.
    private func item(_ notes: [FenceNotification], changed: Bool, now: Double, slot: inout Slot, forcePublish: Bool = false) -> EventCommitter.Item? {
        var item = EventCommitter.Item()
        let device = slot.monitor.device
        if changed || !notes.isEmpty {
            item.state = DeviceStateChange(device: device, state: slot.monitor.serialized())
            slot.positionDirty = false
        }
        let wall = WallClock.now()
        for note in notes {
            context.eventBuilder.append(note, emitted: wall, trackerID: slot.trackerID, owntracks: slot.owntracks, to: &item)
        }
        // Device state: when the inside set changes, else at most every stateInterval.
        var publish = forcePublish
        if changed || !notes.isEmpty {
            let stays = slot.monitor.stays
            if stays != slot.publishedStays {
                slot.publishedStays = stays
                publish = true
            }
        }
        if !publish, now - slot.lastPublished >= context.config.output.stateInterval { publish = true }
        if publish {
            slot.lastPublished = now
            item.publication = (device: device, payload: payloadBytes(slot.monitor.stateJSON(updated: wall)))
        }
        if item.state != nil || !item.events.isEmpty || item.publication != nil { return item }
        return nil
    }
}

/// The compact UTF-8 JSON text of `value`.
func payloadBytes(_ value: JSONValue) -> [UInt8] {
    value.serializedBytes()
}
