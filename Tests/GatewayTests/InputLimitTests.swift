import GPSD
import GeotriggerCore
import Testing
@testable import Gateway

/// `input.maxAccuracy` on the gpsd feed, and numbers from payloads that `watch` shows: limits
/// that are drops or plain text, never a trap.
@Suite struct InputLimitTests {
    @Test func gpsdFixOverMaxAccuracyIsDroppedAsOutOfRange() {
        let coarse = GPSFix(time: 1_796_040_000, lat: 47.3, lon: 8.5, mode: 2, accuracy: 12_000)
        #expect(GPSDFeed.drop(coarse, maxAccuracy: 10_000) == InputDrop(.outOfRange, "'accuracy' is 12000.0 m, over input.maxAccuracy (10000.0 m)"))
        #expect(GPSDFeed.drop(coarse, maxAccuracy: 12_000) == nil)
        #expect(GPSDFeed.drop(GPSFix(time: 1_796_040_000, lat: 47.3, lon: 8.5, mode: 2), maxAccuracy: 10) == nil)
    }

    @Test func hugeNumbersAreTextNotTraps() {
        #expect(GPSDFeed.describe(skew: 1e300) == "1.1574074074074075e+295 days ahead of")
        #expect(GPSDFeed.describe(seconds: 90) == "1.5 min")
        #expect(WatchConsole.whole(1e300) == "1e+300")
        #expect(WatchConsole.whole(340.4) == "340")
    }
}
