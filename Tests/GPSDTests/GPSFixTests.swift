import Testing
@testable import GPSD

/// The pure rules: accuracy, fix validity, one fix per epoch, no-fix and clock skew warnings.
@Suite struct GPSFixTests {
    static let time = 1_780_000_000.0

    static func report(
        mode: Int = 3, modeSet: Bool = true, latLonSet: Bool = true, timeSet: Bool = true,
        time: Double = GPSFixTests.time, latitude: Double = 34.45, longitude: Double = -119.71,
        epx: Double = .nan, epy: Double = .nan, eph: Double = .nan, speed: Double = 1.5, track: Double = 90
    ) -> TPVReport {
        TPVReport(
            mode: mode, modeSet: modeSet, latLonSet: latLonSet, timeSet: timeSet, time: time,
            latitude: latitude, longitude: longitude, epx: epx, epy: epy, eph: eph,
            speed: speed, track: track, altitude: 12)
    }

    @Test func accuracyFromEpxEpyIs68PercentRadius() throws {
        let accuracy = try #require(GPSFix.accuracy(epx: 3, epy: 4, eph: 100))
        #expect(abs(accuracy - 5 / 1.96) < 1e-12)
    }

    @Test func accuracyFallsBackToEph() throws {
        let accuracy = try #require(GPSFix.accuracy(epx: .nan, epy: 4, eph: 9.8))
        #expect(abs(accuracy - 5) < 1e-12)
        #expect(GPSFix.accuracy(epx: 3, epy: .infinity, eph: 9.8) == 9.8 / 1.96)
        #expect(GPSFix.accuracy(epx: -1, epy: 4, eph: 9.8) == 9.8 / 1.96)
    }

    @Test func accuracyAbsentWithoutEstimates() {
        #expect(GPSFix.accuracy(epx: .nan, epy: .nan, eph: .nan) == nil)
        #expect(GPSFix.accuracy(epx: 3, epy: .nan, eph: .nan) == nil)
    }

