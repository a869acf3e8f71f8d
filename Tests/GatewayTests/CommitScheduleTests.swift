import Store
import Testing

@testable import Gateway

/// When the group commit starts (``EventCommitter/Pending/start(interval:now:)``), as values:
/// at fleet rates it waits for `gateway.commitInterval` after the last one began, gathering
/// company (README "On the box"); past ``EventCommitter/company`` items it starts at once.
@Suite struct CommitScheduleTests {
    static func event(_ n: Int) -> JournalEvent {
        JournalEvent(id: "e\(n)", device: "d", trigger: "t", layer: "l", fence: "f", type: "enter", fixTime: Double(n),
                     emittedTime: Double(n), payload: "{}")
    }

    static func adding(_ count: Int, to p: inout EventCommitter.Pending) {
        for n in 0..<count { p.batch.events.append(event(n)) }
    }

    @Test func aCommitWaitsForTheIntervalSinceTheLastBegan() {
        var p = EventCommitter.Pending()
        Self.adding(1, to: &p)
        // Nothing committed yet: at once.
        let start = p.start(interval: 0.5, now: 100)
        #expect(start == .now)
        p.lastStart = 100
        p.scheduled = false
        // 0.2 s after the last began: 0.3 s later, on timer 1.
        guard case .later(let seconds, let timer) = p.start(interval: 0.5, now: 100.2) else { Issue.record("no timer"); return }
        #expect(abs(seconds - 0.3) < 1e-9 && timer == 1)
    }

    @Test func theTimerStartsTheCommitUnlessCompanyCameFirst() {
        var p = EventCommitter.Pending()
        p.lastStart = 100
        Self.adding(1, to: &p)
        guard case .later(_, let first) = p.start(interval: 0.5, now: 100.1) else { Issue.record("no timer"); return }
        let waiting = p.start(interval: 0.5, now: 100.2)
        #expect(waiting == .none, "one commit waits already")
        let fired = p.timerFired(first)
        #expect(fired, "the timer starts it")
        let firedAgain = p.timerFired(first)
        #expect(!firedAgain, "once")
        // The next commit waits again; company comes before its timer: it starts at once, and
        // the timer, when it fires, does nothing.
        p.scheduled = false
        p.lastStart = 101
        guard case .later(_, let second) = p.start(interval: 0.5, now: 101.1) else { Issue.record("no timer"); return }
        #expect(second != first)
        Self.adding(EventCommitter.company, to: &p)
        let company = p.start(interval: 0.5, now: 101.15)
        #expect(company == .now)
        let lateTimer = p.timerFired(second)
        #expect(!lateTimer)
    }

    @Test func noIntervalOrAFullBatchCommitsAtOnce() {
        var p = EventCommitter.Pending()
        p.lastStart = 100
        Self.adding(1, to: &p)
        let noInterval = p.start(interval: 0, now: 100.01)
        #expect(noInterval == .now)
        var q = EventCommitter.Pending()
        q.lastStart = 100
        Self.adding(EventCommitter.company, to: &q)
        let fullBatch = q.start(interval: 0.5, now: 100.01)
        #expect(fullBatch == .now)
        // Finished (shutdown): nothing more is queued.
        var r = EventCommitter.Pending()
        r.finished = true
        Self.adding(1, to: &r)
        let finished = r.start(interval: 0.5, now: 200)
        #expect(finished == .none)
    }
}
