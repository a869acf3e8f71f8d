import Foundation
import Testing
@testable import GeotriggerCore

/// Metres between two nearby points on a sphere of the mean Earth radius (equirectangular):
/// independent of the walker's ellipsoidal scale, and within 0.5 % of it at these latitudes.
private func sphereMetres(_ a: Coordinate, _ b: Coordinate) -> Double {
    let r = 6_371_008.8
    let rad = Double.pi / 180
    let x = (b.lon - a.lon) * rad * cos((a.lat + b.lat) / 2 * rad) * r
    let y = (b.lat - a.lat) * rad * r
    return (x * x + y * y).squareRoot()
}

private let south = Coordinate(lat: 34.45, lon: -119.71)
private let north = Coordinate(lat: 34.46, lon: -119.71)

private func walker(
    _ route: [Coordinate], devices: Int = 1, speed: Double = 1.5, interval: Double = 2, accuracy: Double? = nil,
    noise: Double = 0, loop: Bool = false, seed: UInt64 = 7
) throws -> RouteWalker {
    try RouteWalker(
        route: route, file: "route.geojson", devices: RouteWalker.deviceIDs(base: "sim", count: devices), speed: speed,
        interval: interval, accuracy: accuracy, noise: noise, loop: loop, start: noonNovember30, seed: seed)
}

/// The next tick's positions (a function, because `#require` cannot wrap a mutating call).
private func nextTick(_ walker: inout RouteWalker) -> [LocationUpdate]? { walker.next() }

@Suite struct RouteWalkerTests {
    @Test func spacingIsSpeedTimesIntervalOnStraightRoutes() throws {
        let routes: [[Coordinate]] = [
            [south, north],
            [Coordinate(lat: 60, lon: 10), Coordinate(lat: 60, lon: 10.02)],  // east at 60° N
            [Coordinate(lat: -33.9, lon: 18.4), Coordinate(lat: -33.91, lon: 18.42)],  // diagonal, south
        ]
        for route in routes {
            var w = try walker(route, speed: 1.5, interval: 2)
            var previous: Coordinate?
            var steps = 0
            while let positions = w.next() {
                let here = positions[0].coordinate
                if let previous, w.tick < 100 {
                    #expect(abs(sphereMetres(previous, here) - 3) < 0.03, "route \(route), tick \(w.tick)")
                    steps += 1
                }
                previous = here
            }
            #expect(steps == 98)
            #expect(previous == route[1])  // stops at the end
        }
    }

    @Test func spacingAroundCorners() throws {
        // A rectangle: right-angle corners, so a chord across one is at least 5 m / √2.
        let corner = Coordinate(lat: 34.46, lon: -119.70)
        let southEast = Coordinate(lat: 34.45, lon: -119.70)
        var w = try walker([south, north, corner, southEast, south], speed: 5, interval: 1)
        var spacings: [Double] = []
        var previous: Coordinate?
        while let positions = w.next() {
            let here = positions[0].coordinate
            if let previous { spacings.append(sphereMetres(previous, here)) }
            previous = here
        }
        spacings.removeLast()  // the last step ends early, at the end of the route
        // A chord across a corner is shorter than the 5 m walked along the route, never longer.
        #expect(spacings.allSatisfy { $0 <= 5 * 1.01 && $0 > 5 * 0.7 })
        #expect(spacings.filter { $0 < 5 * 0.99 }.count <= 4)  // one per corner at most
        // The walk covered the route's length: (ticks - 1) × 5 m < length <= ticks × 5 m.
        #expect(Double(spacings.count) * 5 < w.length && w.length <= Double(spacings.count + 1) * 5)
        let independent = sphereMetres(south, north) + sphereMetres(north, corner) + sphereMetres(corner, southEast)
            + sphereMetres(southEast, south)
        #expect(abs(w.length - independent) / independent < 0.005)
    }

    @Test func devicesStartSpreadEvenlyAlongTheRoute() throws {
        var w = try walker([south, north], devices: 4)
        let tick0 = try #require(nextTick(&w))
        #expect(tick0.map(\.device) == ["sim-1", "sim-2", "sim-3", "sim-4"])
        for (k, update) in tick0.enumerated() {
            // On a meridian the distance fraction is the latitude fraction.
            #expect(abs(update.lat - (south.lat + Double(k) / 4 * (north.lat - south.lat))) < 1e-6)
            #expect(update.lon == south.lon)
            #expect(update.time == noonNovember30)
            #expect(update.heading == 0)
            #expect(update.speed == 1.5)
        }
        let tick1 = try #require(nextTick(&w))
        #expect(tick1.allSatisfy { $0.time == noonNovember30 + 2 })
        for k in 0..<4 {
            #expect(abs(sphereMetres(tick0[k].coordinate, tick1[k].coordinate) - 3) < 0.03)
        }
    }

    @Test func withoutLoopDevicesStopAtTheEndOneByOne() throws {
        let length = try walker([south, north]).length
        // 7.5 steps per route length: tick 8 would pass the end.
        var w = try walker([south, north], devices: 2, speed: length / 7.5, interval: 1)
        var counts: [Int] = []
        var lastOfDevice: [String: LocationUpdate] = [:]
        while let positions = w.next() {
            counts.append(positions.count)
            for p in positions { lastOfDevice[p.device] = p }
            #expect(counts.count < 100)
        }
        // sim-2 starts half way: ticks 0-3 walking, tick 4 at the end; sim-1: ticks 0-7, tick 8 at the end.
        #expect(counts == [2, 2, 2, 2, 2, 1, 1, 1, 1])
        #expect(lastOfDevice["sim-1"]?.coordinate == north)
        #expect(lastOfDevice["sim-2"]?.coordinate == north)
        #expect(lastOfDevice["sim-1"]?.speed == 0)
        #expect(w.next() == nil)
    }

