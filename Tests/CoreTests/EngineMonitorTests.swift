import Testing
@testable import GeotriggerCore

/// The timing rules of docs/configuration.md "Timing", one by one, by fix time and an injected clock.
@Suite struct EngineMonitorTests {
    typealias Kit = EngineTestKit

    static func monitor(_ triggers: String?, fences: [Fence] = [Kit.zone], device: String = "workers/alice") throws -> DeviceMonitor {
        DeviceMonitor(device: device, snapshot: try Kit.snapshot(fences, triggers: triggers), now: 0)
    }

    @Test func silentDeviceGetsEnterAndDwellByTheClockAndExitCarriesDwellSeconds() throws {
        var m = try Self.monitor("[{name: 'z', enterAfter: 30, dwell: 120}]")
        let first = Kit.update(east: -20, time: 5_000)
        let outcome = m.handle(first, receivedAt: 100)
        #expect(outcome.notifications.isEmpty && outcome.stateChanged)
        #expect(m.pendingCount == 1 && m.stays.isEmpty)
        #expect(m.nextDeadline() == 130)
        #expect(m.advance(to: 129.9).isEmpty)
        let enter = try #require(m.advance(to: 130).first)
        #expect(enter.type == .enter && enter.position == first)
        #expect(m.stays.count == 1)
        #expect(m.nextDeadline() == 220)  // dwell 120 s after the last inside update was received
        #expect(m.advance(to: 219).isEmpty)
        let dwell = m.advance(to: 400)
        #expect(dwell.count == 1)
        #expect(dwell.first?.type == .dwell && dwell.first?.dwellSeconds == 120 && dwell.first?.visit == enter.id)
        #expect(m.nextDeadline() == nil)
        #expect(m.advance(to: 10_000).isEmpty)  // dwell fires once per visit
        let out = Kit.update(east: 30, time: 5_500)
        let exit = try #require(m.handle(out, receivedAt: 600).notifications.first)
        #expect(exit.type == .exit && exit.dwellSeconds == 500 && exit.visit == enter.id && exit.position == out)
    }

    @Test func dwellByALaterUpdateAndNotWhileAnExitIsPending() throws {
        var m = try Self.monitor("[{name: 'z', exitAfter: 20, dwell: 60}]")
        #expect(m.handle(Kit.update(east: -10, time: 0), receivedAt: 0).notifications.map(\.type) == [.enter])
        #expect(m.handle(Kit.update(east: -10, time: 50), receivedAt: 50).notifications.isEmpty)
        // Outside at 55 (exit pending), inside at 61 would be dwell... but 58 outside first
        #expect(m.handle(Kit.update(east: 10, time: 55), receivedAt: 55).notifications.isEmpty)
        #expect(m.handle(Kit.update(east: 10, time: 62), receivedAt: 62).notifications.isEmpty)  // pending exit: no dwell
        // Back inside: the exit is cancelled, the visit goes on and has lasted 65 s: dwell.
        let back = m.handle(Kit.update(east: -10, time: 65), receivedAt: 65).notifications
        #expect(back.map(\.type) == [.dwell])
        #expect(back.first?.dwellSeconds == 65)
    }

    @Test func holdCancelledByAnUpdateBackOnTheOldSide() throws {
        var m = try Self.monitor("[{name: 'z', enterAfter: 30, exitAfter: 30}]")
        #expect(m.handle(Kit.update(east: -10, time: 0), receivedAt: 0).notifications.isEmpty)
        #expect(m.handle(Kit.update(east: 10, time: 10), receivedAt: 10).notifications.isEmpty)  // cancels
        #expect(m.pendingCount == 0 && m.isIdle)
        #expect(m.advance(to: 1_000).isEmpty)
        // Silence counts from the last update on the new side, not from the crossing.
        #expect(m.handle(Kit.update(east: -10, time: 1_000), receivedAt: 1_000).notifications.isEmpty)
        #expect(m.handle(Kit.update(east: -10, time: 1_020), receivedAt: 1_020).notifications.isEmpty)
        #expect(m.nextDeadline() == 1_050)
        #expect(m.advance(to: 1_049).isEmpty)
        #expect(m.advance(to: 1_050).first?.position.time == 1_000)
    }

