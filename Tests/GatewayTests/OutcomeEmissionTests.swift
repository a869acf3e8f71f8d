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
        #expect(emission.savesState(decisions: 0, stateChanged: false, notified: false) == false)
        #expect(emission.unsaved, "the position waits for the next saved state")
        #expect(emission.savesState(decisions: 1, stateChanged: true, notified: false) == true)
        #expect(!emission.unsaved, "saved with the state")
        emission.positionChanged()
        #expect(emission.savesState(decisions: 1, stateChanged: false, notified: true) == true)
        #expect(!emission.unsaved)
    }

    /// A pending crossing that starts or is cancelled (an `enterAfter` or `exitAfter` hold on a
    /// fence's edge) changes the monitor's state but no decision: nothing is written until a
    /// decision, a hibernation or a stop (docs/configuration.md "Durability").
    @Test func aHoldStartedOrCancelledSavesNoState() {
        var emission = OutcomeEmission(decisions: 7)
        emission.positionChanged()
        #expect(emission.savesState(decisions: 7, stateChanged: true, notified: false) == false)
        #expect(emission.unsaved, "the hold waits in memory")
        #expect(emission.savesState(decisions: 7, stateChanged: true, notified: false) == false)
        // The hold ends in an exit: a decision, saved with the rest.
        #expect(emission.savesState(decisions: 8, stateChanged: true, notified: true) == true)
        #expect(!emission.unsaved)
        #expect(emission.savedDecisions == 8)
        // A decision without a notification (a baseline stay, a silent exit) is saved too.
        #expect(emission.savesState(decisions: 9, stateChanged: true, notified: false) == true)
        emission.positionChanged()
        emission.saved(decisions: 9)
        #expect(!emission.unsaved, "saved at hibernation or a stop")
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

    /// A position held back by `stateInterval` goes out at a tick once the interval ends (its
    /// trailing publish), so the retained state ends at the last accepted position.
    @Test func aHeldBackPositionIsDueWhenTheIntervalEnds() {
        var emission = OutcomeEmission()
        #expect(!emission.publishesHeldBack(now: 100, stateInterval: 10), "nothing accepted: nothing held back")
        // The first position is published at once.
        emission.positionChanged()
        #expect(emission.publishes(stays: nil, now: 0, stateInterval: 10) == true)
        emission.published(at: 0)
        #expect(!emission.positionUnpublished)
        #expect(!emission.publishesHeldBack(now: 100, stateInterval: 10), "published: nothing held back")
        // The next two within the interval are held back.
        for now in [2.0, 3.0] {
            emission.positionChanged()
            #expect(emission.publishes(stays: nil, now: now, stateInterval: 10) == false)
        }
        #expect(emission.positionUnpublished)
        // Due at the last publication + stateInterval, whenever the last one came.
        #expect(!emission.publishesHeldBack(now: 9.9, stateInterval: 10))
        #expect(emission.publishesHeldBack(now: 10, stateInterval: 10))
        #expect(emission.publishesHeldBack(now: 500, stateInterval: 10))
        emission.published(at: 10.2)
        #expect(!emission.positionUnpublished)
        #expect(!emission.publishesHeldBack(now: 500, stateInterval: 10), "published once, not again")
        #expect(emission.lastPublished == 10.2)
    }

    /// A step that publishes (the interval passed, the stays changed, a new snapshot) takes the
    /// held-back position with it: no trailing publish after it.
    @Test func aPublishingStepLeavesNothingHeldBack() {
        var emission = OutcomeEmission()
        emission.published(at: 0)
        emission.positionChanged()
        #expect(emission.publishes(stays: nil, now: 1, stateInterval: 10) == false)
        #expect(emission.publishes(stays: [Self.stay("a")], now: 2, stateInterval: 10) == true)
        emission.published(at: 2)
        #expect(!emission.publishesHeldBack(now: 12, stateInterval: 10))
        emission.positionChanged()
        #expect(emission.publishes(stays: nil, now: 3, stateInterval: 10, force: true) == true)
        emission.published(at: 3)
        #expect(!emission.publishesHeldBack(now: 13, stateInterval: 10))
        // A state saved (at hibernation) is not a publication: still held back.
        emission.positionChanged()
        emission.saved(decisions: 0)
        #expect(emission.publishesHeldBack(now: 13, stateInterval: 10))
    }

    /// A slot leaving memory (hibernation) publishes its held-back position before its interval
    /// ends: no later tick would; with nothing held back it publishes nothing.
    @Test func aHibernatingSlotPublishesItsHeldBackPosition() {
        var emission = OutcomeEmission()
        emission.positionChanged()
        emission.published(at: 0)
        #expect(!emission.publishesHeldBack(now: 1, stateInterval: 10, leaving: true))
        emission.positionChanged()
        #expect(emission.publishes(stays: nil, now: 1, stateInterval: 10) == false)
        #expect(!emission.publishesHeldBack(now: 2, stateInterval: 10))
        #expect(emission.publishesHeldBack(now: 2, stateInterval: 10, leaving: true))
    }

    /// With `stateInterval: 0` every accepted position is published by its own step.
    @Test func withoutAnIntervalNothingIsHeldBack() {
        var emission = OutcomeEmission()
        for now in [0.0, 0.0, 0.1] {
            emission.positionChanged()
            #expect(emission.publishes(stays: nil, now: now, stateInterval: 0) == true)
            emission.published(at: now)
            #expect(!emission.publishesHeldBack(now: now, stateInterval: 0))
        }
    }

    @Test func aRestoredDeviceStartsFromItsStays() {
        var emission = OutcomeEmission(publishedStays: [Self.stay("a")])
        emission.published(at: 0)
        #expect(emission.publishes(stays: [Self.stay("a")], now: 1, stateInterval: 10) == false)
        #expect(emission.publishes(stays: [Self.stay("b")], now: 1, stateInterval: 10) == true)
    }

    @Test func eventsPastTheLimitInAMinuteOfFixTimeAreRefused() {
        var emission = OutcomeEmission()
        #expect(emission.admitEvent(fixTime: 1_000, now: 0, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_010, now: 0, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_020, now: 0, limit: 2) == .limited(first: true))
        #expect(emission.admitEvent(fixTime: 1_030, now: 0, limit: 2) == .limited(first: false))
        // A stale exit carries an older time: still this minute.
        #expect(emission.admitEvent(fixTime: 900, now: 0, limit: 2) == .limited(first: false))
        // The next minute of fix time.
        #expect(emission.admitEvent(fixTime: 1_060, now: 0, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_061, now: 0, limit: 2) == .emit)
        #expect(emission.admitEvent(fixTime: 1_062, now: 0, limit: 2) == .limited(first: true))
    }

    /// A fix time stepped a minute per event passes the fix-time minute every time; the
    /// gateway's clock stops it at 10 x the limit in its minute, and says which window did.
    @Test func eventsPastTenTimesTheLimitInAMinuteOfTheGatewaysClockAreRefused() {
        var emission = OutcomeEmission()
        for step in 0..<20 { #expect(emission.admitEvent(fixTime: 1_000 + Double(step) * 61, now: 5, limit: 2) == .emit) }
        #expect(emission.admitEvent(fixTime: 5_000, now: 5.5, limit: 2) == .limited(first: true, window: .runningClock))
        #expect(emission.admitEvent(fixTime: 6_000, now: 64.9, limit: 2) == .limited(first: false, window: .runningClock))
        #expect(emission.admitEvent(fixTime: 7_000, now: 65, limit: 2) == .emit)
    }

    @Test func underTheLimitEveryEventGoesOut() {
        var emission = OutcomeEmission()
        for second in 0..<120 { #expect(emission.admitEvent(fixTime: Double(second) / 4, now: 0, limit: 120) == .emit) }
        #expect(emission.admitEvent(fixTime: 30, now: 0, limit: 120) == .limited(first: true))
    }
}
