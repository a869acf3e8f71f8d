/// Which of enter and exit a trigger publishes (`rule`). State changes either way.
public enum TriggerRule: String, Sendable, CaseIterable {
    case enter
    case exit
    case enterOrExit

    public var publishesEnter: Bool { self != .exit }
    public var publishesExit: Bool { self != .enter }
}

/// How a fix is compared with a fence (`accuracyMode`).
public enum AccuracyMode: String, Sendable, CaseIterable {
    /// The fix as a point.
    case useGeometry
    /// The fix as the circle of its accuracy radius (a point when the accuracy is unknown).
    case useGeometryWithAccuracy
}

/// ArcGIS's rules for accuracy circles (`spatialRelationship`), evaluated on `d`, the signed
/// distance in metres from the fix to the buffered boundary (negative inside), and `r`, the
/// circle's radius (0 for a point):
/// enter-intersects `d <= r`, enter-contains `d <= -r`, exit-does-not-intersect `d > r`,
/// exit-does-not-contain `d > -r`. An exit margin moves the exit boundary out: `d - margin`.
public enum SpatialRelationship: String, Sendable, CaseIterable {
    case enterIntersectsAndExitDoesNotIntersect
    case enterContainsAndExitDoesNotContain
    case enterContainsAndExitDoesNotIntersect

    /// True if a fix at signed distance `d` with radius `r` enters (from outside).
    @inline(__always)
    public func enters(distance d: Double, radius r: Double) -> Bool {
        self == .enterIntersectsAndExitDoesNotIntersect ? d <= r : d <= -r
    }

    /// True if a fix at signed distance `d` (already reduced by the exit margin) with radius `r`
    /// exits (from inside).
    @inline(__always)
    public func exits(distance d: Double, radius r: Double) -> Bool {
        self == .enterContainsAndExitDoesNotContain ? d > -r : d > r
    }
}

/// What a device's first update inside a fence does (`initial`), when no state ever existed
/// for (device, trigger, fence).
public enum InitialMode: String, Sendable, CaseIterable {
    /// Publish enter (after `enterAfter`, like any crossing).
    case enter
    /// Record the stay silently (its visit id is the baseline's id).
    case baseline
}

/// Where a trigger's events go (`delivery`).
public enum Delivery: String, Sendable, CaseIterable {
    case local
    case remote
    case both
}