    @Test func outOfOrderAndDuplicateUpdatesNeverFlipState() throws {
        var m = try Self.monitor("[{name: 'z'}]")
        #expect(m.handle(Kit.update(east: -10, time: 100), receivedAt: 0).notifications.count == 1)
        let old = m.handle(Kit.update(east: 50, time: 90), receivedAt: 1)
        #expect(old.disposition == .outOfOrder && old.notifications.isEmpty && !old.stateChanged && !old.positionChanged)
        let same = m.handle(Kit.update(east: 50, time: 100), receivedAt: 2)
        #expect(same.disposition == .duplicate && same.notifications.isEmpty)
        #expect(m.stays.count == 1 && m.lastUpdate?.time == 100)
        let later = m.handle(Kit.update(east: 50, time: 101), receivedAt: 3)
        #expect(later.disposition == .accepted && later.notifications.map(\.type) == [.exit])
    }

    @Test func initialEnterPublishesAndBaselineRecordsSilently() throws {
        var enter = try Self.monitor("[{name: 'z'}]")
        let first = enter.handle(Kit.update(east: -10, time: 100), receivedAt: 0)
        #expect(first.notifications.map(\.type) == [.enter])

        var baseline = try Self.monitor("[{name: 'z', initial: 'baseline'}]")
        let silent = baseline.handle(Kit.update(east: -10, time: 100), receivedAt: 0)
        #expect(silent.notifications.isEmpty && silent.stateChanged)
        let stay = try #require(baseline.stays.first)
        let baselineID = EventID.make(trigger: "z", layer: "zones", fence: "z1", device: "workers/alice", type: "baseline", time: 100)
        #expect(stay.visit == baselineID && stay.since == 100)
        let exit = try #require(baseline.handle(Kit.update(east: 10, time: 200), receivedAt: 1).notifications.first)
        #expect(exit.type == .exit && exit.visit == baselineID && exit.dwellSeconds == 100)
        // Known now: coming back in is a normal enter, also after a restart.
        let bytes = baseline.serialized()
        var restored = try DeviceMonitor.restore(from: bytes, snapshot: baseline.snapshot, now: 50).monitor
        #expect(restored.handle(Kit.update(east: -10, time: 300), receivedAt: 51).notifications.map(\.type) == [.enter])
        // A device first seen outside, then walking in: a normal enter even with baseline.
        var walker = try Self.monitor("[{name: 'z', initial: 'baseline'}]")
        #expect(walker.handle(Kit.update(east: 10, time: 1), receivedAt: 0).stateChanged)  // the trigger now knows it
        #expect(walker.handle(Kit.update(east: -10, time: 2), receivedAt: 1).notifications.map(\.type) == [.enter])
    }

    @Test func staleExitByTheClockPausesWhileDisconnectedAndNextUpdateIsANormalEnter() throws {
        var m = try Self.monitor("[{name: 'z', staleAfter: 60}]")
        let last = Kit.update(east: -10, time: 1_000)
        #expect(m.handle(last, receivedAt: 10).notifications.count == 1)
        #expect(m.nextDeadline() == 70)
        m.pause(at: 40)  // broker down: 30 s counted so far
        #expect(m.nextDeadline() == nil)
        #expect(m.advance(to: 500).isEmpty)
        m.resume(at: 1_000)  // 30 s left
        #expect(m.nextDeadline() == 1_030)
        #expect(m.advance(to: 1_029).isEmpty)
        let stale = m.advance(to: 1_030)
        #expect(stale.count == 1)
        let exit = try #require(stale.first)
        #expect(exit.type == .exit && exit.reason == .stale && exit.position == last && exit.dwellSeconds == 0)
        #expect(abs(exit.distance + 10) < 0.01)
        #expect(m.isIdle)
        #expect(m.handle(Kit.update(east: -10, time: 2_000), receivedAt: 1_100).notifications.map(\.type) == [.enter])
    }

    @Test func filteredAndDroppedUpdatesKeepOrNotKeepTheDeviceAlive() throws {
        // Without Arcade filters here, a dropped update must not reset the stale clock.
        var m = try Self.monitor("[{name: 'z', staleAfter: 60}]")
        _ = m.handle(Kit.update(east: -10, time: 1_000), receivedAt: 0)
        _ = m.handle(Kit.update(east: -10, time: 999), receivedAt: 50)  // out of order
        #expect(m.advance(to: 60).first?.reason == .stale)
    }

