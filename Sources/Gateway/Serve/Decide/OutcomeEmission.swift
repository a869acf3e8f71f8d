import GeotriggerCore

/// What a device's monitor steps emit, as values: whether a step's state is saved, whether the
/// retained device state is published (by a step, or at a clock tick for a position the
/// interval held back), and which events pass `input.maxEventsPerDevice`. One per device, in
/// its ``DeviceShard/Slot``, with the bookkeeping those decisions need.
///
/// It does nothing itself: no clock, no counters, no building of events. The shard
/// (`DeviceShard.item`) asks it step by step and carries the answers out: it serializes the
/// state, builds the events (``EventBuilder``), counts and warns about refused ones
/// (``DeviceShard/EventRateWarning``) and makes the publication (`OutcomeEmissionTests`).
/// Every method is a few comparisons on the slot's own words: nothing is allocated.
struct OutcomeEmission: Sendable, Equatable {
    /// Confirmed stays at the last state publication (publish again when they change).
    private(set) var publishedStays: [DeviceMonitor.Stay] = []
    /// When the state was last published (gateway clock).
    private(set) var lastPublished = -Double.infinity
    /// The state in memory differs from the database's: the last accepted position, or a
    /// pending crossing started or cancelled since the last save. Saved at hibernation and at a
    /// stop (docs/configuration.md "Durability": writes follow decisions, not updates).
    private(set) var unsaved = false
    /// The monitor's ``DeviceMonitor/decisions`` at the last saved state.
    private(set) var savedDecisions: UInt32
    /// The last accepted position is not yet in the retained state: `stateInterval` held it
    /// back, and it goes out when the interval ends (``publishesHeldBack(now:stateInterval:leaving:)``).
    private(set) var positionUnpublished = false
    /// Its events per minute of fix time and of the gateway's clock (`input.maxEventsPerDevice`).
    private(set) var eventRate = EventRateLimiter()

    /// What one event decided by the monitor does.
    enum EventVerdict: Sendable, Equatable {
        /// Journaled and published.
        case emit
        /// Past `input.maxEventsPerDevice` in this minute of the device's fix time, or past ten
        /// times it in this minute of the gateway's clock (`window`): counted as
        /// `eventRateLimited`, neither journaled nor published; `first`: the first refused in
        /// that minute (raises the warning).
        case limited(first: Bool, window: EventRateLimiter.Window = .fixTime)
    }

    /// `decisions`: the monitor's ``DeviceMonitor/decisions`` as the database has it (a new or
    /// restored monitor's).
    init(publishedStays: [DeviceMonitor.Stay] = [], decisions: UInt32 = 0) {
        self.publishedStays = publishedStays
        self.savedDecisions = decisions
    }

    /// An accepted update moved the device: its position waits for the next saved state and
    /// the next publication.
    mutating func positionChanged() {
        unsaved = true
        positionUnpublished = true
    }

    /// The step's decisions went to the journal only: the database's state takes them at its
    /// next fold, and the slot is saved whole when it hibernates or the gateway stops, so
    /// that a hibernated device is read back with them.
    mutating func toldByJournal() { unsaved = true }

    /// The state was saved as it is in memory (at hibernation or a stop).
    mutating func saved(decisions: UInt32) {
        unsaved = false
        savedDecisions = decisions
    }

    /// Whether a step's state is saved: the monitor decided something a restart must not lose
    /// since the last save (`decisions` moved on: a stay began or ended, a dwell fired, a
    /// trigger newly knows the device) or the step notified (`notified`); the saved state
    /// carries the position and pending crossings too. A step that only started or cancelled
    /// a pending crossing (`stateChanged`) is not saved: it leaves the state ``unsaved``.
    mutating func savesState(decisions: UInt32, stateChanged: Bool, notified: Bool) -> Bool {
        guard decisions != savedDecisions || notified else {
            if stateChanged { unsaved = true }
            return false
        }
        saved(decisions: decisions)
        return true
    }

    /// Whether the retained device state is published now: forced (a new snapshot), its
    /// confirmed stays changed since the last publication (`stays`: read only for a step that
    /// saves its state, nil otherwise), or `stateInterval` passed since the last one. Call
    /// ``published(at:)`` once it is.
    mutating func publishes(stays: [DeviceMonitor.Stay]?, now: Double, stateInterval: Double, force: Bool = false) -> Bool {
        var publish = force
        if let stays, stays != publishedStays {
            publishedStays = stays
            publish = true
        }
        return publish || now - lastPublished >= stateInterval
    }

    /// The state was published at `now`, with the last accepted position.
    mutating func published(at now: Double) {
        lastPublished = now
        positionUnpublished = false
    }

    /// Whether a clock tick at `now` publishes the state for a position that `stateInterval`
    /// held back (its trailing publish): due at the last publication + `stateInterval`, so the
    /// retained state ends at the last accepted position even when the device stops reporting.
    /// `leaving`: the slot leaves memory (hibernation), so no later tick would publish it. A
    /// flag and one comparison: the tick asks it of every slot. Call ``published(at:)`` once
    /// it is.
    func publishesHeldBack(now: Double, stateInterval: Double, leaving: Bool = false) -> Bool {
        positionUnpublished && (leaving || now - lastPublished >= stateInterval)
    }

    /// Whether one more event, decided when the device's fix time is `fixTime` and the
    /// gateway's clock reads `now`, goes out: at most `limit` per minute of fix time and ten
    /// times that per minute of the gateway's clock (``EventRateLimiter``).
    mutating func admitEvent(fixTime: Double, now: Double, limit: Int) -> EventVerdict {
        switch eventRate.admit(at: fixTime, now: now, limit: limit) {
        case .admitted: .emit
        case .refused(let first, let window): .limited(first: first, window: window)
        }
    }
}
