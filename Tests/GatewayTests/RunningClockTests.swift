import Testing

@testable import Gateway

/// The running clock and the wall-clock jump detector on their own, with made-up clocks.
@Suite struct RunningClockTests {
    @Test func runningSecondsCarryOverAndConvertBothWays() {
        let clock = RunningClock(carried: 1_000, start: 50)
        #expect(clock.running(atMonotonic: 50) == 1_000)
        #expect(clock.running(atMonotonic: 80) == 1_030)
        // A device that last reported 400 running seconds before this run began.
        #expect(clock.monotonic(atRunning: 600) == -350)
        #expect(clock.running(atMonotonic: clock.monotonic(atRunning: 600)) == 600)
    }

    @Test func aWallClockStepIsAJumpAndDriftIsNot() {
        var detector = ClockJumpDetector(wall: 1_796_040_000, monotonic: 100)
        // Both clocks advance together; a little drift.
        #expect(detector.check(wall: 1_796_040_010.5, monotonic: 110) == nil)
        #expect(detector.check(wall: 1_796_040_030, monotonic: 130) == nil)
        // NTP sets a box without an RTC a day ahead.
        #expect(detector.check(wall: 1_796_126_431, monotonic: 131) == 86_400)
        #expect(detector.check(wall: 1_796_126_432, monotonic: 132) == nil)
        // An operator sets it back two minutes.
        #expect(detector.check(wall: 1_796_126_313, monotonic: 133) == -120)
        // 60 s exactly is not a jump.
        #expect(detector.check(wall: 1_796_126_374, monotonic: 134) == nil)
    }
}
