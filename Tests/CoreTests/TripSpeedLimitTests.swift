import Foundation
import Testing
@testable import GeotriggerCore

/// A trip's `speedLimit` (docs/trips.md "Speed limits"): `overspeed` / `speedOk` from
/// ``TripProgress/update(_:)`` along the whole route, by fix time.
@Suite struct TripSpeedLimitTests {
    /// A straight route 6 km east of the origin.
    static let route = TripScene.Path([(0, 0), (6000, 0)])

    /// One fix a second from `start` (x, y metres) moving east at `speeds[k]` m/s during second
    /// `k` (the fix at `second + k + 1` reports `speeds[k]` when `reported`), 4 m accuracy.
    static func drive(
        _ speeds: [Double], from start: SIMD2<Double> = SIMD2(0, 0), second: Double = 0, reported: Bool
    ) -> [LocationUpdate] {
        var p = start
        var fixes = [TripScene.fix(p, at: second, accuracy: 4, speed: reported ? speeds.first : nil)]
        for (k, speed) in speeds.enumerated() {
            p.x += speed
            fixes.append(TripScene.fix(p, at: second + Double(k + 1), accuracy: 4, speed: reported ? speed : nil))
        }
        return fixes
    }

    static func trip(speedLimit: Double? = 14, by: Double? = nil) throws -> TripProgress {
        TripProgress(plan: TripPlan(route: try route.route(), by: by, speedLimit: speedLimit))
    }

    /// The events of `fixes`, with the fix time (s after t0) and the `speed` figure of each.
    static func run(_ trip: inout TripProgress, _ fixes: [LocationUpdate]) -> [(kind: TripEvent.Kind, second: Double, speed: Double?)] {
        fixes.flatMap { trip.update($0) }.map { ($0.kind, $0.time - TripScene.t0, $0.figures.speed) }
    }

    /// A device at 20 m/s along a route with `speedLimit: 14` for a minute, then 10 m/s for a
    /// minute: one `overspeed` 10 s after its first fast reading, one `speedOk` 10 s after its
    /// first slow one, each carrying the reading in its figures; the same whether the device
    /// reports its speed or it is measured between its fixes (the first fix has nothing to be
    /// measured from, so the fast readings start a second later).
    @Test(arguments: [true, false]) func twentyMetresASecondThenTenAgainstFourteen(reported: Bool) throws {
        var trip = try Self.trip()
        let fixes = Self.drive(Array(repeating: 20, count: 60) + Array(repeating: 10, count: 60), reported: reported)
        let events = Self.run(&trip, fixes)
        #expect(events.map(\.kind) == [.tripStarted, .overspeed, .speedOk])
        let overspeed = try #require(events.first { $0.kind == .overspeed })
        let speedOk = try #require(events.first { $0.kind == .speedOk })
        #expect(overspeed.second == (reported ? 10 : 11))
        #expect(speedOk.second == 71)
        #expect(overspeed.speed.map { abs($0 - 20) < 0.01 } == true && speedOk.speed.map { abs($0 - 10) < 0.01 } == true)
        #expect(!trip.isOverspeed && trip.state == .onRoute)
    }

    /// Without a `speedLimit` the same drive decides no speed events (the `speed` figure is read
    /// all the same).
    @Test func noLimitNoSpeedEvents() throws {
        var trip = try Self.trip(speedLimit: nil)
        let events = Self.run(&trip, Self.drive(Array(repeating: 40, count: 60), reported: false))
        #expect(events.map(\.kind) == [.tripStarted])
        #expect(trip.speed.map { abs($0 - 40) < 0.01 } == true)
    }

    /// A parked device for an hour, its fixes jittering within 4 m with 5 m accuracy (and one
    /// case reporting speed 0), against a limit of 1 m/s: jitter is not speed, no event.
    @Test(arguments: [false, true]) func jitterWhileParkedGivesNone(reportsZero: Bool) throws {
        var trip = try Self.trip(speedLimit: 1)
        var random = SplitMix64(seed: 52)
        var events: [TripEvent.Kind] = []
        for second in 0..<3600 {
            let fix = TripScene.fix(SIMD2(500, 0) + random.inDisc(4), at: Double(second), accuracy: 5, speed: reportsZero ? 0 : nil)
            events += trip.update(fix).map(\.kind)
        }
        // Parked 500 m along: past the start's corridor, so the trip started (and nothing else).
        #expect(events == [.tripStarted])
        #expect(!trip.isOverspeed)
    }

