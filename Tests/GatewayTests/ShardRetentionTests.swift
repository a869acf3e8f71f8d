import Testing
@testable import Gateway

/// ``ShardRetention``: which idle devices hibernate (`gateway.hibernateAfter`) and which are
/// forgotten (`gateway.forgetAfter`) at a tick, on the gateway clock; no shard, no store.
@Suite struct ShardRetentionTests {
    static let retention = ShardRetention(hibernateAfter: 600, forgetAfter: 86_400)

    static func fate(idle: Double, paused: Bool = false, hasDeadline: Bool = false, dirty: Bool = false) -> ShardRetention.Fate {
        retention.fate(lastReceived: 1_000, now: 1_000 + idle, paused: paused, hasDeadline: hasDeadline, unsaved: dirty)
    }

    @Test func hibernatesOnceIdleForHibernateAfter() {
        #expect(Self.fate(idle: 0) == .stays)
        #expect(Self.fate(idle: 599.9) == .stays)
        #expect(Self.fate(idle: 600) == .hibernates(saves: false))
        #expect(Self.fate(idle: 3_600, dirty: true) == .hibernates(saves: true))
    }

    @Test func aPausedDeviceOrOneWaitingForADeadlineStays() {
        #expect(Self.fate(idle: 3_600, paused: true) == .stays)
        #expect(Self.fate(idle: 3_600, hasDeadline: true) == .stays)
        #expect(Self.fate(idle: 100_000, paused: true) == .stays, "not even forgotten while its feed is down")
    }

    @Test func theDeadlineIsAskedOnlyOfADeviceIdleLongEnough() {
        var asked = 0
        func deadline() -> Bool { asked += 1; return false }
        _ = Self.retention.fate(lastReceived: 0, now: 10, paused: false, hasDeadline: deadline(), unsaved: false)
        _ = Self.retention.fate(lastReceived: 0, now: 10_000, paused: true, hasDeadline: deadline(), unsaved: false)
        #expect(asked == 0)
        #expect(Self.retention.fate(lastReceived: 0, now: 10_000, paused: false, hasDeadline: deadline(), unsaved: false) == .hibernates(saves: false))
        #expect(asked == 1)
    }

    @Test func forgottenInMemoryOnceIdleForForgetAfter() {
        #expect(Self.fate(idle: 86_399) == .hibernates(saves: false))
        #expect(Self.fate(idle: 86_400, dirty: true) == .forgotten)
    }

    @Test func aHibernatedDeviceIsForgottenAtForgetAfter() {
        #expect(!Self.retention.forgets(lastReport: 1_000, now: 87_399))
        #expect(Self.retention.forgets(lastReport: 1_000, now: 87_400))
    }

    /// The last reports of a previous run come back on the running clock: the time the gateway
    /// was switched off does not count towards forgetAfter, the time it ran does.
    @Test func forgetAfterCountsOnlyRunningTime() {
        // The device reported at 500 s of running; the gateway stopped at 1,000 s and starts
        // again a week later, its monotonic clock at 42 then.
        let clock = RunningClock(carried: 1_000, start: 42)
        let lastReport = clock.monotonic(atRunning: 500)
        let retention = ShardRetention(hibernateAfter: 60, forgetAfter: 1_000)
        #expect(!retention.forgets(lastReport: lastReport, now: 42), "500 s of running since its report")
        #expect(!retention.forgets(lastReport: lastReport, now: 42 + 499))
        #expect(retention.forgets(lastReport: lastReport, now: 42 + 500))
        #expect(retention.fate(lastReceived: lastReport, now: 42 + 500, paused: false, hasDeadline: false, unsaved: false) == .forgotten)
    }

    /// The tick a device needs for its fate: its hibernation, but after a deadline it waits for,
    /// and never while paused.
    @Test func aDevicesFateIsDueAtItsHibernationAfterItsDeadlineNeverWhilePaused() {
        let retention = ShardRetention(hibernateAfter: 600, forgetAfter: 86_400)
        #expect(retention.fateDue(lastReceived: 100, paused: false, deadline: nil) == 700)
        #expect(retention.fateDue(lastReceived: 100, paused: false, deadline: 130) == 130)
        #expect(retention.fateDue(lastReceived: 100, paused: false, deadline: 5_000) == 5_000)
        #expect(retention.fateDue(lastReceived: 100, paused: true, deadline: nil) == .infinity)
        // Each is the first time the fate itself says more than `stays`.
        #expect(retention.fate(lastReceived: 100, now: 699, paused: false, hasDeadline: false, unsaved: false) == .stays)
        #expect(retention.fate(lastReceived: 100, now: 700, paused: false, hasDeadline: false, unsaved: false) == .hibernates(saves: false))
    }
}
