import Testing
import GeotriggerCore

/// `input.maxEventsPerDevice`: a device's events per minute of its own fix time, and ten times
/// that per minute of the gateway's running clock (the clock injected as `now`).
@Suite struct EventRateLimiterTests {
    let t0 = 1_800_000_000.0

    /// The admitted events of `times` (fix times), in order, with at most `limit` per minute;
    /// the gateway's clock stands still (`now`): a burst, all inside one running minute.
    func admitted(_ times: [Double], limit: Int, now: Double = 0) -> [Bool] {
        var limiter = EventRateLimiter()
        return times.map { limiter.admit(at: $0, now: now, limit: limit) == .admitted }
    }

    @Test func the121stEventWithinAMinuteOfFixTimeIsRefusedAndTheNextMinuteAdmitsAgain() {
        var limiter = EventRateLimiter()
        // 120 events spread over 59.5 s of fix time: all admitted.
        let first = (0..<120).map { limiter.admit(at: t0 + Double($0) * 0.5, now: 0, limit: 120) }
        #expect(first.allSatisfy { $0 == .admitted })
        // The 121st, still within the minute that started at t0: refused, and said to be the first.
        #expect(limiter.admit(at: t0 + 59.9, now: 0, limit: 120) == .refused(first: true, window: .fixTime))
        #expect(limiter.admit(at: t0 + 59.99, now: 0, limit: 120) == .refused(first: false, window: .fixTime))
        #expect(limiter.count == 122)
        // The next minute (from t0 + 60 on) admits 120 again, and no more.
        let next = (0..<120).map { limiter.admit(at: t0 + 60 + Double($0) * 0.1, now: 0, limit: 120) }
        #expect(next.allSatisfy { $0 == .admitted })
        #expect(limiter.admit(at: t0 + 119, now: 0, limit: 120) != .admitted)
        #expect(limiter.admit(at: t0 + 125, now: 0, limit: 120) == .admitted)
    }

    /// Fix time, not the wall clock, is what a live device is judged by: a day of a track fed
    /// over a day (one event per fix minute) is all admitted, and a burst with one fix time is
    /// limited however slowly it arrives.
    @Test func fixTimeJudgesALiveTrack() {
        var limiter = EventRateLimiter()
        let day = (0..<1440).map { limiter.admit(at: t0 + Double($0) * 60, now: Double($0) * 60, limit: 1) }
        #expect(day.allSatisfy { $0 == .admitted })
        var slow = EventRateLimiter()
        let burst = (0..<400).map { slow.admit(at: t0, now: Double($0) * 10, limit: 10) == .admitted }
        #expect(burst.filter { $0 }.count == 10)
        #expect(burst.prefix(10).allSatisfy { $0 })
    }

    /// A device that steps its fix time a minute per message opens a fix-time minute with each
    /// one: in one minute of the gateway's clock it gets at most 10 x the limit, whatever its
    /// fix times say; the refusal names the running clock, once a minute. The next running
    /// minute admits as many again.
    @Test func aFixTimeSteppingAMinutePerMessageGetsTenTimesTheLimitPerRunningMinute() {
        var limiter = EventRateLimiter()
        let limit = 3
        // 200 messages, 61 s of fix time apart, 3 events each, 0.1 s of the gateway's clock apart.
        var verdicts: [EventRateLimiter.Verdict] = []
        for message in 0..<200 {
            for _ in 0..<limit {
                verdicts.append(limiter.admit(at: t0 + Double(message) * 61, now: 100 + Double(message) * 0.1, limit: limit))
            }
        }
        #expect(verdicts.filter { $0 == .admitted }.count == EventRateLimiter.runningLimit(limit))
        #expect(EventRateLimiter.runningLimit(limit) == 30)
        #expect(verdicts.prefix(30).allSatisfy { $0 == .admitted })
        #expect(verdicts[30] == .refused(first: true, window: .runningClock))
        #expect(verdicts.dropFirst(31).allSatisfy { $0 == .refused(first: false, window: .runningClock) })
        // 60 s of the gateway's clock after the running minute began: 30 more.
        let after = (0..<40).map { limiter.admit(at: t0 + 1_000_000 + Double($0) * 61, now: 160, limit: limit) }
        #expect(after.filter { $0 == .admitted }.count == 30)
    }

    /// A phone uploading an hour of backlog at once (its fix times an hour long, all inside a
    /// few seconds of the gateway's clock) passes whole while its events stay within the
    /// running bound: an enter and an exit every 2 minutes of fix time is 60 events.
    @Test func anHourOfBacklogAtOncePasses() {
        var limiter = EventRateLimiter()
        let events = (0..<60).map { t0 + Double($0) * 60 }
        let verdicts = events.enumerated().map { limiter.admit(at: $1, now: 42 + Double($0) * 0.01, limit: 120) }
        #expect(verdicts.allSatisfy { $0 == .admitted })
    }

    /// An event decided at an earlier fix time than the minute's start (a stale exit carries the
    /// last known position) counts in the current minute: going back opens no new one.
    @Test func anEarlierFixTimeCountsInTheCurrentMinute() {
        let result = admitted([t0, t0 + 1, t0 - 3600, t0 - 7200, t0 + 59, t0 + 60], limit: 3)
        #expect(result == [true, true, true, false, false, true])
    }

    @Test func aLimitOfZeroRefusesEverything() {
        #expect(admitted([t0, t0 + 60, t0 + 120], limit: 0) == [false, false, false])
        #expect(EventRateLimiter.runningLimit(Int.max) == Int.max)
    }
}
