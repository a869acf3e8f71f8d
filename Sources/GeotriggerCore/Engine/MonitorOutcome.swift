/// What ``DeviceMonitor/handle(_:receivedAt:)`` did with one update.
public struct MonitorOutcome: Sendable, Equatable {
    /// Whether the update was taken, and if not, the reason it is counted under.
    public enum Disposition: String, Sendable, Equatable {
        /// Taken (by at least one trigger, or no trigger applies to the device).
        case accepted
        /// Fix time older than the last accepted one.
        case outOfOrder
        /// Fix time equal to the last accepted one.
        case duplicate
        /// Every trigger applying to the device has a `filter` that rejected it: the device is
        /// kept alive, nothing else changes.
        case filtered
    }

    public var disposition: Disposition
    /// Enter, exit and dwell notifications decided by this update, in the order decided.
    public var notifications: [FenceNotification]
    /// True if the state that must be committed with the notifications changed (inside / pending /
    /// dwell state, or which triggers know the device). The store commits it together with them.
    public var stateChanged: Bool
    /// True if the last accepted position changed (every accepted update); it may be persisted
    /// lazily: losing it loses nothing but out-of-order protection for updates already seen.
    public var positionChanged: Bool

    public init(disposition: Disposition, notifications: [FenceNotification] = [], stateChanged: Bool = false, positionChanged: Bool = false) {
        self.disposition = disposition
        self.notifications = notifications
        self.stateChanged = stateChanged
        self.positionChanged = positionChanged
    }
}