    @Test func fenceRemovedExitWhenANewSnapshotLacksTheFence() throws {
        let other = Kit.box("z2", name: "Zone Two", west: -300, east: -200, south: -50, north: 50)
        var m = try Self.monitor("[{name: 'z', enterAfter: 10}]", fences: [Kit.zone, other])
        _ = m.handle(Kit.update(east: -10, time: 0), receivedAt: 0)
        _ = m.handle(Kit.update(east: -10, time: 20), receivedAt: 20)
        #expect(m.stays.count == 1)
        // Same fence, new geometry: the stay goes on.
        let moved = Kit.box("z1", name: "Zone One b", west: -120, east: 0, south: -50, north: 50)
        #expect(m.adopt(try Kit.snapshot([moved, other], triggers: "[{name: 'z', enterAfter: 10}]"), now: 30).isEmpty)
        #expect(m.stays.count == 1)
        let removed = m.adopt(try Kit.snapshot([other], triggers: "[{name: 'z', enterAfter: 10}]"), now: 40)
        #expect(removed.count == 1)
        let exit = try #require(removed.first)
        #expect(exit.type == .exit && exit.reason == .fenceRemoved && exit.fenceName == "Zone One b" && exit.position.time == 20)
        #expect(exit.dwellSeconds == 20)
        #expect(m.isIdle)
    }

    @Test func triggerOrWhereOrDevicesChangeAlsoEndsTheStay() throws {
        var m = try Self.monitor("[{name: 'z'}]")
        _ = m.handle(Kit.update(east: -10, time: 0), receivedAt: 0)
        let gone = m.adopt(try Kit.snapshot(triggers: "[{name: 'z', devices: ['fleet/**']}]"), now: 1)
        #expect(gone.map(\.reason) == [.fenceRemoved])
        #expect(m.handle(Kit.update(east: -10, time: 1), receivedAt: 1).notifications.isEmpty)
    }

    @Test func exitMarginKeepsTheStayUntilBeyondBufferPlusMargin() throws {
        var m = try Self.monitor("[{name: 'z', buffer: 5, exitMargin: 10}]")
        #expect(m.handle(Kit.update(east: 4, time: 0), receivedAt: 0).notifications.map(\.type) == [.enter])  // inside the 5 m buffer
        #expect(m.handle(Kit.update(east: 14, time: 1), receivedAt: 1).notifications.isEmpty)  // 9 m past the buffer, within the margin
        let exit = m.handle(Kit.update(east: 16, time: 2), receivedAt: 2).notifications
        #expect(exit.map(\.type) == [.exit])
        #expect(abs((exit.first?.distance ?? 0) - 11) < 0.01)  // distance to the buffered boundary
        // Entering again needs the buffer itself, not the margin.
        #expect(m.handle(Kit.update(east: 8, time: 3), receivedAt: 3).notifications.isEmpty)
        #expect(m.handle(Kit.update(east: 4, time: 4), receivedAt: 4).notifications.map(\.type) == [.enter])
    }

    @Test func spatialRelationshipsFollowArcGIS() {
        let intersects = SpatialRelationship.enterIntersectsAndExitDoesNotIntersect
        let contains = SpatialRelationship.enterContainsAndExitDoesNotContain
        let mixed = SpatialRelationship.enterContainsAndExitDoesNotIntersect
        // d = signed distance to the buffered boundary, r = accuracy radius.
        #expect(intersects.enters(distance: 9, radius: 10) && !intersects.enters(distance: 11, radius: 10))
        #expect(intersects.exits(distance: 11, radius: 10) && !intersects.exits(distance: 9, radius: 10))
        #expect(contains.enters(distance: -11, radius: 10) && !contains.enters(distance: -9, radius: 10))
        #expect(contains.exits(distance: -9, radius: 10) && !contains.exits(distance: -11, radius: 10))
        #expect(mixed.enters(distance: -11, radius: 10) && !mixed.enters(distance: 0, radius: 10))
        #expect(mixed.exits(distance: 11, radius: 10) && !mixed.exits(distance: 0, radius: 10))
        // A point (r = 0): all three are the plain boundary.
        for rel in SpatialRelationship.allCases {
            #expect(rel.enters(distance: -0.1, radius: 0) && !rel.enters(distance: 0.1, radius: 0))
            #expect(rel.exits(distance: 0.1, radius: 0) && !rel.exits(distance: -0.1, radius: 0))
        }
    }

    @Test func accuracyModeUsesTheCircleOnlyWhenAsked() throws {
        // 5 m outside with 10 m accuracy: intersects as a circle, not as a point.
        var point = try Self.monitor("[{name: 'z'}]")
        #expect(point.handle(Kit.update(east: 5, time: 0, accuracy: 10), receivedAt: 0).notifications.isEmpty)
        var circle = try Self.monitor("[{name: 'z', accuracyMode: 'useGeometryWithAccuracy'}]")
        #expect(circle.handle(Kit.update(east: 5, time: 0, accuracy: 10), receivedAt: 0).notifications.count == 1)
        // No accuracy: a point.
        var unknown = try Self.monitor("[{name: 'z', accuracyMode: 'useGeometryWithAccuracy'}]")
        #expect(unknown.handle(Kit.update(east: 5, time: 0), receivedAt: 0).notifications.isEmpty)
    }

