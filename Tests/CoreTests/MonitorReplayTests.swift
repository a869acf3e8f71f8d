import Testing
@testable import GeotriggerCore

/// A step whose journaled events tell what it decided writes no state: the stored state with
/// the journal's later events replayed (``DeviceMonitor/replay(_:onto:)``) must give the
/// monitor's committed facts again, and a restart from it must neither lose nor re-fire a stay.
@Suite struct MonitorReplayTests {
    typealias Kit = EngineTestKit

    /// A small seeded generator (the drives repeat from run to run).
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func journaled(_ note: FenceNotification) -> JournaledDecision? {
        guard let type = JournaledDecision.Kind(rawValue: note.type.rawValue) else { return nil }
        return JournaledDecision(type: type, trigger: note.trigger, layer: note.layer, fence: note.fenceID, fixTime: note.decidedAt,
                                 position: (note.position.lat, note.position.lon, note.position.time, note.position.accuracy),
                                 distance: note.distance)
    }

    @Test func theStoredStateWithItsLaterEventsHasTheMonitorsFacts() throws {
        let triggers = "[{name: 'z', exitAfter: 30, dwell: 600}]"
        let fences = [Kit.zone, Kit.box("z2", west: -300, east: -200, south: -50, north: 50)]
        let snapshot = try Kit.snapshot(fences, triggers: triggers)
        var m = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        // The first update: the trigger newly knows the device, which no event tells.
        let first = m.handle(Kit.update(east: 500, time: 100), receivedAt: 0)
        #expect(first.notifications.isEmpty && CommittedFacts.none != m.committedFacts)
        let stored = m.serialized()
        var told = m.committedFacts
        var journal: [JournaledDecision] = []
        // In z1, its dwell, out (held 30 s, confirmed), into z2, a pending exit cancelled.
        let drive: [(east: Double, time: Double)] = [(-10, 200), (-20, 900), (50, 1_000), (60, 1_040), (-250, 1_100),
                                                     (-150, 1_110), (-260, 1_120)]
        var types: [NotificationType] = []
        for (step, (east, time)) in drive.enumerated() {
            let outcome = m.handle(Kit.update(east: east, time: time), receivedAt: Double(step + 1))
            for note in outcome.notifications {
                types.append(note.type)
                let decision = try #require(Self.journaled(note))
                journal.append(decision)
                told = told.applying(decision)
            }
            #expect(told == m.committedFacts, "step \(step): the journal tells what the monitor decided")
        }
        #expect(types == [.enter, .dwell, .exit, .enter])

        // A kill -9 here: the database has the first state and the journal its events.
        let folded = try DeviceMonitor.replay(journal, onto: stored)
        #expect(CommittedFacts(serialized: folded) == m.committedFacts)
        var restored = try DeviceMonitor.restore(from: folded, snapshot: snapshot, now: 5_000)
        #expect(restored.notifications.isEmpty)
        #expect(restored.monitor.stays == m.stays && restored.monitor.lastUpdate?.time == 1_100)
        // Still inside z2: no enter again; an update older than the last event is not taken.
        #expect(restored.monitor.handle(Kit.update(east: -255, time: 1_130), receivedAt: 5_001).notifications.isEmpty)
        #expect(restored.monitor.handle(Kit.update(east: 50, time: 1_050), receivedAt: 5_002).disposition == .outOfOrder)
        // Replaying what the state already holds changes nothing.
        #expect(try DeviceMonitor.replay(journal, onto: folded) == folded)
    }

    /// Random drives over overlapping fences, under triggers with holds, dwell, staleness and
    /// an enter-only rule, with silence ticks between fixes. The shard's bookkeeping is played
    /// here: a step whose new facts its events do not tell writes the state (the journal's
    /// earlier events are then in it). At every step the stored state with the events after it
    /// must give the monitor's facts again, as the fold will.
    @Test(arguments: ["[{name: 'z', exitAfter: 30, dwell: 60}]",
                      "[{name: 'z', enterAfter: 20, exitAfter: 20, staleAfter: 40}]",
                      "[{name: 'z'}, {name: 'in', rule: 'enter', dwell: 30}]",
                      "[{name: 'z', initial: 'baseline', exitAfter: 10}]"])
    func randomDrivesKeepTheStoredStateAndTheJournalWhole(triggers: String) throws {
        let fences = [Kit.zone, Kit.box("z2", west: -60, east: 60, south: -20, north: 20),
                      Kit.box("z3", west: 100, east: 200, south: -50, north: 50)]
        let snapshot = try Kit.snapshot(fences, triggers: triggers)
        var random = SplitMix(seed: UInt64(truncatingIfNeeded: triggers.hashValue))
        var written = 0, told = 0
        for drive in 0..<40 {
            var m = DeviceMonitor(device: "workers/d\(drive)", snapshot: snapshot, now: 0)
            var stored = m.serialized()
            var journal: [JournaledDecision] = []
            var facts = m.committedFacts
            var time = 1_000.0, clock = 0.0, east = Double(random.next() % 400) - 200
            for step in 0..<60 {
                time += Double(random.next() % 30 + 1)
                clock += Double(random.next() % 30 + 1)
                east += Double(random.next() % 81) - 40
                var notes = m.advance(to: clock)
                let outcome = m.handle(Kit.update(m.device, east: east, north: Double(random.next() % 30) - 15, time: time), receivedAt: clock)
                notes += outcome.notifications
                var next = facts
                var events: [JournaledDecision] = []
                for note in notes {
                    guard let decision = Self.journaled(note) else { continue }
                    events.append(decision)
                    next = next.applying(decision)
                }
                journal += events
                if next != m.committedFacts {
                    stored = m.serialized()
                    journal = []
                    written += 1
                } else if !events.isEmpty {
                    told += 1
                }
                facts = m.committedFacts
                let folded = try DeviceMonitor.replay(journal, onto: stored)
                #expect(CommittedFacts(serialized: folded) == m.committedFacts, "drive \(drive), step \(step): \(triggers)")
            }
        }
        #expect(told > written, "most deciding steps are told by their events: \(told) told, \(written) written")
    }

    @Test func aDecisionNoEventTellsIsNotTold() throws {
        let snapshot = try Kit.snapshot([Kit.zone], triggers: "[{name: 'z', initial: 'baseline'}]")
        var m = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        _ = m.handle(Kit.update(east: 500, time: 100), receivedAt: 0)
        _ = m.handle(Kit.update(east: 600, time: 150), receivedAt: 1)
        let told = m.committedFacts
        // Known already, so coming in is an enter; but a silent baseline of a new trigger...
        let enter = m.handle(Kit.update(east: -10, time: 200), receivedAt: 2)
        #expect(enter.notifications.map(\.type) == [.enter])
        #expect(told.applying(try #require(Self.journaled(enter.notifications[0]))) == m.committedFacts)
        var fresh = DeviceMonitor(device: "workers/bob", snapshot: snapshot, now: 0)
        let none = fresh.committedFacts
        let baseline = fresh.handle(Kit.update("workers/bob", east: -10, time: 100), receivedAt: 0)
        #expect(baseline.notifications.isEmpty && fresh.stays.count == 1)
        #expect(none != fresh.committedFacts, "a silent baseline must be written as a state")
    }
}