    /// Along the whole route, whatever the corridor state: fast while still pending (driving
    /// towards the route's start from 1.5 km west of it) gives `overspeed`; fast on a detour
    /// 300 m off the route keeps it (no `speedOk`), and slow off the route gives `speedOk`.
    @Test func overspeedWhilePendingAndOffRoute() throws {
        var trip = try Self.trip()
        // 60 s at 20 m/s from 1,500 m west: overspeed at 11 s, while pending (at -1,280 m).
        var fixes = Self.drive(Array(repeating: 20, count: 60), from: SIMD2(-1500, 0), reported: false)
        // Then along the route to 1,000 m, a jump 300 m north (off the route), fast on for a
        // minute, then slow on for a minute, still off the route.
        fixes += Self.drive(Array(repeating: 20, count: 50), from: SIMD2(-300, 0), second: 60, reported: false).dropFirst()
        fixes += Self.drive(Array(repeating: 20, count: 60) + Array(repeating: 10, count: 60), from: SIMD2(700, 300), second: 111,
                            reported: false)
        var states: [TripEvent.Kind: TripState] = [:]
        var events: [(TripEvent.Kind, Double)] = []
        for fix in fixes {
            for event in trip.update(fix) {
                events.append((event.kind, event.time - TripScene.t0))
                states[event.kind] = event.figures.state
            }
        }
        #expect(events.map(\.0) == [.overspeed, .tripStarted, .offRoute, .speedOk], "\(events)")
        #expect(states[.overspeed] == .pending && states[.speedOk] == .offRoute)
        // The jump north (300 m in a second) is no reading over the limit for long: the watch
        // stays overspeed through it. Slow from 172 s: speedOk at 182 s.
        #expect(events.last?.1 == 182)
    }

    /// A trip that ends while overspeed ends without `speedOk`: fast all the way into its
    /// destination gives `overspeed` then `arrived`, and nothing after.
    @Test func anArrivalWhileOverspeedGivesNoSpeedOk() throws {
        var trip = TripProgress(plan: TripPlan(route: try TripScene.Path([(0, 0), (1000, 0)]).route(), speedLimit: 14))
        let fixes = Self.drive(Array(repeating: 20, count: 60) + Array(repeating: 5, count: 60), reported: true)
        let events = Self.run(&trip, fixes)
        #expect(events.map(\.kind) == [.tripStarted, .overspeed, .arrived])
        #expect(trip.state == .arrived)
    }

    /// Silence decides nothing: fast for 5 s, no fix for two minutes, fast for 5 s: no
    /// `overspeed` (readings more than 60 s apart do not join a hold).
    @Test func silenceDecidesNothing() throws {
        var trip = try Self.trip()
        var fixes = Self.drive(Array(repeating: 20, count: 5), reported: true)
        fixes += Self.drive(Array(repeating: 20, count: 5), from: SIMD2(100, 0), second: 125, reported: true)
        #expect(!Self.run(&trip, fixes).contains { $0.kind == .overspeed })
        #expect(trip.clock(TripScene.t0 + 3600).isEmpty)
    }

    /// A restart mid-overspeed: `overspeed` is committed (with its event), so the resumed trip
    /// gives no second `overspeed` while still fast, and its `speedOk` once slow. A trip state
    /// committed before `overspeed` was kept (version 1 of the encoding) reads as not overspeed.
    @Test func aRestartMidOverspeedRefiresNothing() throws {
        var trip = try Self.trip()
        let fixes = Self.drive(Array(repeating: 20, count: 120) + Array(repeating: 10, count: 60), reported: false)
        #expect(Self.run(&trip, Array(fixes.prefix(31))).map(\.kind) == [.tripStarted, .overspeed])
        let committed = try TripProgress.Committed(decoding: trip.committed.encoded())
        #expect(committed.overspeed && committed == trip.committed)

        var resumed = TripProgress(plan: trip.plan, restoring: committed)
        #expect(resumed.isOverspeed)
        let after = Self.run(&resumed, Array(fixes.dropFirst(31)))
        #expect(after.map(\.kind) == [.speedOk])
        #expect(after.first?.second == 131)

        // Version 1: the same fields without `overspeed`.
        var w = StateWriter()
        for b in Array("GTT1".utf8) { w.write(UInt64(b)) }
        w.write(TripState.allCases.firstIndex(of: .onRoute)!)
        w.write(620.0)
        w.write(true)
        w.write(false)
        w.write(Double?.none)
        let old = try TripProgress.Committed(decoding: w.bytes)
        #expect(old == TripProgress.Committed(state: .onRoute, along: 620, started: true, late: false, holdStart: nil, overspeed: false))
        #expect(throws: TripStateError.self) { try TripProgress.Committed(decoding: w.bytes + [1]) }
    }
}