    @Test func validTPVIsAFix() throws {
        let fix = try #require(GPSFix(report: Self.report(epx: 3, epy: 4)))
        #expect(fix == GPSFix(
            time: Self.time, lat: 34.45, lon: -119.71, mode: 3, accuracy: 5 / 1.96, speed: 1.5,
            track: 90, altitude: 12))
        let twoD = try #require(GPSFix(report: Self.report(mode: 2)))
        #expect(twoD.mode == 2)
        #expect(twoD.altitude == nil, "altitude is only valid in a 3D fix")
        #expect(twoD.accuracy == nil)
    }

    @Test(arguments: [
        ("mode 1", report(mode: 1)),
        ("mode 0", report(mode: 0)),
        ("mode not set", report(modeSet: false)),
        ("lat/lon not set", report(latLonSet: false)),
        ("latitude NaN", report(latitude: .nan)),
        ("longitude infinite", report(longitude: .infinity)),
        ("latitude out of range", report(latitude: 91)),
        ("time not set", report(timeSet: false)),
        ("time NaN", report(time: .nan)),
        ("time zero", report(time: 0)),
    ])
    func invalidTPVIsNoFix(_ why: String, _ report: TPVReport) {
        #expect(GPSFix(report: report) == nil, "\(why) must not count as a fix")
    }

    @Test func oneFixPerEpoch() {
        var tracker = GPSDFixTracker(clockSkewThreshold: 300)
        let now = Self.time
        #expect(tracker.events(for: Self.report(), now: now).filter(\.isFix).count == 1)
        #expect(tracker.events(for: Self.report(latitude: 34.46), now: now).isEmpty,
                "a second TPV with the same fix time is the same epoch")
        #expect(tracker.events(for: Self.report(time: Self.time + 1), now: now).filter(\.isFix).count == 1)
    }

    /// gpsd before it knows the receiver's cycle: a GGA TPV without track, then the RMC TPV
    /// of the same epoch with it. Once an epoch showed a track, the next epoch's fix waits for
    /// the TPV that brings it and is yielded merged, at once when complete.
    @Test func epochTPVsAreMergedOnceTheirFieldsAreKnown() throws {
        var tracker = GPSDFixTracker(clockSkewThreshold: 300)
        let now = Self.time
        let first = tracker.events(for: Self.report(track: .nan), now: now)
        #expect(first.count == 1, "nothing known yet: the first TPV is the fix")
        #expect(tracker.events(for: Self.report(track: 90), now: now).isEmpty)
        #expect(tracker.events(for: Self.report(time: Self.time + 1, latitude: 34.46, track: .nan), now: now + 1).isEmpty,
                "held: the previous epoch had a track")
        #expect(tracker.releaseDeadline == now + 1 + tracker.settleTime)
        let merged = tracker.events(for: Self.report(time: Self.time + 1, latitude: 34.46, speed: 2.5, track: 91), now: now + 1.1)
        guard case .fix(let fix) = try #require(merged.first), merged.count == 1 else {
            Issue.record("expected one merged fix, got \(merged)")
            return
        }
        #expect(fix.time == Self.time + 1 && fix.lat == 34.46 && fix.track == 91 && fix.speed == 2.5 && fix.altitude == 12)
        #expect(tracker.releaseDeadline == nil)
    }

    /// A held fix is yielded after the settle time, before a later epoch's fix, before a no-fix
    /// report; a field that stopped coming is no longer waited for.
    @Test func heldFixIsReleasedBySettleTimeNextEpochOrNoFix() {
        var tracker = GPSDFixTracker(clockSkewThreshold: 300, settleTime: 0.5)
        let now = Self.time
        _ = tracker.events(for: Self.report(), now: now)
        #expect(tracker.events(for: Self.report(time: Self.time + 1, track: .nan), now: now + 1).isEmpty)
        #expect(tracker.release(now: now + 1.2, force: false).isEmpty)
        let released = tracker.release(now: now + 1.6, force: false)
        #expect(released.count == 1 && released.allSatisfy(\.isFix))
        #expect(tracker.events(for: Self.report(time: Self.time + 2, track: .nan), now: now + 2).count == 1,
                "the previous epoch had no track: no wait")

        var other = GPSDFixTracker(clockSkewThreshold: 300)
        _ = other.events(for: Self.report(), now: now)
        #expect(other.events(for: Self.report(time: Self.time + 1, speed: .nan), now: now + 1).isEmpty)
        let next = other.events(for: Self.report(time: Self.time + 2), now: now + 2)
        #expect(next.count == 2 && next.allSatisfy(\.isFix), "the held epoch first, then the new one: \(next)")
        #expect(other.events(for: Self.report(time: Self.time + 3, speed: .nan), now: now + 3).isEmpty)
        let noFix = other.events(for: Self.report(mode: 1), now: now + 3.1)
        #expect(noFix.count == 2 && noFix.first?.isFix == true && noFix.last == .noFix)
    }

    @Test func noFixOnlyOnChange() {
        var tracker = GPSDFixTracker(clockSkewThreshold: 300)
        let now = Self.time
        #expect(tracker.events(for: Self.report(mode: 1), now: now) == [.noFix])
        #expect(tracker.events(for: Self.report(mode: 1), now: now).isEmpty)
        #expect(tracker.events(for: Self.report(), now: now).filter(\.isFix).count == 1)
        #expect(tracker.events(for: Self.report(mode: 1), now: now) == [.noFix])
        #expect(tracker.events(for: Self.report(modeSet: false), now: now).isEmpty,
                "a TPV without a mode says nothing about the fix")
        tracker.connectionStarted()
        #expect(tracker.events(for: Self.report(mode: 1), now: now) == [.noFix],
                "a new connection reports the no-fix state afresh")
    }

    @Test func clockSkewWarnsOnceAndKeepsFixes() throws {
        var tracker = GPSDFixTracker(clockSkewThreshold: 300)
        let now = Self.time + 1000
        let first = tracker.events(for: Self.report(), now: now)
        #expect(first.count == 2)
        #expect(first.first == .clockSkew(seconds: -1000))
        #expect(first.last?.isFix == true)
        #expect(tracker.events(for: Self.report(time: Self.time + 1), now: now).map(\.isFix) == [true])
        // Back within the threshold, then skewed again: a new warning.
        #expect(tracker.events(for: Self.report(time: now), now: now).map(\.isFix) == [true])
        let again = tracker.events(for: Self.report(time: now + 400), now: now)
        #expect(again.first == .clockSkew(seconds: 400))
    }

    @Test func reportClassFromJSON() {
        #expect(GPSDReport.className(ofJSON: Array(#"{"class":"TPV","mode":3}"#.utf8)) == "TPV")
        #expect(GPSDReport.className(ofJSON: Array(#"{"class":"SKY","satellites":[]}"#.utf8)) == "SKY")
        #expect(GPSDReport.className(ofJSON: Array(#"{"mode":3}"#.utf8)) == nil)
        #expect(GPSDReport.className(ofJSON: Array(#"{"class":"TP"#.utf8)) == nil)
    }

    @Test func errorTextComesFromLibgps() throws {
        let error = GPSDError(code: -6, call: "gps_open(127.0.0.1:1)", library: try LibraryLoader.shared.library())
        #expect(error.message == "can't connect to host/port pair")
        #expect(error.description.contains("gps_open(127.0.0.1:1)"))
    }
}