    @Test func loopWrapsAroundToTheStart() throws {
        let length = try walker([south, north]).length
        var w = try walker([south, north], speed: length / 7.5, interval: 1, loop: true)
        var positions: [LocationUpdate] = []
        for _ in 0..<40 { positions.append(try #require(nextTick(&w))[0]) }
        // Tick 8 is 8/7.5 of the length: 0.5/7.5 past the start.
        let wrapped = positions[8]
        #expect(abs(wrapped.lat - (south.lat + 0.5 / 7.5 * (north.lat - south.lat))) < 1e-6)
        // Periodic: 15 ticks are exactly two lengths.
        #expect(abs(positions[31].lat - positions[1].lat) < 1e-9)
        #expect(positions.allSatisfy { $0.lat >= south.lat && $0.lat <= north.lat })
        #expect(positions[39].time == noonNovember30 + 39)
    }

    @Test func noiseIsGaussianWithTheGivenStandardDeviation() throws {
        let route = [south, north, Coordinate(lat: 34.46, lon: -119.70), south]
        var noisy = try walker(route, speed: 3, interval: 1, noise: 5, loop: true, seed: 42)
        var clean = try walker(route, speed: 3, interval: 1, loop: true)
        var norths: [Double] = []
        var easts: [Double] = []
        for _ in 0..<10_000 {
            let a = try #require(nextTick(&noisy))[0]
            let b = try #require(nextTick(&clean))[0]
            let rad = Double.pi / 180
            norths.append((a.lat - b.lat) * rad * 6_371_008.8)
            easts.append((a.lon - b.lon) * rad * cos(b.lat * rad) * 6_371_008.8)
        }
        func mean(_ v: [Double]) -> Double { v.reduce(0, +) / Double(v.count) }
        func std(_ v: [Double]) -> Double {
            let m = mean(v)
            return (v.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(v.count - 1)).squareRoot()
        }
        for axis in [norths, easts] {
            #expect(abs(mean(axis)) < 0.2)  // 4 standard errors (5 m / 100)
            #expect(abs(std(axis) - 5) < 0.5)
        }
        let correlation = zip(norths, easts).map { $0 * $1 }.reduce(0, +) / Double(norths.count) / (std(norths) * std(easts))
        #expect(abs(correlation) < 0.05)
        // Per axis, 68.3 % of a normal distribution lies within one standard deviation.
        let within = Double(norths.filter { abs($0) < 5 }.count) / Double(norths.count)
        #expect(abs(within - 0.683) < 0.02)
    }

    @Test func aSeedAlwaysGivesTheSamePositions() throws {
        func run(_ seed: UInt64) throws -> [LocationUpdate] {
            var w = try walker([south, north], devices: 3, noise: 4, loop: true, seed: seed)
            return (0..<50).flatMap { _ in w.next() ?? [] }
        }
        #expect(try run(1) == run(1))
        #expect(try run(1) != run(2))
        var random = SplitMix64(seed: 0)
        // SplitMix64's published first output for seed 0.
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
    }

    @Test func accuracyHeadingAndDeviceIDs() throws {
        var w = try walker([south, north, Coordinate(lat: 34.46, lon: -119.70)], accuracy: 8)
        let first = try #require(nextTick(&w))[0]
        #expect(first.accuracy == 8)
        #expect(first.device == "sim")
        #expect(w.position(atDistance: w.length - 1).heading == 90)
        #expect(w.position(atDistance: 1).heading == 0)
        #expect(RouteWalker.deviceIDs(base: "demo/walker", count: 3) == ["demo/walker-1", "demo/walker-2", "demo/walker-3"])
        #expect(RouteWalker.deviceIDs(base: "demo", count: 1) == ["demo"])
    }

    @Test func crossesTheAntimeridian() throws {
        let w = try walker([Coordinate(lat: 0, lon: 179.999), Coordinate(lat: 0, lon: -179.999)])
        #expect(abs(w.length - 222.6) < 1)  // 0.002° of equator, not 359.998°
        let middle = w.position(atDistance: w.length / 2).coordinate
        #expect(abs(abs(middle.lon) - 180) < 1e-9)
    }

    @Test func errors() {
        #expect(throws: TrackError(file: "route.geojson", message: "a route needs at least two distinct points, found 1")) {
            try walker([south, south])
        }
        #expect(throws: TrackError(file: "route.geojson", message: "the speed must be > 0 metres per second, found 0.0")) {
            try walker([south, north], speed: 0)
        }
        #expect(throws: TrackError(file: "route.geojson", message: "the interval must be > 0 seconds, found -1.0")) {
            try walker([south, north], interval: -1)
        }
        #expect(throws: TrackError(file: "route.geojson", message: "the noise must be >= 0 metres, found -2.0")) {
            try walker([south, north], noise: -2)
        }
        #expect(throws: TrackError(file: "route.geojson", message: "a simulation needs at least one device")) {
            try RouteWalker(route: [south, north], file: "route.geojson", devices: [], speed: 1, interval: 1, start: 0)
        }
    }
}
