import Foundation
import Testing
@testable import GeotriggerCore

/// `TripProgress`: a trip followed fix by fix, its events and figures (docs/trips.md).
@Suite struct TripProgressTests {
    /// The events of feeding `fixes` in order, with the fix times (seconds after t0) they came at.
    static func drive(_ trip: inout TripProgress, _ fixes: [LocationUpdate]) -> [(TripEvent.Kind, Double)] {
        var events: [(TripEvent.Kind, Double)] = []
        for fix in fixes {
            events += trip.update(fix).map { ($0.kind, $0.time - TripScene.t0) }
        }
        return events
    }

    /// A device driving the whole winding route is followed in order: `along` never decreases,
    /// never jumps to a later pass, and stays within a metre of the distance driven.
    @Test func aLoopAndADoubledBackStreetAreFollowedInOrder() throws {
        let path = TripRouteTests.winding
        let route = try path.route()
        var trip = TripProgress(plan: TripPlan(route: route))
        var previous = -1.0
        var worst = 0.0
        var events: [TripEvent.Kind] = []
        var s = 0.0
        var t = 0.0
        while s <= path.length {
            events += trip.update(TripScene.fix(path.point(at: s), at: t)).map(\.kind)
            // Followed until it arrives (50 m from the end), where `along` stops.
            if trip.state.isFinal { break }
            let along = trip.along
            #expect(along >= previous, "along went back from \(previous) to \(along) at \(s) m")
            worst = max(worst, abs(along - s))
            previous = along
            s += 10
            t += 1
        }
        print("TripProgressTests: winding route \(Int(path.length)) m, worst |along - driven| \(String(format: "%.2f", worst)) m")
        #expect(worst < 1)
        #expect(events == [.tripStarted, .arrived])
        #expect(abs(s - 3700) <= 10 && abs(trip.along - 3700) <= 10)
    }

    /// East and west legs of 1 km, 200 m apart, joined by 200 m going north: 16.8 km.
    static let lanes: TripScene.Path = {
        var xy: [(Double, Double)] = []
        for leg in 0..<14 {
            let y = Double(leg) * 200
            xy += leg % 2 == 0 ? [(0, y), (1000, y)] : [(1000, y), (0, y)]
        }
        return TripScene.Path(xy)
    }()

    /// An hour at one fix a second with Gaussian jitter of 15 m per axis (so now and then a fix
    /// lands past the 50 m corridor), driving at 5 m/s with a 10-minute stop: no `offRoute`,
    /// and `along` keeps to the van.
    @Test func jitterInsideTheCorridorForAnHourGivesNoOffRoute() throws {
        let path = Self.lanes
        var trip = TripProgress(plan: TripPlan(route: try path.route()))
        var random = SplitMix64(seed: 52)
        var events: [TripEvent.Kind] = []
        var outside = 0
        var worst = 0.0
        for second in 0..<3600 {
            // Drives 40 minutes, stands 10, drives 10.
            let driving = second < 2400 ? Double(second) : second < 3000 ? 2400 : Double(second) - 600
            let s = 5 * driving
            let fix = TripScene.fix(path.point(at: s) + random.gaussian(15), at: Double(second), accuracy: 20)
            events += trip.update(fix).map(\.kind)
            if let offBy = trip.offBy, offBy > 50 { outside += 1 }
            if trip.started { worst = max(worst, abs(trip.along - s)) }
        }
        print("TripProgressTests: an hour of 15 m jitter: \(outside) fixes out, worst |along - driven| \(Int(worst)) m")
        #expect(outside > 0)
        #expect(events == [.tripStarted])
        #expect(trip.state == .onRoute)
        // Jitter of 15 m along the road, and near corners across them onto the next leg.
        #expect(worst < 100)
    }

