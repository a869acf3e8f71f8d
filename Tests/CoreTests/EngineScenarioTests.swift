import Testing
@testable import GeotriggerCore

/// Helpers shared by the engine tests: fences and positions in metres around a fixed origin.
enum EngineTestKit {
    static let origin = Coordinate(lat: 34.45, lon: -119.71)
    static let metresPerDegreeLat = Earth.meridionalRadius(atLatitude: origin.lat) * .pi / 180
    static let metresPerDegreeLon = Earth.parallelRadius(atLatitude: origin.lat) * .pi / 180

    /// The point `east`, `north` metres from the origin.
    static func at(east: Double, north: Double) -> Coordinate {
        Coordinate(lat: origin.lat + north / metresPerDegreeLat, lon: origin.lon + east / metresPerDegreeLon)
    }

    /// A square fence spanning [west, east] × [south, north] metres.
    static func box(
        _ id: String, layer: String = "zones", name: String? = nil, west: Double, east: Double, south: Double,
        north: Double, buffer: Double? = nil, properties: JSONObject = JSONObject(), featureIndex: Int = 0
    ) -> Fence {
        let ring = [
            at(east: west, north: south), at(east: east, north: south), at(east: east, north: north),
            at(east: west, north: north), at(east: west, north: south),
        ]
        var props = properties
        if let name { props["name"] = .string(name) }
        return Fence(
            id: id, layer: layer, name: name, properties: props, geometry: .polygons([Polygon(exterior: ring)]),
            buffer: buffer, featureIndex: featureIndex)
    }

    /// A point fence at `east`, `north` metres.
    static func point(_ id: String, layer: String = "poi", east: Double, north: Double, buffer: Double? = nil, featureIndex: Int = 0) -> Fence {
        Fence(id: id, layer: layer, name: id, properties: ["name": .string(id)], geometry: .points([at(east: east, north: north)]),
              buffer: buffer, featureIndex: featureIndex)
    }

    /// The standard test fence: a 100 m square whose east edge is at x = 0.
    static let zone = box("z1", name: "Zone One", west: -100, east: 0, south: -50, north: 50)

    static func json5(_ text: String) throws -> JSONValue {
        try JSONReader.parse(text, file: "test.json5", dialect: .json5).value
    }

    /// A snapshot of `fences` in one layer `zones` with the triggers in JSON5 `triggers` (nil: none given).
    static func snapshot(_ fences: [Fence] = [zone], layer: String = "zones", triggers: String?) throws -> EngineSnapshot {
        let layers = [FenceLayer(name: layer, file: "fences/\(layer).geojson", fences: fences)]
        return try EngineSnapshot(layers: layers, configTriggers: try triggers.map { try json5($0) })
    }

    static func update(_ device: String = "workers/alice", east: Double, north: Double = 0, time: Double, accuracy: Double? = nil) -> LocationUpdate {
        let c = at(east: east, north: north)
        return LocationUpdate(device: device, lat: c.lat, lon: c.lon, time: time, accuracy: accuracy)
    }
}

/// A seeded, deterministic PRNG (SplitMix64) with Gaussian samples (Box–Muller).
struct SeededRandom {
    var bits: SplitMix64
    init(seed: UInt64) { bits = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { bits.next() }

    /// Uniform in (0, 1].
    mutating func unit() -> Double { (Double(next() >> 11) + 1) / 9_007_199_254_740_992 }

    /// Uniform in (low, high].
    mutating func within(_ low: Double, _ high: Double) -> Double { low + unit() * (high - low) }

    mutating func gaussian(sigma: Double) -> Double {
        let u1 = unit(), u2 = unit()
        return sigma * (-2 * _log(u1)).squareRoot() * _cos(2 * .pi * u2)
    }
}

#if canImport(Glibc)
import Glibc
private func _log(_ x: Double) -> Double { Glibc.log(x) }
private func _cos(_ x: Double) -> Double { Glibc.cos(x) }
#endif

/// End-to-end scenarios through ``DeviceMonitor`` by fix time (no sleeps).
@Suite struct EngineScenarioTests {
    typealias Kit = EngineTestKit

    /// Feeds updates (received at their fix time) and collects every notification.
    static func run(_ monitor: inout DeviceMonitor, _ updates: [LocationUpdate]) -> [FenceNotification] {
        var all: [FenceNotification] = []
        for u in updates {
            all += monitor.advance(to: u.time)
            all += monitor.handle(u, receivedAt: u.time).notifications
        }
        return all
    }

    @Test func walkInAndOutGivesOneEnterAndOneExitSharingTheVisit() throws {
        let snapshot = try Kit.snapshot(triggers: nil)
        var monitor = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        let updates = stride(from: 0.0, through: 100, by: 10).map { t in
            Kit.update(east: 35 - t, time: 1_000 + t)  // walks west from 35 m outside to 65 m inside
        } + [Kit.update(east: 5, time: 1_200)]
        let events = Self.run(&monitor, updates)
        #expect(events.map(\.type) == [.enter, .exit])
        let enter = events[0], exit = events[1]
        #expect(enter.trigger == "zones" && enter.layer == "zones" && enter.fenceID == "z1" && enter.fenceName == "Zone One")
        #expect(enter.position.time == 1_040)  // east = -5: the first update inside
        #expect(enter.visit == enter.id)
        #expect(exit.visit == enter.id)
        #expect(exit.reason == .moved)
        #expect(exit.position.time == 1_200)
        #expect(exit.dwellSeconds == 1_200 - enter.position.time)
        #expect(enter.distance < 0 && abs(exit.distance - 5) < 0.01 && abs(enter.distance + 5) < 0.01)
        #expect(monitor.isIdle)
    }

    // MARK: Jitter

