/// An event a trip decides (docs/trips.md "Events").
public struct TripEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// `along` went past the start's corridor.
        case tripStarted
        /// More than the corridor from the route for `offRouteAfter` seconds of fix time.
        case offRoute
        /// Back within the corridor for `offRouteAfter` seconds of fix time.
        case backOnRoute
        /// A fix inside the destination, after `tripStarted`, with `along` at least the route's
        /// length minus the corridor. Final.
        case arrived
        /// The ETA passed `by`, the first time. Once per trip.
        case late
        /// `by` passed on the wall clock before an arrival. Final.
        case missed
        /// Faster than the plan's `speedLimit` plus 5 % for 10 s of fix time, while the trip
        /// is open (``SpeedWatch``).
        case overspeed
        /// After `overspeed`, slower than the limit minus 5 % for 10 s of fix time. None when
        /// the trip ends first.
        case speedOk
    }

    public var kind: Kind
    /// The deciding fix's time; `by` for `missed`.
    public var time: Double
    /// The progress figures right after the decision (for `missed`, those of the last fix).
    public var figures: TripFigures

    public init(kind: Kind, time: Double, figures: TripFigures) {
        self.kind = kind
        self.time = time
        self.figures = figures
    }
}
