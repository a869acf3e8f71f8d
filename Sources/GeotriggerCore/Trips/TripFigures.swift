/// A trip's progress figures (docs/trips.md "Progress"), as published on its progress topic
/// and carried by its events.
public struct TripFigures: Sendable, Equatable {
    public var state: TripState
    /// Metres along the route: the device's last position within the corridor, projected.
    public var along: Double
    /// Metres from `along` to the end of the route.
    public var remaining: Double
    /// Metres from the last fix to the route (the part searched: see ``TripRoute/project(_:from:until:corridor:)``);
    /// nil before the first fix.
    public var offBy: Double?
    /// The estimated arrival at the route's end (seconds since 1970), from `remaining` and the
    /// recent moving speed; nil without a moving speed.
    public var eta: Double?
    /// The device's speed (m/s) at its last fix; nil when none was read in the last 10 s of fix time.
    public var speed: Double?
    /// The last fix's time and position; nil before the first fix.
    public var time: Double?
    public var position: Coordinate?

    public init(
        state: TripState, along: Double, remaining: Double, offBy: Double?, eta: Double?, speed: Double?, time: Double?,
        position: Coordinate?
    ) {
        self.state = state
        self.along = along
        self.remaining = remaining
        self.offBy = offBy
        self.eta = eta
        self.speed = speed
        self.time = time
        self.position = position
    }
}