    /// 10 minutes at 1 Hz standing 2 m outside the east edge, 5 m Gaussian noise per axis,
    /// reporting 10 m accuracy; returns the updates and whether each is geometrically inside.
    static func jitter(seed: UInt64, from start: Double, seconds: Int = 600) -> [LocationUpdate] {
        var random = SeededRandom(seed: seed)
        return (0..<seconds).map { i in
            Kit.update(
                east: 2 + random.gaussian(sigma: 5), north: random.gaussian(sigma: 5), time: start + Double(i), accuracy: 10)
        }
    }

    static func jitterEvents(_ triggers: String) throws -> [FenceNotification] {
        var monitor = DeviceMonitor(device: "workers/alice", snapshot: try Kit.snapshot(triggers: triggers), now: 0)
        return run(&monitor, jitter(seed: 42, from: 10_000))
    }

    @Test func jitterFlapsWithDefaults() throws {
        let updates = Self.jitter(seed: 42, from: 10_000)
        let insideCount = updates.filter { Kit.zone.contains(u: $0) }.count
        // About a third of the fixes fall inside (P(noise < -2 m) = 0.34).
        #expect(insideCount > 150 && insideCount < 260)
        let events = try Self.jitterEvents("[{name: 'z', fences: ['zones']}]")
        // Every run of inside fixes is one enter, and its end one exit (checked independently).
        var runs = 0
        for (i, u) in updates.enumerated() where Kit.zone.contains(u: u) && (i == 0 || !Kit.zone.contains(u: updates[i - 1])) {
            runs += 1
        }
        #expect(runs == 141)
        #expect(events.filter { $0.type == .enter }.count == 141)
        #expect(events.filter { $0.type == .exit }.count == 140)  // the last fix is inside
        #expect(events.count == 281)
    }

    @Test func accuracyCirclesReduceButDoNotStopFlapping() throws {
        let events = try Self.jitterEvents("""
            [{name: 'z', accuracyMode: 'useGeometryWithAccuracy', spatialRelationship: 'enterContainsAndExitDoesNotIntersect'}]
            """)
        // Far fewer than the 281 with defaults, but not zero.
        #expect(events.filter { $0.type == .enter }.count == 4)
        #expect(events.filter { $0.type == .exit }.count == 3)
        #expect(events.count == 7)
    }

    @Test func timeHysteresisStopsFlappingThenOneEnterAndOneExit() throws {
        let snapshot = try Kit.snapshot(triggers: "[{name: 'z', enterAfter: 30, exitAfter: 30}]")
        var monitor = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        var events = Self.run(&monitor, Self.jitter(seed: 42, from: 10_000))
        #expect(events.filter { $0.type == .enter }.count <= 1)
        #expect(events.filter { $0.type == .exit }.isEmpty)
        #expect(events.isEmpty)  // with this seed: not even the one enter

        // Walk 20 m inside at 1.4 m/s, stand there for 60 s (same noise).
        var random = SeededRandom(seed: 7)
        var walkIn: [LocationUpdate] = []
        var t = 10_600.0, x = 2.0
        while x > -20 {
            x = max(-20, x - 1.4)
            walkIn.append(Kit.update(east: x + random.gaussian(sigma: 5), north: random.gaussian(sigma: 5), time: t, accuracy: 10))
            t += 1
        }
        for _ in 0..<60 {
            walkIn.append(Kit.update(east: -20 + random.gaussian(sigma: 5), north: random.gaussian(sigma: 5), time: t, accuracy: 10))
            t += 1
        }
        events = Self.run(&monitor, walkIn)
        #expect(events.count == 1)
        let enter = try #require(events.first)
        #expect(enter.type == .enter)
        // The crossing update: the first of the last run of inside fixes before the enter.
        let decidedBy = try #require(walkIn.firstIndex { $0.time >= enter.position.time + 30 })
        var first = decidedBy
        while first > 0 && Kit.zone.contains(u: walkIn[first - 1]) { first -= 1 }
        #expect(enter.position == walkIn[first])
        #expect(walkIn[first...decidedBy].allSatisfy { Kit.zone.contains(u: $0) })

        // Walk out to 20 m outside and stay out for 60 s.
        var walkOut: [LocationUpdate] = []
        x = -20
        while x < 20 {
            x = min(20, x + 1.4)
            walkOut.append(Kit.update(east: x + random.gaussian(sigma: 5), north: random.gaussian(sigma: 5), time: t, accuracy: 10))
            t += 1
        }
        for _ in 0..<60 {
            walkOut.append(Kit.update(east: 20 + random.gaussian(sigma: 5), north: random.gaussian(sigma: 5), time: t, accuracy: 10))
            t += 1
        }
        var exits: [(FenceNotification, LocationUpdate)] = []
        for u in walkOut {
            for n in monitor.handle(u, receivedAt: u.time).notifications { exits.append((n, u)) }
        }
        #expect(exits.count == 1)
        let (exit, decidingUpdate) = try #require(exits.first)
        #expect(exit.type == .exit && exit.reason == .moved)
        #expect(exit.visit == enter.id)
        #expect(!Kit.zone.contains(u: exit.position))
        let crossing = try #require(walkOut.firstIndex(of: exit.position))
        #expect(crossing == 0 || Kit.zone.contains(u: walkOut[crossing - 1]))  // the first update outside
        #expect(decidingUpdate.time >= exit.position.time + 30)  // decided 30 s later
        #expect(decidingUpdate.time < exit.position.time + 31)
        #expect(exit.dwellSeconds == exit.position.time - enter.position.time)
    }
}

extension Fence {
    /// Geometric containment of an update's position (for checking the engine independently).
    func contains(u: LocationUpdate) -> Bool {
        (try? PreparedFence(self))?.contains(u.coordinate) ?? false
    }
}
