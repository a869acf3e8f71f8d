/// One trip followed fix by fix (docs/trips.md): where the device is along its route, whether
/// it is on it, when it will arrive, and the events that decides. A value with no clock and no
/// I/O: fixes come through ``update(_:)``, the wall clock through ``clock(_:)``, and the caller
/// publishes what they return.
///
/// - `along` follows the device with ``TripRoute/project(_:from:until:corridor:)``: before the
///   start, and at a first fix after a restart, from the last `along` over the whole route (a
///   device may join mid-route); after that forward from the last `along`, as far as the device
///   can have gone since its last fix within the corridor (``maximumSpeed`` for the time since,
///   at least ``minimumReach``, plus the corridor), so one bad fix cannot jump it to a later
///   pass of the route. Only a fix within the corridor moves `along`.
/// - `offRoute` after `offRouteAfter` seconds of fix time out of the corridor (a hold from the
///   first fix out; one fix within ends it); `backOnRoute` the same way back. Only after
///   `tripStarted`: a device that has not yet reached its route is not off it.
/// - `arrived`, `late`, `missed`: see ``TripEvent/Kind``. An arrival needs a fix time at or
///   before `by`, like an expected arrival; after that only `missed` ends the trip.
/// - `overspeed` / `speedOk` with the plan's `speedLimit`: a ``SpeedWatch`` takes every fix
///   while the trip is open, whatever its state (pending, on or off the route); its readings
///   are also the `speed` figure. A trip that ends while overspeed gets no `speedOk`.
/// - A fix at or before the last one's time is ignored; nothing is decided in a final state.
public struct TripProgress: Sendable {
    /// The fastest (m/s) a device is taken to move along its route between fixes.
    public static let maximumSpeed = 70.0
    /// The least distance (metres) ahead of `along` searched for a device on its route.
    public static let minimumReach = 500.0
    /// Progress is published at most once per this many seconds of fix time (and at every event).
    public static let progressInterval = 10.0
    /// `late` is decided from an ETA of at least this many speeds: a device's first speed after
    /// a stand is measured from its last standing fix and counts the stand, and a median of
    /// three leaves one such speed out.
    public static let lateSpeeds = 3
    /// The last speed reading is shown for this many seconds of fix time.
    public static let speedShownFor = 10.0

    public let plan: TripPlan
    public private(set) var state: TripState = .pending
    /// Metres along the route (see ``TripFigures/along``).
    public private(set) var along = 0.0
    /// `tripStarted` was decided.
    public private(set) var started = false
    /// `late` was decided.
    public private(set) var late = false
    /// The fix time a hold began at: out of the corridor while on the route, back within it
    /// while off it; nil when none runs.
    public private(set) var holdStart: Double?
    public private(set) var offBy: Double?
    public private(set) var lastTime: Double?
    public private(set) var lastPosition: Coordinate?

    /// The fix time of the last fix within the corridor: nil until one comes (and after a
    /// restore), when the search is not bounded ahead.
    private var lastWithinTime: Double?
    private var movingSpeed = MovingSpeed()
    /// The speed readings (the `speed` figure) and, with a `speedLimit`, overspeed.
    private var speedWatch = SpeedWatch()
    /// The fix time of the last published progress.
    private var lastProgressTime: Double?
    /// An event (or a cancel) since the last published progress.
    private var changedSinceProgress = true

    public init(plan: TripPlan) {
        self.plan = plan
    }

    /// A trip resumed from `committed` after a restart: its next fix is searched for from the
    /// committed `along` over the rest of the route (the time since is unknown), its next
    /// progress is due at once, and its ETA waits for new speeds.
    public init(plan: TripPlan, restoring committed: Committed) {
        self.init(plan: plan)
        state = committed.state
        along = Swift.min(committed.along, plan.route.length)
        started = committed.started
        late = committed.late
        holdStart = committed.holdStart
        speedWatch = SpeedWatch(after: nil, overspeed: committed.overspeed)
    }

    // MARK: Deciding

