/// Where a trip stands (docs/trips.md "Progress"): the `state` of its progress.
public enum TripState: String, Sendable, Equatable, CaseIterable {
    /// Assigned; the device has not yet gone past the start's corridor along the route.
    case pending
    /// Started and within the corridor (or not yet out of it for `offRouteAfter` seconds).
    case onRoute
    /// More than the corridor from the route for `offRouteAfter` seconds, not yet back as long.
    case offRoute
    /// Final: a fix inside the destination near the route's end.
    case arrived
    /// Final: `by` passed on the wall clock before an arrival.
    case missed
    /// Final: the dispatcher cancelled the trip.
    case cancelled

    /// Arrived, missed or cancelled: the trip has ended and decides nothing more.
    public var isFinal: Bool {
        switch self {
        case .pending, .onRoute, .offRoute: false
        case .arrived, .missed, .cancelled: true
        }
    }
}
