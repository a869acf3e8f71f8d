import Store
import Testing

@testable import Gateway

/// When the group commit starts (``CommitterState/start(now:)``), as values:
/// at fleet rates it waits for `gateway.commitInterval` after the last one began, gathering
/// company (docs/configuration.md "Durability"); with ``EventCommitter/company`` items it starts at once; one
/// timer at a time.
@Suite struct CommitScheduleTests {
    static func event(_ n: Int) -> JournalEvent {
        JournalEvent(id: "e\(n)", device: "d", trigger: "t", layer: "l", fence: "f", type: "enter", fixTime: Double(n),
                     emittedTime: Double(n), payload: "{}")
    }

    static func adding(_ count: Int, to p: inout CommitterState) {
        for n in 0..<count { p.batch.events.append(event(n)) }
    }

    static func about(_ start: CommitterState.Start, _ seconds: Double) -> Bool {
        if case .later(let s) = start { abs(s - seconds) < 1e-9 } else { false }
    }

    @Test func aCommitWaitsForTheIntervalSinceTheLastBegan() {
        var p = CommitterState(interval: 0.5)
        Self.adding(1, to: &p)
        let first = p.start(now: 100)
        #expect(first == .now, "nothing committed yet: at once")
        p.lastStart = 100
        p.scheduled = false
        let second = p.start(now: 100.2)
        #expect(Self.about(second, 0.3), "0.3 s later")
        let meanwhile = p.start(now: 100.3)
        #expect(meanwhile == .none, "one commit waits already")
        let fired = p.timerFired(now: 100.5)
        #expect(fired == .now)
        let again = p.timerFired(now: 100.6)
        #expect(again == .none, "once")
    }

    /// Company starts the waiting commit; the timer, armed for it, then finds nothing waiting,
    /// or re-arms itself for the next commit that waits.
    @Test func companyStartsTheCommitAndOneTimerServesTheNext() {
        var p = CommitterState(interval: 0.5)
        p.lastStart = 100
        Self.adding(1, to: &p)
        let waits = p.start(now: 100.1)
        #expect(Self.about(waits, 0.4))
        Self.adding(CommitterState.company, to: &p)
        let company = p.start(now: 100.15)
        #expect(company == .now)
        // That commit began at 100.15 and ended; the next one waits, with the timer still armed
        // (for 100.5): no second timer.
        p.lastStart = 100.15
        p.scheduled = false
        p.batch = StoreBatch()
        Self.adding(1, to: &p)
        let next = p.start(now: 100.2)
        #expect(next == .none, "the armed timer will look")
        // It fires at 100.5, before the interval since 100.15 ends: armed again for the rest.
        let early = p.timerFired(now: 100.5)
        #expect(Self.about(early, 0.15))
        let due = p.timerFired(now: 100.65)
        #expect(due == .now)
        // Nothing waits: the timer is done.
        let idle = p.timerFired(now: 101)
        #expect(idle == .none)
    }

    @Test func noIntervalOrCompanyCommitsAtOnce() {
        var p = CommitterState(interval: 0)
        p.lastStart = 100
        Self.adding(1, to: &p)
        let noInterval = p.start(now: 100.01)
        #expect(noInterval == .now)
        var q = CommitterState(interval: 0.5)
        q.lastStart = 100
        Self.adding(CommitterState.company, to: &q)
        let company = q.start(now: 100.01)
        #expect(company == .now)
        // Finished (shutdown): nothing more is queued.
        var r = CommitterState(interval: 0.5)
        r.finished = true
        Self.adding(1, to: &r)
        let finished = r.start(now: 200)
        #expect(finished == .none)
    }
}
