/// The kind of a notification: `type` in the event (`notification` is ``notificationName``).
public enum NotificationType: String, Sendable, CaseIterable {
    case enter
    case exit
    case dwell
    /// Faster than the trigger's `speedLimit` inside one of its fences (docs/trips.md "Speed limits").
    case overspeed
    /// Slower than it again, after `overspeed`.
    case speedOk

    /// `entered`, `exited`, `dwelled`, `overspeed`, `speedOk`: the event's `notification` and
    /// Arcade's `$fencenotificationtype` (the speed events have no ArcGIS name: their type).
    public var notificationName: String {
        switch self {
        case .enter: "entered"
        case .exit: "exited"
        case .dwell: "dwelled"
        case .overspeed: "overspeed"
        case .speedOk: "speedOk"
        }
    }

    /// An enter or an exit (the kinds that start and end a visit, and that OwnTracks knows).
    public var isCrossing: Bool { self == .enter || self == .exit }
}

/// Why an exit happened.
public enum ExitReason: String, Sendable, CaseIterable {
    /// The device moved out (a crossing update, confirmed).
    case moved
    /// No update for the trigger's `staleAfter`.
    case stale
    /// The fence left the trigger (removed from its layer, a `where` or `devices` change, or the
    /// trigger itself removed) while the device was inside.
    case fenceRemoved
}

/// One enter, exit, dwell, overspeed or speedOk of one device at one fence for one trigger:
/// everything an event holds except the gateway id and the publication time (see
/// ``eventJSON(gateway:emitted:)``).
public struct FenceNotification: Sendable, Equatable {
    /// Deterministic: from (trigger, layer, fence, device, type, the fix time that decided it).
    public var id: String
    /// The id of the stay's enter (or of its silent baseline).
    public var visit: String
    public var trigger: String
    public var layer: String
    public var fenceID: String
    public var fenceName: String?
    public var fenceProperties: JSONObject
    /// The fence's name or properties were cut (``Fence/truncated``).
    public var fenceTruncated: Bool
    public var device: String
    public var type: NotificationType
    /// Set on exits only.
    public var reason: ExitReason?
    /// The crossing update (or, for `stale` and `fenceRemoved` exits and dwells decided by
    /// silence, the last known position).
    public var position: LocationUpdate
    /// Signed metres from `position` to the buffered boundary, negative inside.
    public var distance: Double
    /// On exit and dwell: this crossing's fix time minus the enter crossing's.
    public var dwellSeconds: Double?
    /// On overspeed and speedOk: the device's speed (m/s) at the fix that decided it, and the
    /// fence's limit in the trigger.
    public var speed: Double?
    public var speedLimit: Double?
    /// From the trigger's `message` expression; nil without one (or when it failed).
    public var message: ArcadeMessage?
    /// Why the `message` expression failed for this notification (for the log), if it did.
    public var messageError: String?
    public var delivery: Delivery
    /// The fix time that decided it (the one ``id`` is derived from): the crossing's, or for a
    /// dwell the enter's plus `dwell`.
    public var decidedAt: Double
    /// Its trigger's `schedule` (nil: always); see ``isInSchedule(clock:)``.
    public var schedule: Schedule?
    /// Inferred between two sparse fixes (`crossings`): the position and time are interpolated.
    public var inferred: Bool

    public init(
        id: String, visit: String, trigger: String, layer: String, fenceID: String, fenceName: String?,
        fenceProperties: JSONObject, device: String, type: NotificationType, reason: ExitReason?,
        position: LocationUpdate, distance: Double, dwellSeconds: Double?, message: ArcadeMessage?,
        messageError: String? = nil, delivery: Delivery, decidedAt: Double? = nil, schedule: Schedule? = nil, inferred: Bool = false,
        fenceTruncated: Bool = false, speed: Double? = nil, speedLimit: Double? = nil
    ) {
        self.id = id
        self.visit = visit
        self.trigger = trigger
        self.layer = layer
        self.fenceID = fenceID
        self.fenceName = fenceName
        self.fenceProperties = fenceProperties
        self.fenceTruncated = fenceTruncated
        self.device = device
        self.type = type
        self.reason = reason
        self.position = position
        self.distance = distance
        self.dwellSeconds = dwellSeconds
        self.message = message
        self.messageError = messageError
        self.delivery = delivery
        self.decidedAt = decidedAt ?? position.time
        self.schedule = schedule
        self.inferred = inferred
        self.speed = speed
        self.speedLimit = speedLimit
    }
}
