import GeotriggerCore
import Testing
@testable import Gateway

/// ``OutcomeEmission``: what a device's monitor steps emit (saved state, state publications,
/// events within `input.maxEventsPerDevice`); no shard, no committer.
@Suite struct OutcomeEmissionTests {
    static func stay(_ fence: String, since: Double = 10) -> DeviceMonitor.Stay {
        DeviceMonitor.Stay(trigger: "t", layer: "zones", fence: fence, since: since, visit: "v-\(fence)")
    }

    @Test func aStepThatDecidedNothingSavesNoState() {
        var emission = OutcomeEmission()
        emission.positionChanged()
        #expect(emission.savesState(stateChanged: false, notified: false) == false)
        #expect(emission.positionDirty, "the position waits for the next saved state")
        #expect(emission.savesState(stateChanged: true, notified: false) == true)
        #expect(!emission.positionDirty, "saved with the state")
        emission.positionChanged()
        #expect(emission.savesState(stateChanged: false, notified: true) == true)
        #expect(!emission.positionDirty)
    }

    @Test func publishedWhenTheStaysChangeOrEveryStateInterval() {
        var emission = OutcomeEmission()
        // Never published: due at once.
        #expect(emission.publishes(stays: nil, now: 0, stateInterval: 10) == true)
        emission.published(at: 0)
        #expect(emission.publishes(stays: nil, now: 5, stateInterval: 10) == false)
        // Nothing saved, or the same stays: only the interval.
        #expect(emission.publishes(stays: [], now: 5, stateInterval: 10) == false)
        #expect(emission.publishes(stays: nil, now: 10, stateInterval: 10) == true)
        emission.published(at: 10)
        // The inside set changed: published at once, and remembered.
        #expect(emission.publishes(stays: [Self.stay("a")], now: 11, stateInterval: 10) == true)
        #expect(emission.publishedStays == [Self.stay("a")])
        emission.published(at: 11)
        #expect(emission.publishes(stays: [Self.stay("a")], now: 12, stateInterval: 10) == false)
        #expect(emission.publishes(stays: [], now: 13, stateInterval: 10) == true)
        emission.published(at: 13)
        // A new snapshot forces it.
        #expect(emission.publishes(stays: nil, now: 14, stateInterval: 10, force: true) == true)
        #expect(emission.lastPublished == 13, "published(at:) tells when it was")
    }

    @Test func aRestoredDeviceStartsFromItsStays() {
        var emission = OutcomeEmission(publishedStays: [Self.stay("a")])
        emission.published(at: 0)
        #expect(emission.publishes(stays: [Self.stay("a")], now: 1, stateInterval: 10) == false)
        #expect(emission.publishes(stays: [Self.stay("b")], now: 1, stateInterval: 10) == true)
    }

    @Test func eventsPastTheLimitInAMinuteOfFixTimeAreRefused() {
        var emission = OutcomeEmission()
        #expect(emission.admitEvent(fixTime: 1_000, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_010, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_020, limit: 2) == .limited(first: true))
        #expect(emission.admitEvent(fixTime: 1_030, limit: 2) == .limited(first: false))
        // A stale exit carries an older time: still this minute.
        #expect(emission.admitEvent(fixTime: 900, limit: 2) == .limited(first: false))
        // The next minute of fix time.
        #expect(emission.admitEvent(fixTime: 1_060, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_061, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_062, limit: 2) == .limited(first: true))
    }

    @Test func underTheLimitEveryEventGoesOut() {
        var emission = OutcomeEmission()
        for second in 0..<120 { #expect(emission.admitEvent(fixTime: Double(second) / 4, limit: 120) == .emit) }
        #expect(emission.admitEvent(fixTime: 30, limit: 120) == .limited(first: true))
    }
}