    /// Along a straight 6 km route at 10 m/s, the van leaves it at 1,500 m, drives 200 m off it
    /// for 2 minutes, and rejoins at 2,700 m: one `offRoute`, one `backOnRoute`, and `along`
    /// waits at the point it left and rejoins at the first point forward within the corridor.
    @Test func aTwoMinuteDetour200MetresOffGivesOneOffRouteAndOneBackOnRoute() throws {
        let route = TripScene.Path([(0, 0), (3000, 0), (6000, 0)])
        // The drive: 150 s on the route, 20 s north, 120 s east (1,200 m), 20 s south, then on.
        let drive = TripScene.Path([(0, 0), (1500, 0), (1500, 200), (2700, 200), (2700, 0), (6000, 0)])
        var trip = TripProgress(plan: TripPlan(route: try route.route()))
        var random = SplitMix64(seed: 7)
        var events: [(TripEvent.Kind, Double)] = []
        var alongOff: [Double] = []
        for second in 0...(Int(drive.length) / 10) {
            let p = drive.point(at: Double(second) * 10)
            let fix = TripScene.fix(p + random.gaussian(3), at: Double(second))
            events += trip.update(fix).map { ($0.kind, $0.time - TripScene.t0) }
            if trip.state == .offRoute { alongOff.append(trip.along) }
            if second == 310 { #expect(abs(trip.along - 2700) < 15, "rejoined at \(trip.along)") }
        }
        #expect(events.map(\.0) == [.tripStarted, .offRoute, .backOnRoute, .arrived])
        // Out of the corridor (50 m) from 155 s: offRoute 30 s later. Back within from 305 s: back 30 s later.
        let off = try #require(events.first { $0.0 == .offRoute }?.1)
        let back = try #require(events.first { $0.0 == .backOnRoute }?.1)
        #expect(abs(off - 185) <= 2, "offRoute at \(off) s")
        #expect(abs(back - 335) <= 2, "backOnRoute at \(back) s")
        #expect(alongOff.allSatisfy { $0 < 1560 || $0 > 2690 })
    }

    /// At a constant 12 m/s along a route with turns, after standing two minutes at its start:
    /// no ETA while standing (jitter within the accuracy is not speed), then an ETA within 10 %
    /// of the time actually left until the van reaches the end.
    @Test func etaIsWithinTenPercentAtConstantSpeedAndAbsentWhileStopped() throws {
        let path = TripScene.Path([(0, 0), (2000, 0), (2000, 1500), (3500, 1500), (3500, 3000)])
        var trip = TripProgress(plan: TripPlan(route: try path.route()))
        var random = SplitMix64(seed: 3)
        var standingETAs = 0
        for second in 0..<120 {
            _ = trip.update(TripScene.fix(random.inDisc(4), at: Double(second), accuracy: 10))
            if trip.eta != nil { standingETAs += 1 }
        }
        #expect(standingETAs == 0)
        #expect(trip.state == .pending)
        let arrival = 120 + path.length / 12
        var worst = 0.0
        var checked = 0
        var second = 120.0
        while second < arrival {
            let s = (second - 120) * 12
            _ = trip.update(TripScene.fix(path.point(at: s) + random.inDisc(4), at: second, accuracy: 10))
            if second >= 180, arrival - second >= 60 {
                let eta = try #require(trip.eta, "no ETA at \(second) s")
                let error = abs(eta - TripScene.t0 - arrival) / (arrival - second)
                worst = max(worst, error)
                checked += 1
            }
            second += 1
        }
        let percent = String(format: "%.1f", worst * 100)
        print("TripProgressTests: ETA at 12 m/s: worst error \(percent) % of the time left over \(checked) fixes")
        #expect(checked > 400)
        #expect(worst < 0.10)
    }

    /// `late` comes once, when the ETA first passes `by`, however often it crosses it after.
    @Test func lateIsDecidedOnce() throws {
        let path = TripScene.Path([(0, 0), (6000, 0)])
        // 6 km by 400 s: at 10 m/s the ETA is 600 s.
        var trip = TripProgress(plan: TripPlan(route: try path.route(), by: TripScene.t0 + 400))
        var s = 0.0
        var events: [(TripEvent.Kind, Double)] = []
        var crossings = 0
        var wasLate = false
        for second in 0..<380 {
            // 10 m/s for a minute, 40 m/s for a minute (ETA before by), then 5 m/s (after it again).
            let speed = second < 60 ? 10.0 : second < 120 ? 40.0 : 5.0
            s += speed
            events += Self.drive(&trip, [TripScene.fix(path.point(at: s), at: Double(second + 1))])
            if let eta = trip.eta {
                let late = eta > TripScene.t0 + 400
                if late != wasLate { crossings += 1 }
                wasLate = late
            }
        }
        #expect(crossings >= 3)
        #expect(events.map(\.0) == [.tripStarted, .late])
        #expect(trip.late)
    }

    /// A van parked at the start before it leaves is not `late`: its first speed, measured
    /// from its last parked fix, counts the stand (about 1 m/s here), and an ETA from that one
    /// speed alone would pass `by` at once. `late` waits for three speeds.
    @Test func aVanLeavingAfterAStandIsNotLateFromItsFirstSpeed() throws {
        let path = TripScene.Path([(0, 0), (3000, 0)])
        // 20 s parked, then 15 m/s: the end at about 220 s, `by` at 400 s.
        var trip = TripProgress(plan: TripPlan(route: try path.route(), by: TripScene.t0 + 400))
        var kinds: [TripEvent.Kind] = []
        var firstEta: Double?
        for second in stride(from: 0, through: 230, by: 2) {
            let s = second < 20 ? 0 : min(3000, Double(second - 20) * 15)
            kinds += trip.update(TripScene.fix(path.point(at: s), at: Double(second))).map(\.kind)
            if firstEta == nil, let eta = trip.eta { firstEta = eta }
        }
        #expect(try #require(firstEta) > TripScene.t0 + 400, "the first ETA, from one speed, is after by: the case this guards")
        #expect(kinds == [.tripStarted, .arrived])
    }

    /// `missed` comes from the wall clock at `by` (not before, and not from fix time), carries
    /// `by` as its time, and ends the trip: nothing is decided after it.
    @Test func missedIsDecidedByTheWallClock() throws {
        let path = TripScene.Path([(0, 0), (3000, 0)])
        let by = TripScene.t0 + 300
        var trip = TripProgress(plan: TripPlan(route: try path.route(), by: by))
        // Standing at the start: no ETA, so no `late` either.
        for second in 0..<200 { #expect(trip.update(TripScene.fix(SIMD2(0, 0), at: Double(second))).isEmpty) }
        #expect(trip.clock(by - 1).isEmpty)
        #expect(trip.deadline == by)
        // A fix after `by` does not decide `missed`: the wall clock does.
        #expect(trip.update(TripScene.fix(SIMD2(0, 0), at: 301)).isEmpty)
        let missed = trip.clock(by + 0.5)
        #expect(missed.map(\.kind) == [.missed])
        #expect(missed.first?.time == by)
        #expect(trip.state == .missed && trip.deadline == nil)
        #expect(trip.clock(by + 10).isEmpty)
        #expect(trip.update(TripScene.fix(SIMD2(3000, 0), at: 400)).isEmpty)
        #expect(trip.shouldPublishProgress)

        // Arrived before `by`: the clock decides nothing; an arrival after `by` does not count.
        var early = TripProgress(plan: TripPlan(route: try path.route(), by: by))
        let kinds = (0...30).flatMap { early.update(TripScene.fix(path.point(at: Double($0) * 100), at: Double($0) * 9)) }
            .map(\.kind)
        #expect(kinds == [.tripStarted, .arrived])
        #expect(early.clock(by + 1).isEmpty)
        var slow = TripProgress(plan: TripPlan(route: try path.route(), by: by))
        let slowKinds = (0...30).flatMap { slow.update(TripScene.fix(path.point(at: Double($0) * 100), at: Double($0) * 11)) }
            .map(\.kind)
        #expect(slowKinds == [.tripStarted, .late])
        #expect(slow.clock(by + 31).map(\.kind) == [.missed])
    }

    /// A loop that ends where it starts: standing at the start (inside the destination) is not
    /// an arrival; the arrival comes once the loop has been driven.
    @Test func arrivedIsNotCountedAtALoopsStartThatIsItsEnd() throws {
        let loop = TripScene.Path([(0, 0), (600, 0), (600, 300), (0, 300), (0, 0)])
        var trip = TripProgress(plan: TripPlan(route: try loop.route()))
        var random = SplitMix64(seed: 5)
        var events: [(TripEvent.Kind, Double)] = []
        for second in 0..<60 {
            events += Self.drive(&trip, [TripScene.fix(random.inDisc(10), at: Double(second))])
        }
        #expect(events.isEmpty)
        #expect(trip.plan.destination.contains(TripScene.at(0, 0)))
        for second in 0...180 {
            let s = Double(second) * 10
            events += Self.drive(&trip, [TripScene.fix(loop.point(at: s), at: Double(60 + second))])
        }
        #expect(events.map(\.0) == [.tripStarted, .arrived])
        // Inside the 50 m circle at the end from 1,750 m, 175 s into the loop.
        #expect(events.last.map { abs($0.1 - 235) <= 1 } == true)
        #expect(trip.state == .arrived)
    }

    /// Progress is due at every event and otherwise at most every 10 s of fix time.
    @Test func progressIsPublishedAtMostEvery10SecondsAndAtEveryEvent() throws {
        let path = TripScene.Path([(0, 0), (3000, 0)])
        var trip = TripProgress(plan: TripPlan(route: try path.route()))
        var published: [Double] = []
        for second in 0..<60 {
            // 10 m/s: past the start's corridor (50 m) at 6 s.
            _ = trip.update(TripScene.fix(path.point(at: Double(second) * 10), at: Double(second)))
            if trip.shouldPublishProgress {
                published.append(Double(second))
                trip.progressPublished()
            }
        }
        #expect(published == [0, 6, 16, 26, 36, 46, 56])
        trip.cancel()
        #expect(trip.state == .cancelled && trip.shouldPublishProgress)
        #expect(trip.update(TripScene.fix(SIMD2(3000, 0), at: 100)).isEmpty)
    }

    /// The committed fields survive a restart: the trip resumes from the committed `along`
    /// (not from the start, and not `tripStarted` again), and bytes that are not a trip state
    /// are refused.
    @Test func aRestartResumesFromTheLastCommittedAlong() throws {
        let path = TripScene.Path([(0, 0), (3000, 0), (3000, 2000)])
        let plan = TripPlan(route: try path.route(), by: TripScene.t0 + 1000)
        var trip = TripProgress(plan: plan)
        var events: [TripEvent.Kind] = []
        for second in 0...150 {
            events += trip.update(TripScene.fix(path.point(at: Double(second) * 10), at: Double(second))).map(\.kind)
        }
        #expect(events == [.tripStarted])
        let bytes = trip.committed.encoded()
        let committed = try TripProgress.Committed(decoding: bytes)
        #expect(committed == trip.committed)
        #expect(committed.state == .onRoute && committed.started && abs(committed.along - 1500) < 1)
        #expect(bytes.count < 32)

        var resumed = TripProgress(plan: plan, restoring: committed)
        #expect(resumed.along == trip.along)
        for second in 151...500 {
            events += resumed.update(TripScene.fix(path.point(at: Double(second) * 10), at: Double(second))).map(\.kind)
        }
        #expect(events == [.tripStarted, .arrived])

        #expect(throws: TripStateError.self) { try TripProgress.Committed(decoding: Array("GTM1".utf8)) }
        #expect(throws: TripStateError.self) { try TripProgress.Committed(decoding: Array(bytes.dropLast())) }
        #expect(throws: TripStateError.self) { try TripProgress.Committed(decoding: bytes + [0]) }
    }
}