    /// Takes one fix of the trip's device: the events it decides, in order.
    public mutating func update(_ fix: LocationUpdate) -> [TripEvent] {
        guard !state.isFinal, fix.time.isFinite, lastTime.map({ fix.time > $0 }) ?? true else { return [] }
        lastTime = fix.time
        let c = fix.coordinate
        lastPosition = c
        movingSpeed.add(fix)
        let speedEvent = speedWatch.update(fix, limit: plan.speedLimit ?? .infinity)

        let corridor = plan.corridor
        var until = Double.infinity
        if state != .pending, let since = lastWithinTime {
            until = along + Swift.max(TripProgress.minimumReach, TripProgress.maximumSpeed * (fix.time - since)) + corridor
        }
        let projection = plan.route.project(c, from: along, until: until, corridor: corridor)
        offBy = projection.offBy
        let within = projection.isWithin
        if within {
            along = projection.along
            lastWithinTime = fix.time
        }

        var events: [TripEvent] = []
        switch state {
        case .pending:
            if within, along > plan.startAlong {
                started = true
                state = .onRoute
                holdStart = nil
                events.append(event(.tripStarted, at: fix.time))
            }
        case .onRoute, .offRoute:
            // The hold: out of the corridor while on the route, back within it while off it.
            let leaving = state == .onRoute
            guard within != leaving else {
                holdStart = nil
                break
            }
            let start = holdStart ?? fix.time
            holdStart = start
            if fix.time - start >= plan.offRouteAfter {
                state = leaving ? .offRoute : .onRoute
                holdStart = nil
                events.append(event(leaving ? .offRoute : .backOnRoute, at: fix.time))
            }
        case .arrived, .missed, .cancelled:
            break
        }
        // Decided by a fix of the open trip, before an arrival the same fix may decide.
        switch speedEvent {
        case .overspeed?: events.append(event(.overspeed, at: fix.time))
        case .speedOk?: events.append(event(.speedOk, at: fix.time))
        case nil: break
        }

        if started, !state.isFinal, along >= plan.endAlong, plan.by.map({ fix.time <= $0 }) ?? true,
            plan.destination.contains(c)
        {
            state = .arrived
            holdStart = nil
            events.append(event(.arrived, at: fix.time))
        }
        if !late, !state.isFinal, let by = plan.by, movingSpeed.count >= TripProgress.lateSpeeds, let eta, eta > by {
            late = true
            events.append(event(.late, at: fix.time))
        }
        if !events.isEmpty { changedSinceProgress = true }
        return events
    }

    /// The wall clock (seconds since 1970) reached `wallNow`: `missed` when it is at or past
    /// `by` before an arrival.
    public mutating func clock(_ wallNow: Double) -> [TripEvent] {
        guard !state.isFinal, let by = plan.by, wallNow >= by else { return [] }
        state = .missed
        holdStart = nil
        changedSinceProgress = true
        return [event(.missed, at: by)]
    }

    /// The wall-clock time ``clock(_:)`` has something to decide at: `by`, while the trip is open.
    public var deadline: Double? { state.isFinal ? nil : plan.by }

    /// The dispatcher cancelled the trip (no event: the gateway clears its progress).
    public mutating func cancel() {
        guard !state.isFinal else { return }
        state = .cancelled
        holdStart = nil
        changedSinceProgress = true
    }

    private func event(_ kind: TripEvent.Kind, at time: Double) -> TripEvent {
        TripEvent(kind: kind, time: time, figures: figures)
    }

    // MARK: Figures

    /// Metres from `along` to the end of the route.
    public var remaining: Double { Swift.max(0, plan.route.length - along) }

    /// The estimated arrival at the route's end: the last fix time plus `remaining` over the
    /// recent moving speed (``MovingSpeed``); nil without one, or once the trip has ended.
    public var eta: Double? {
        guard !state.isFinal, let time = lastTime, let speed = movingSpeed.median, speed > 0 else { return nil }
        return time + remaining / speed
    }

    /// The speed at the last fix (reported, else measured between fixes), if one was read in the
    /// last ``speedShownFor`` seconds of fix time.
    public var speed: Double? {
        guard let lastTime, lastTime - speedWatch.lastReadingTime <= TripProgress.speedShownFor else { return nil }
        return speedWatch.lastSpeed
    }

    /// True from `overspeed` until `speedOk` (stays as it was once the trip has ended).
    public var isOverspeed: Bool { speedWatch.isOverspeed }

    public var figures: TripFigures {
        TripFigures(
            state: state, along: along, remaining: remaining, offBy: offBy, eta: eta, speed: speed, time: lastTime,
            position: lastPosition)
    }

    // MARK: Publishing progress

    /// Progress is due: something was decided since the last one (an event, a cancel, or the
    /// first fix), or ``progressInterval`` seconds of fix time have passed since it.
    public var shouldPublishProgress: Bool {
        if changedSinceProgress { return lastTime != nil || state.isFinal }
        guard let time = lastTime, let last = lastProgressTime else { return false }
        return time - last >= TripProgress.progressInterval
    }

    /// The due progress follows a decision (an event, a cancel, the trip's first fix, a restart)
    /// rather than only moving the figures on (``progressInterval`` after the last): the gateway
    /// publishes the first kind at QoS 1 and the second at QoS 0 (docs/trips.md "Progress").
    public var progressFollowsChange: Bool { changedSinceProgress }

    /// The caller published ``figures``.
    public mutating func progressPublished() {
        lastProgressTime = lastTime
        changedSinceProgress = false
    }
}
