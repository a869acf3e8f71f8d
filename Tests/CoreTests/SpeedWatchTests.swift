import Foundation
import Testing
@testable import GeotriggerCore

/// `SpeedWatch` (overspeed / speedOk), the speed it reads from fixes, and the speed-limit
/// property parser (docs/trips.md "Speed limits").
@Suite struct SpeedWatchTests {
    /// The events of a van driving east at `speeds[k]` m/s during second `k`, one fix a second,
    /// with the speed reported or not, against `limit`; with the fix time (s after t0) of each.
    static func drive(_ speeds: [Double], limit: Double, reported: Bool, accuracy: Double = 4) -> [(SpeedWatch.Event, Double)] {
        var watch = SpeedWatch()
        var x = 0.0
        var events: [(SpeedWatch.Event, Double)] = []
        for (second, speed) in speeds.enumerated() {
            x += speed
            let fix = TripScene.fix(SIMD2(x, 0), at: Double(second), accuracy: accuracy, speed: reported ? speed : nil)
            if let event = watch.update(fix, limit: limit) { events.append((event, Double(second))) }
        }
        return events
    }

    /// 20 m/s against a limit of 14 for a minute, then 10 m/s for a minute: one `overspeed`
    /// 10 s after the first fast reading, one `speedOk` 10 s after the first slow one, whether
    /// the device reports its speed or it is measured between its fixes.
    @Test func twentyMetresASecondAgainstFourteenThenTen() {
        let speeds = Array(repeating: 20.0, count: 60) + Array(repeating: 10.0, count: 60)
        let reported = Self.drive(speeds, limit: 14, reported: true)
        #expect(reported.map(\.0) == [.overspeed, .speedOk])
        #expect(reported.map(\.1) == [10, 70])
        // Measured: the first fix has nothing to measure from, so the fast readings start at 1 s.
        let measured = Self.drive(speeds, limit: 14, reported: false)
        #expect(measured.map(\.0) == [.overspeed, .speedOk])
        #expect(measured.map(\.1) == [11, 70])
    }

    /// Within 5 % of the limit either way, or fast for less than 10 s, nothing is decided.
    @Test func theMarginAndTheHold() {
        #expect(Self.drive(Array(repeating: 14.6, count: 120), limit: 14, reported: true).isEmpty)
        let burst = Array(repeating: 10.0, count: 20) + Array(repeating: 20.0, count: 9) + Array(repeating: 10.0, count: 60)
        #expect(Self.drive(burst, limit: 14, reported: true).isEmpty)
        // Overspeed, then 13.5 m/s (under the limit, not under it by 5 %): no speedOk.
        let hovering = Array(repeating: 20.0, count: 30) + Array(repeating: 13.5, count: 60)
        #expect(Self.drive(hovering, limit: 14, reported: true).map(\.0) == [.overspeed])
    }

    /// Silence decides nothing: fast for 5 s, then no fix for a minute and more: the next fast
    /// readings start a new hold rather than finish the old one.
    @Test func silenceDecidesNothing() {
        var watch = SpeedWatch()
        var events: [(SpeedWatch.Event, Double)] = []
        func feed(_ x: Double, _ second: Double) {
            if let e = watch.update(TripScene.fix(SIMD2(x, 0), at: second), limit: 14) { events.append((e, second)) }
        }
        for second in 0..<5 { feed(Double(second) * 20, Double(second)) }
        #expect(watch.holdStart == TripScene.t0 + 1)
        // 66 s after the last fix: more than 60 s, so nothing is measured.
        feed(200, 70)
        #expect(events.isEmpty && watch.lastSpeed.map { abs($0 - 20) < 0.1 } == true)
        for second in 71...81 { feed(200 + Double(second - 70) * 20, Double(second)) }
        #expect(events.map(\.0) == [.overspeed])
        #expect(events.map(\.1) == [81])
    }

    /// A parked van whose fixes jitter up to 8 m around it, with 10 m accuracy, one fix a second
    /// for an hour: never a speed reading, so no `overspeed`, even against a 5 m/s limit.
    @Test func jitterIsNotSpeed() {
        for limit in [14.0, 5.0] {
            var watch = SpeedWatch()
            var random = SplitMix64(seed: 8)
            var events = 0
            var widest = 0.0
            var previous = SIMD2<Double>(0, 0)
            for second in 0..<3600 {
                let p = random.inDisc(8)
                let d = p - previous
                if second > 0 { widest = max(widest, (d * d).sum().squareRoot()) }
                previous = p
                if watch.update(TripScene.fix(p, at: Double(second), accuracy: 10), limit: limit) != nil { events += 1 }
            }
            // Consecutive fixes 1 s apart were at times more than 14 m apart: more than the
            // accuracy, and 14 m/s if jitter were read as speed.
            #expect(widest > 14)
            #expect(events == 0)
            #expect(watch.lastSpeed == nil)
        }
    }

    /// The speed limit property of a fence: a number in km/h or a string with a unit.
    @Test func theSpeedLimitProperty() {
        func limit(_ value: JSONValue?) -> Double? { SpeedLimit.metresPerSecond(property: value) }
        func near(_ a: Double?, _ b: Double) -> Bool { a.map { abs($0 - b) < 1e-9 } ?? false }
        #expect(near(limit(.number(50)), 50 / 3.6))
        #expect(near(limit(.string("50")), 50 / 3.6))
        #expect(near(limit(.string("50 km/h")), 50 / 3.6))
        #expect(near(limit(.string(" 50km/h ")), 50 / 3.6))
        #expect(near(limit(.string("80 KPH")), 80 / 3.6))
        #expect(near(limit(.string("50 mph")), 50 * 0.447_04))
        #expect(near(limit(.string("30 knots")), 30 * 1852 / 3600))
        #expect(near(limit(.string("12.5 kn")), 12.5 * 1852 / 3600))
        for unreadable: JSONValue? in [
            nil, .null, .bool(true), .number(0), .number(-30), .string(""), .string("none"), .string("walk"),
            .string("RU:urban"), .string("50;30"), .string("50 furlongs"), .string("mph"), .string("-50"), .string("50."),
            .string("1e3"), .array([.number(50)]),
        ] {
            #expect(limit(unreadable) == nil, "\(String(describing: unreadable))")
        }
    }
}
