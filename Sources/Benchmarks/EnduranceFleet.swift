import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// `bench endurance`'s fleet: where each device is at each of its updates, over a set of zones
/// (the NYC taxi zones). Deterministic: a device's place comes from the seed and its number,
/// the jitter of update `k` from the seed, the device and `k`.
///
/// - parked: inside a zone, at least 13 m from its boundary, each fix within 3 m of that spot;
/// - driving: at 10 m/s to and fro along a 5 km line through the middle of a zone (and across
///   whatever zones lie on it);
/// - edge: parked on a zone's boundary, each fix 1 to 8 m across it, inside and outside
///   alternately (GPS jitter at a kerb on the zone line: with holds every fix cancels the hold
///   the one before started).
struct EnduranceFleet: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        case parked, driving, edge
    }

    /// Shares of the fleet, in percent (or any weights), in ``Kind`` order.
    struct Mix: Sendable, Equatable {
        var parked = 0.0
        var driving = 0.0
        var edge = 0.0

        subscript(kind: Kind) -> Double {
            get {
                switch kind {
                case .parked: parked
                case .driving: driving
                case .edge: edge
                }
            }
            set {
                switch kind {
                case .parked: parked = newValue
                case .driving: driving = newValue
                case .edge: edge = newValue
                }
            }
        }

        var total: Double { parked + driving + edge }

        /// "parked 60 %, driving 20 %, edge 20 %" (the kinds with a share).
        var summary: String {
            Kind.allCases.filter { self[$0] > 0 }.map { "\($0.rawValue) \(IndexBenchmark.format(100 * self[$0] / total, 0)) %" }
                .joined(separator: ", ")
        }

        /// The mix of a `--fleet` name; nil for `idle` (nothing reports).
        static func named(_ name: String) throws(UsageError) -> Mix? {
            switch name {
            case "mixed": return Mix(parked: 60, driving: 20, edge: 20)
            case "parked": return Mix(parked: 100)
            case "edge": return Mix(edge: 100)
            case "driving": return Mix(driving: 100)
            case "idle": return nil
            default: throw UsageError("--fleet expects mixed, parked, edge, driving or idle, got \(name)")
            }
        }

        /// A `--mix` list: `parked=60,driving=20,edge=20` (weights; kinds left out have none).
        static func parse(_ text: String) throws(UsageError) -> Mix {
            var mix = Mix()
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let pair = part.split(separator: "=", omittingEmptySubsequences: false)
                guard pair.count == 2, let kind = Kind(rawValue: String(pair[0]).trimmingSpaces), let share = Double(String(pair[1]).trimmingSpaces),
                    share >= 0, share.isFinite
                else { throw UsageError("--mix expects KIND=SHARE,... with KIND parked, driving or edge, got \(text)") }
                mix[kind] = share
            }
            guard mix.total > 0 else { throw UsageError("--mix needs a share above 0, got \(text)") }
            return mix
        }
    }

    /// One device: its kind and zone, the point it is parked at (on the boundary for `edge`,
    /// the middle of its line for `driving`), a unit direction in metres east and north (the
    /// outward normal of the boundary for `edge`, the line for `driving`) and, for `driving`,
    /// where on its to-and-fro it starts (metres into a cycle of two passes).
    struct Device: Sendable {
        var kind: Kind
        var zone: Int
        var anchor: Coordinate
        var east: Double
        var north: Double
        var start = 0.0
    }

    /// Metres a parked fix is off its spot at most.
    static let parkedJitter = 3.0
    /// Metres across the boundary an edge fix is at least and at most, and along it at most.
    static let edgeAcross = (minimum: 1.0, maximum: 8.0)
    static let edgeAlong = 2.0
    /// A driving device's speed (m/s) and half its line (m).
    static let speed = 10.0
    static let halfLine = 2500.0

    let devices: [Device]
    let seed: UInt64

    /// `count` devices over `zones` in the shares of `mix`, interleaved (device d takes the
    /// kind furthest behind its share), each in a zone of its own drawing.
    init(zones: [Fence], mix: Mix, count: Int, seed: UInt64 = 20_260_101) throws(UsageError) {
        let prepared: [PreparedFence]
        do {
            prepared = try zones.map { fence throws(GeometryError) in try PreparedFence(fence) }
        } catch {
            throw UsageError("cannot prepare the zones: \(error)")
        }
        let polygons = zones.indices.filter { if case .polygons = zones[$0].geometry { true } else { false } }
        guard !polygons.isEmpty else { throw UsageError("the zones hold no polygon") }
        var assigned = [Kind: Double]()
        var devices: [Device] = []
        devices.reserveCapacity(count)
        for d in 0..<count {
            // The kind furthest behind its share of the devices so far.
            let kind = Kind.allCases.max { a, b in
                let da = mix[a] / mix.total * Double(d + 1) - assigned[a, default: 0]
                let db = mix[b] / mix.total * Double(d + 1) - assigned[b, default: 0]
                return da < db || (da == db && a.order > b.order)
            }!
            assigned[kind, default: 0] += 1
            var random = SplitMix64(seed: seed ^ (UInt64(d) &* 0x9E37_79B9_7F4A_7C15))
            devices.append(try Self.place(kind, zones: zones, prepared: prepared, polygons: polygons, random: &random))
        }
        self.devices = devices
        self.seed = seed
    }

    /// A device of `kind` in a zone drawn from `polygons` (another is drawn when one has no
    /// room for it).
    private static func place(
        _ kind: Kind, zones: [Fence], prepared: [PreparedFence], polygons: [Int], random: inout SplitMix64
    ) throws(UsageError) -> Device {
        for _ in 0..<1000 {
            let z = polygons[Int(random.next() % UInt64(polygons.count))]
            switch kind {
            case .parked, .driving:
                guard let spot = interiorPoint(of: prepared[z], depth: parkedJitter + 10, random: &random) else { continue }
                let angle = random.nextUnit() * 2 * .pi
                return Device(kind: kind, zone: z, anchor: spot, east: cos(angle), north: sin(angle), start: random.nextUnit() * 4 * halfLine)
            case .edge:
                guard case .polygons(let rings) = zones[z].geometry, let device = edgeSpot(rings, zone: z, fence: prepared[z], random: &random)
                else { continue }
                return device
            }
        }
        throw UsageError("found no place for a \(kind.rawValue) device in 1,000 draws of a zone")
    }

    /// A random point at least `depth` metres inside `fence` (nil after 200 draws).
    private static func interiorPoint(of fence: PreparedFence, depth: Double, random: inout SplitMix64) -> Coordinate? {
        let b = fence.bounds
        for _ in 0..<200 {
            let p = Coordinate(
                lat: b.minLat + random.nextUnit() * (b.maxLat - b.minLat), lon: b.minLon + random.nextUnit() * (b.maxLon - b.minLon))
            if fence.signedDistance(to: p) <= -depth { return p }
        }
        return nil
    }

    /// The middle of a random exterior edge at least 20 m long, with its outward normal, when
    /// every fix the jitter can make there is on the side it is meant to be (nil otherwise).
    private static func edgeSpot(_ rings: [Polygon], zone: Int, fence: PreparedFence, random: inout SplitMix64) -> Device? {
        guard let ring = rings.randomElement(using: &random)?.exterior, ring.count >= 4 else { return nil }
        let i = Int(random.next() % UInt64(ring.count - 1))
        let a = ring[i], b = ring[i + 1]
        let mid = Coordinate(lat: (a.lat + b.lat) / 2, lon: (a.lon + b.lon) / 2)
        let east = (b.lon - a.lon) / Earth.degreesLongitude(metres: 1, atLatitude: mid.lat)
        let north = (b.lat - a.lat) / Earth.degreesLatitude(metres: 1)
        let length = (east * east + north * north).squareRoot()
        guard length >= 20 else { return nil }
        // The normal to the right of a -> b; turned round if it points inside.
        var device = Device(kind: .edge, zone: zone, anchor: mid, east: north / length, north: -east / length)
        if fence.signedDistance(to: offset(mid, across: 4, along: 0, device)) < 0 {
            device.east = -device.east
            device.north = -device.north
        }
        for across in [edgeAcross.minimum, 4, edgeAcross.maximum] {
            for along in [-edgeAlong, 0, edgeAlong] {
                guard fence.signedDistance(to: offset(mid, across: across, along: along, device)) > 0.2,
                    fence.signedDistance(to: offset(mid, across: -across, along: along, device)) < -0.2
                else { return nil }
            }
        }
        return device
    }

    /// `point` moved `across` metres along the device's direction and `along` metres to the
    /// left of it.
    static func offset(_ point: Coordinate, across: Double, along: Double, _ device: Device) -> Coordinate {
        let east = across * device.east - along * device.north
        let north = across * device.north + along * device.east
        return Coordinate(
            lat: point.lat + north * Earth.degreesLatitude(metres: 1),
            lon: point.lon + east * Earth.degreesLongitude(metres: 1, atLatitude: point.lat))
    }

    /// Whether update `step` of an edge device is on the inside (they alternate, half of the
    /// edge devices starting inside).
    func isInsideStep(device d: Int, step k: Int) -> Bool { (d + k) % 2 == 0 }

    /// Where device `d` is at its update `step`, `interval` seconds after the one before.
    func position(device d: Int, step k: Int, interval: Double) -> Coordinate {
        let device = devices[d]
        var random = SplitMix64(seed: seed ^ (UInt64(d) &* 0xC2B2_AE3D_27D4_EB4F) ^ (UInt64(k) &* 0x1656_67B1_9E37_79F9))
        switch device.kind {
        case .parked:
            let r = Self.parkedJitter * random.nextUnit().squareRoot(), angle = random.nextUnit() * 2 * .pi
            return Self.offset(device.anchor, across: r * cos(angle), along: r * sin(angle), device)
        case .edge:
            let across = Self.edgeAcross.minimum + random.nextUnit() * (Self.edgeAcross.maximum - Self.edgeAcross.minimum)
            let along = (2 * random.nextUnit() - 1) * Self.edgeAlong
            return Self.offset(device.anchor, across: isInsideStep(device: d, step: k) ? -across : across, along: along, device)
        case .driving:
            let cycle = 4 * Self.halfLine
            let s = (device.start + Self.speed * interval * Double(k)).truncatingRemainder(dividingBy: cycle)
            let along = s < 2 * Self.halfLine ? s - Self.halfLine : 3 * Self.halfLine - s
            return Self.offset(device.anchor, across: along, along: 0, device)
        }
    }

    /// The route of device `d`'s trip (`bench endurance --trips`): a line it drives from its
    /// update 0 for at least `seconds` of its updates `interval` apart.
    ///
    /// - driving: its own to-and-fro from where update 0 finds it, a vertex at each end of its
    ///   line where it turns, `seconds` x ``speed`` + ``tripReserve`` metres long (so it neither
    ///   arrives nor leaves the route within the run);
    /// - parked, edge: ``tripReserve`` metres through its spot along its direction, from
    ///   ``tripLead`` metres behind it: every fix is within a few metres of the route and short
    ///   of the start's corridor, so the trip stays `pending` and is decided at every fix.
    func tripRoute(device d: Int, seconds: Double, interval: Double) -> [Coordinate] {
        let device = devices[d]
        switch device.kind {
        case .parked, .edge:
            return [
                Self.offset(device.anchor, across: -Self.tripLead, along: 0, device),
                Self.offset(device.anchor, across: Self.tripReserve - Self.tripLead, along: 0, device),
            ]
        case .driving:
            let cycle = 4 * Self.halfLine
            func point(_ s: Double) -> Coordinate {
                let r = s.truncatingRemainder(dividingBy: cycle)
                return Self.offset(device.anchor, across: r < 2 * Self.halfLine ? r - Self.halfLine : 3 * Self.halfLine - r, along: 0, device)
            }
            let first = device.start, last = device.start + Self.speed * max(seconds, interval) + Self.tripReserve
            var route = [point(first)]
            // The turns: where s reaches a multiple of two passes (one end) or an odd number of
            // passes (the other).
            var turn = ((first / (2 * Self.halfLine)).rounded(.down) + 1) * 2 * Self.halfLine
            while turn < last {
                route.append(point(turn))
                turn += 2 * Self.halfLine
            }
            route.append(point(last))
            return route
        }
    }

    /// Metres a trip's route runs beyond the run (driving), or the length of a parked or edge
    /// device's route.
    static let tripReserve = 1000.0
    /// Metres a parked or edge device's route starts behind its spot (under the start's corridor).
    static let tripLead = 20.0

    /// How many devices are of `kind`.
    func count(_ kind: Kind) -> Int { devices.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) } }
}

extension EnduranceFleet.Kind {
    var order: Int { EnduranceFleet.Kind.allCases.firstIndex(of: self)! }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