    @Test func ruleDecidesWhatIsPublishedButStateChangesEitherWay() throws {
        var exitOnly = try Self.monitor("[{name: 'z', rule: 'exit'}]")
        #expect(exitOnly.handle(Kit.update(east: -10, time: 0), receivedAt: 0).notifications.isEmpty)
        #expect(exitOnly.stays.count == 1)
        let exit = try #require(exitOnly.handle(Kit.update(east: 10, time: 5), receivedAt: 5).notifications.first)
        #expect(exit.visit == EventID.make(trigger: "z", layer: "zones", fence: "z1", device: "workers/alice", type: "enter", time: 0))
        var enterOnly = try Self.monitor("[{name: 'z', rule: 'enter'}]")
        #expect(enterOnly.handle(Kit.update(east: -10, time: 0), receivedAt: 0).notifications.count == 1)
        #expect(enterOnly.handle(Kit.update(east: 10, time: 5), receivedAt: 5).notifications.isEmpty)
        #expect(enterOnly.isIdle)
    }

    @Test func devicesGlobsSelectWhichDevicesATriggerWatches() throws {
        let triggers = """
            [{name: 'one', devices: ['fleet/*']}, {name: 'any', devices: ['fleet/**']},
             {name: 'q', devices: ['fleet/v?']}]
            """
        func triggersFiring(for device: String) throws -> [String] {
            var m = try Self.monitor(triggers, device: device)
            return m.handle(Kit.update(device, east: -10, time: 0), receivedAt: 0).notifications.map(\.trigger)
        }
        #expect(try triggersFiring(for: "fleet/v1") == ["one", "any", "q"])
        #expect(try triggersFiring(for: "fleet/v12") == ["one", "any"])
        #expect(try triggersFiring(for: "fleet/vans/v1") == ["any"])
        #expect(try triggersFiring(for: "other/v1").isEmpty)
    }

    @Test func globMatching() throws {
        #expect(try DeviceGlob("fleet/*").matches("fleet/a"))
        #expect(try !DeviceGlob("fleet/*").matches("fleet/a/b"))
        #expect(try DeviceGlob("fleet/*").matches("fleet/"))
        #expect(try DeviceGlob("fleet/**").matches("fleet/a/b"))
        #expect(try !DeviceGlob("fleet/**").matches("fleet"))
        #expect(try DeviceGlob("**/v1").matches("a/b/v1"))
        #expect(try DeviceGlob("*/v1").matches("a/v1") && !DeviceGlob("*/v1").matches("a/b/v1"))
        #expect(try DeviceGlob("fleet/v?").matches("fleet/v1") && !DeviceGlob("fleet/v?").matches("fleet/v12"))
        #expect(try !DeviceGlob("fleet?v1").matches("fleet/v1"))  // ? is not a level separator
        #expect(try DeviceGlob("a*b*c").matches("axxbyyc") && !DeviceGlob("a*b*c").matches("axxbyy/c"))
        #expect(try DeviceGlob("workers/ål?ce").matches("workers/ålice"))
        #expect(throws: GlobError.self) { try DeviceGlob("fleet/***") }
        #expect(throws: GlobError.self) { try DeviceGlob("") }
        // A hostile pattern stays linear.
        let long = String(repeating: "*a", count: 200)
        #expect(try !DeviceGlob(long).matches(String(repeating: "a", count: 199)))
    }

