/// Simulated devices walking a route at a constant speed, for `simulate` (ArcGIS's simulated
/// location source over MQTT).
///
/// The route is the polyline of a track's points (straight in lon/lat between them, measured
/// in metres with ``Earth``'s local scale). `N` devices start spread evenly along it: device
/// `k` (0-based) starts `k / N` of the length from the first point. Each call to ``next()``
/// is one tick: tick `t` is at time `start + t × interval`, and every device still walking has
/// moved `t × speed × interval` metres along the route. With `loop` a device that passes the
/// end wraps around to the start; without, it reports the last point once and stops, and the
/// walk ends when every device has stopped. Positions get Gaussian noise of standard deviation
/// `noise` metres per axis (north, east) from a ``SplitMix64`` with the given seed, so a seed
/// always gives the same positions.
public struct RouteWalker: Sendable, Sequence, IteratorProtocol {
    /// The route without repeated consecutive points.
    public let route: [Coordinate]
    /// The route's length in metres.
    public let length: Double
    /// The devices' ids, in the order they are spread along the route.
    public let devices: [String]
    /// Metres per second.
    public let speed: Double
    /// Seconds between ticks.
    public let interval: Double
    /// The accuracy reported with every position (metres, 68 %), if any.
    public let accuracy: Double?
    /// Standard deviation of the position noise per axis, in metres.
    public let noise: Double
    /// Wrap around at the end of the route instead of stopping.
    public let loop: Bool
    /// The time of tick 0, epoch seconds.
    public let start: Double
    /// The tick ``next()`` produces next.
    public private(set) var tick = 0

    /// Distance from the first point to each point of `route`.
    private let cumulative: [Double]
    private var random: SplitMix64
    private var stopped: [Bool]

    /// A walker over `route` (from the file `file`, named in errors). Throws if the route has
    /// fewer than two distinct points, if there are no devices, or if `speed` or `interval` is
    /// not > 0, or `noise` or `accuracy` is negative.
    public init(
        route: [Coordinate], file: String, devices: [String], speed: Double, interval: Double,
        accuracy: Double? = nil, noise: Double = 0, loop: Bool = false, start: Double, seed: UInt64 = 1
    ) throws(TrackError) {
        func fail(_ message: String) -> TrackError { TrackError(file: file, message: message) }
        guard speed.isFinite, speed > 0 else { throw fail("the speed must be > 0 metres per second, found \(speed)") }
        guard interval.isFinite, interval > 0 else { throw fail("the interval must be > 0 seconds, found \(interval)") }
        guard noise.isFinite, noise >= 0 else { throw fail("the noise must be >= 0 metres, found \(noise)") }
        if let accuracy, !(accuracy.isFinite && accuracy >= 0) {
            throw fail("the accuracy must be >= 0 metres, found \(accuracy)")
        }
        guard !devices.isEmpty else { throw fail("a simulation needs at least one device") }
        var points: [Coordinate] = []
        for c in route where points.last != c { points.append(c) }
        guard points.count >= 2 else {
            throw fail("a route needs at least two distinct points, found \(points.count)")
        }
        var cumulative = [0.0]
        for i in 1..<points.count {
            cumulative.append(cumulative[i - 1] + RouteGeometry.distance(from: points[i - 1], to: points[i]))
        }
        self.route = points
        self.cumulative = cumulative
        self.length = cumulative[cumulative.count - 1]
        self.devices = devices
        self.speed = speed
        self.interval = interval
        self.accuracy = accuracy
        self.noise = noise
        self.loop = loop
        self.start = start
        self.random = SplitMix64(seed: seed)
        self.stopped = Array(repeating: false, count: devices.count)
    }

    /// Device ids for `--device ID --devices N`: `ID` alone for one device (or fewer), else `ID-1` … `ID-N`.
    public static func deviceIDs(base: String, count: Int) -> [String] {
        count <= 1 ? [base] : (1...count).map { "\(base)-\($0)" }
    }

    /// The positions of every device still walking at the next tick, in device order; nil when
    /// the walk has ended (never with `loop`).
    public mutating func next() -> [LocationUpdate]? {
        guard stopped.contains(false) else { return nil }
        let time = start + Double(tick) * interval
        let travelled = Double(tick) * speed * interval
        var positions: [LocationUpdate] = []
        positions.reserveCapacity(devices.count)
        for k in devices.indices where !stopped[k] {
            var distance = Double(k) / Double(devices.count) * length + travelled
            if loop {
                distance = distance.truncatingRemainder(dividingBy: length)
            } else if distance >= length {
                distance = length
                stopped[k] = true
            }
            let (on, heading) = position(atDistance: distance)
            var coordinate = on
            if noise > 0 {
                let north = random.nextGaussian() * noise
                let east = random.nextGaussian() * noise
                coordinate = RouteGeometry.moved(on, east: east, north: north)
            }
            positions.append(
                LocationUpdate(
                    device: devices[k], lat: coordinate.lat, lon: coordinate.lon, time: time, accuracy: accuracy,
                    speed: stopped[k] ? 0 : speed, heading: heading))
        }
        tick += 1
        return positions
    }

    /// The point `distance` metres along the route (clamped to it), without noise, and the
    /// bearing of the segment it lies on.
    public func position(atDistance distance: Double) -> (coordinate: Coordinate, heading: Double) {
        let d = Swift.min(Swift.max(distance, 0), length)
        // The last segment start at or before d.
        var low = 0
        var high = cumulative.count - 2
        while low < high {
            let mid = (low + high + 1) / 2
            if cumulative[mid] <= d { low = mid } else { high = mid - 1 }
        }
        let a = route[low]
        let b = route[low + 1]
        let segment = cumulative[low + 1] - cumulative[low]
        let f = segment > 0 ? (d - cumulative[low]) / segment : 0
        var lon = a.lon + f * RouteGeometry.longitudeDelta(from: a.lon, to: b.lon)
        if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
        return (Coordinate(lat: a.lat + f * (b.lat - a.lat), lon: lon), RouteGeometry.bearing(from: a, to: b))
    }
}
