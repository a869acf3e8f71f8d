/// What a dispatcher asked of a trip (docs/trips.md "The request"), with its defaults applied.
public struct TripPlan: Sendable {
    public var route: TripRoute
    /// Metres either side of the route that count as on it (`corridor`, default 50).
    public var corridor: Double
    /// Seconds of fix time out of (or back within) the corridor before `offRoute` (or
    /// `backOnRoute`) (`offRouteAfter`, default 30).
    public var offRouteAfter: Double
    /// Where the trip arrives (`to`): by default the route's end buffered by the corridor.
    public var destination: any TripDestination
    /// The deadline (seconds since 1970), if any (`by`).
    public var by: Double?
    /// The speed limit (m/s > 0) along the whole route, if any (`speedLimit`): `overspeed` /
    /// `speedOk` while the trip is open (docs/trips.md "Speed limits").
    public var speedLimit: Double?

    public static let defaultCorridor = 50.0
    public static let defaultOffRouteAfter = 30.0

    public init(
        route: TripRoute, corridor: Double = TripPlan.defaultCorridor, offRouteAfter: Double = TripPlan.defaultOffRouteAfter,
        destination: (any TripDestination)? = nil, by: Double? = nil, speedLimit: Double? = nil
    ) {
        self.route = route
        self.corridor = corridor
        self.offRouteAfter = offRouteAfter
        self.destination = destination ?? CircleDestination(centre: route.vertices[route.vertices.count - 1], radius: corridor)
        self.by = by
        self.speedLimit = speedLimit.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
    }

    /// `along` past this is past the start's corridor: the corridor, or half the route if that
    /// is shorter (so a route shorter than two corridors can start).
    public var startAlong: Double { Swift.min(corridor, route.length / 2) }

    /// `along` at least this counts as at the route's end for an arrival.
    public var endAlong: Double { Swift.max(0, route.length - corridor) }
}