    @Test func serialiseRestoreResumesExactly() throws {
        let triggers = "[{name: 'z', exitAfter: 30, dwell: 600}]"
        let fences = [Kit.zone, Kit.box("z2", west: -300, east: -200, south: -50, north: 50)]
        var m = try Self.monitor(triggers, fences: fences)
        let enter = try #require(m.handle(Kit.update(east: -10, time: 100, accuracy: 4), receivedAt: 0).notifications.first)
        _ = m.handle(Kit.update(east: 10, time: 110), receivedAt: 10)  // exit pending
        let bytes = m.serialized()
        #expect(bytes.count < 400)

        // Restart: a new process, the same fences.
        let snapshot = try Kit.snapshot(fences, triggers: triggers)
        var (restored, removed) = try DeviceMonitor.restore(from: bytes, snapshot: snapshot, now: 5_000)
        #expect(removed.isEmpty)
        #expect(restored.serialized() == bytes)
        #expect(restored.lastUpdate == m.lastUpdate && restored.stays == m.stays && restored.pendingCount == 1)
        // The pending exit's silence clock starts afresh at the restart.
        #expect(restored.nextDeadline() == 5_030)
        let exit = try #require(restored.advance(to: 5_030).first)
        #expect(exit.type == .exit && exit.visit == enter.id && exit.position.time == 110)

        // A device inside at the restart: no re-fired enter; one that left while down gets its exit.
        var inside = try Self.monitor(triggers, fences: fences)
        _ = inside.handle(Kit.update(east: -10, time: 100), receivedAt: 0)
        var again = try DeviceMonitor.restore(from: inside.serialized(), snapshot: snapshot, now: 0).monitor
        #expect(again.handle(Kit.update(east: -20, time: 200), receivedAt: 1).notifications.isEmpty)
        var left = try DeviceMonitor.restore(from: inside.serialized(), snapshot: snapshot, now: 0).monitor
        #expect(left.handle(Kit.update(east: 50, time: 900), receivedAt: 1).notifications.isEmpty)  // exitAfter 30
        let late = left.handle(Kit.update(east: 60, time: 930), receivedAt: 2).notifications
        #expect(late.map(\.type) == [.exit] && late.first?.position.time == 900 && late.first?.dwellSeconds == 800)

        // Restored with a snapshot that lacks the fence: the exit comes at restore.
        let smaller = try Kit.snapshot([fences[1]], triggers: triggers)
        let (_, gone) = try DeviceMonitor.restore(from: inside.serialized(), snapshot: smaller, now: 0)
        #expect(gone.map(\.reason) == [.fenceRemoved] && gone.first?.fenceName == "Zone One")

        #expect(throws: MonitorStateError.self) { try DeviceMonitor.restore(from: Array(bytes.dropLast()), snapshot: snapshot, now: 0) }
        #expect(throws: MonitorStateError.self) { try DeviceMonitor.restore(from: [1, 2, 3], snapshot: snapshot, now: 0) }
    }

    @Test func idsAreDeterministic() throws {
        func events() throws -> [String] {
            var m = try Self.monitor("[{name: 'z', dwell: 5}]")
            return EngineScenarioTests.run(&m, [
                Kit.update(east: -10, time: 1_764_504_000), Kit.update(east: -10, time: 1_764_504_010),
                Kit.update(east: 10, time: 1_764_504_020),
            ]).map(\.id)
        }
        let first = try events(), second = try events()
        #expect(first.count == 3 && first == second && Set(first).count == 3)
        // Pinned: the same inputs give the same id in every process and release.
        #expect(EventID.make(trigger: "garden-sections", layer: "garden-sections", fence: "desert", device: "workers/alice",
                             type: "enter", time: 1_796_040_000) == "f660d2ff6eaf88d7e3337e555152609f")
        #expect(EventID.make(trigger: "t", layer: "l", fence: "f", device: "d", type: "enter", time: 1)
                != EventID.make(trigger: "t", layer: "l", fence: "f", device: "d", type: "exit", time: 1))
        #expect(EventID.make(trigger: "t", layer: "l", fence: "f", device: "d", type: "enter", time: 1)
                != EventID.make(trigger: "t", layer: "l", fence: "fd", device: "", type: "enter", time: 1))
    }

    @Test func fenceAddedOnReloadIsBaselinedOnlyForBaselineTriggers() throws {
        let added = Kit.box("z2", name: "Zone Two", west: 0, east: 100, south: -50, north: 50)
        let triggers = "[{name: 'quiet', initial: 'baseline'}, {name: 'loud'}]"
        var m = try Self.monitor(triggers)
        #expect(m.handle(Kit.update(east: 10, time: 0), receivedAt: 0).notifications.isEmpty)  // outside z1
        var changed = false
        #expect(m.adopt(try Kit.snapshot([Kit.zone, added], triggers: triggers), now: 1, stateChanged: &changed).isEmpty)
        #expect(changed)
        #expect(m.stays.map { "\($0.trigger) \($0.fence)" } == ["quiet z2"])  // silent, as a first update would be
        #expect(m.stays.first?.visit == EventID.make(trigger: "quiet", layer: "zones", fence: "z2", device: "workers/alice", type: "baseline", time: 0))
        // The next update there: 'loud' (initial enter, but it knows the device) publishes a normal enter.
        #expect(m.handle(Kit.update(east: 12, time: 1), receivedAt: 2).notifications.map(\.trigger) == ["loud"])
    }
}
