import Testing
import GeotriggerCore

/// `input.maxEventsPerDevice`: a device's events per minute of its own fix time.
@Suite struct EventRateLimiterTests {
    let t0 = 1_800_000_000.0

    /// The admitted events of `times` (fix times), in order, with at most `limit` per minute.
    func admitted(_ times: [Double], limit: Int) -> [Bool] {
        var limiter = EventRateLimiter()
        return times.map { limiter.admit(at: $0, limit: limit) }
    }

    @Test func the121stEventWithinAMinuteOfFixTimeIsRefusedAndTheNextMinuteAdmitsAgain() {
        var limiter = EventRateLimiter()
        // 120 events spread over 59.5 s of fix time: all admitted.
        let first = (0..<120).map { limiter.admit(at: t0 + Double($0) * 0.5, limit: 120) }
        #expect(first.allSatisfy { $0 })
        // The 121st, still within the minute that started at t0: refused, and said to be the first.
        let the121st = limiter.admit(at: t0 + 59.9, limit: 120)
        #expect(!the121st)
        #expect(limiter.isFirstRefused(limit: 120))
        let the122nd = limiter.admit(at: t0 + 59.99, limit: 120)
        #expect(!the122nd)
        #expect(!limiter.isFirstRefused(limit: 120))
        #expect(limiter.count == 122)
        // The next minute (from t0 + 60 on) admits 120 again, and no more.
        let next = (0..<120).map { limiter.admit(at: t0 + 60 + Double($0) * 0.1, limit: 120) }
        #expect(next.allSatisfy { $0 })
        let past = limiter.admit(at: t0 + 119, limit: 120)
        #expect(!past)
        let third = limiter.admit(at: t0 + 125, limit: 120)
        #expect(third)
    }

    /// Only fix time counts: a whole day of a track fed at once (one event per fix minute) is
    /// all admitted, and a burst with one fix time is limited however slowly it arrives.
    @Test func onlyFixTimeCountsNeverTheWallClock() {
        let day = (0..<1440).map { t0 + Double($0) * 60 }
        #expect(admitted(day, limit: 1).allSatisfy { $0 })
        let burst = admitted(Array(repeating: t0, count: 400), limit: 10)
        #expect(burst.filter { $0 }.count == 10)
        #expect(burst.prefix(10).allSatisfy { $0 })
    }

    /// An event decided at an earlier fix time than the minute's start (a stale exit carries the
    /// last known position) counts in the current minute: going back opens no new one.
    @Test func anEarlierFixTimeCountsInTheCurrentMinute() {
        let result = admitted([t0, t0 + 1, t0 - 3600, t0 - 7200, t0 + 59, t0 + 60], limit: 3)
        #expect(result == [true, true, true, false, false, true])
    }

    @Test func aLimitOfZeroRefusesEverything() {
        #expect(admitted([t0, t0 + 60, t0 + 120], limit: 0) == [false, false, false])
    }
}
