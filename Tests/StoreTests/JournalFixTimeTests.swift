import Foundation
import Testing
import TestSupport
@testable import Store

/// Schema 10 has no `(fix_time, id)` index: `since` (fix times at or after it) is found from
/// the first sequence emitted `fixAhead` + `emittedDisorder` before it, plus the events whose
/// fix time is far ahead of their emitted time (`journal_fix_ahead`).
@Suite struct JournalFixTimeTests {
    static let start = 1_800_000_000.0

    /// `count` events, one emitted per second from ``start`` in commit order, each fixed
    /// `lag(n)` seconds before its emission (negative: a fix from a clock ahead).
    static func events(_ count: Int, from first: Int = 0, emitted: (Int) -> Double = { start + Double($0) },
                       lag: (Int) -> Double = { _ in 2 }) -> [JournalEvent] {
        (first..<first + count).map { n in
            testEvent("e\(n)", device: "d\(n % 7)", fix: emitted(n) - lag(n), emitted: emitted(n))
        }
    }

    /// Every event of `all` with a fix time in [since, until), by a plain filter.
    static func expected(_ all: [JournalEvent], since: Double, until: Double? = nil) -> [JournalEvent] {
        all.filter { $0.fixTime >= since && $0.fixTime < (until ?? .infinity) }
    }

    @Test func sinceFindsWhatAFilterOfEveryEventFinds() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("since.db"))
        // 3,000 events: most fixed 2 s before they were emitted; every 100th decided late (an
        // hour after its fix: an exit by silence, a phone's buffered fixes); #10 and #2,000
        // fixed by a clock an hour ahead (gpsd keeps such fixes); #1,500 59 s ahead.
        let all = Self.events(3000, lag: { n in
            switch n {
            case 10, 2000: -3600
            case 1500: -59
            case _ where n % 100 == 0: 3600
            default: 2
            }
        })
        for chunk in stride(from: 0, to: all.count, by: 250) {
            _ = try await store.commit(StoreBatch(events: Array(all[chunk..<chunk + 250])))
        }
        for since in [0.0, 1000, 2000, 2500, 2990, 3000, 3700, 5000] {
            let query = JournalQuery(since: Self.start + since)
            let wanted = Self.expected(all, since: Self.start + since)
            #expect(try await store.events(query).map(\.event) == wanted, "since +\(since)")
            let page = try await store.eventPage(query, offset: 0, limit: 5000, maxSteps: 100_000_000)
            #expect(page.count == wanted.count, "since +\(since)")
            #expect(page.payloads == wanted.sorted { ($0.fixTime, $0.id) < ($1.fixTime, $1.id) }.map(\.payload), "since +\(since)")
        }
        let window = JournalQuery(since: Self.start + 1000, until: Self.start + 1500, devices: ["d3"])
        #expect(try await store.events(window).map(\.event)
                == Self.expected(all, since: Self.start + 1000, until: Self.start + 1500).filter { $0.device == "d3" })
        // The last minutes are read from their sequences, not the whole journal: a budget a
        // scan of the 3,000 rows exceeds is enough.
        let recent = try await store.eventPage(JournalQuery(since: Self.start + 2990), offset: 0, limit: 100, maxSteps: 20_000)
        #expect(recent.count == Self.expected(all, since: Self.start + 2990).count)
        let everything = JournalQuery(devices: ["nobody"])
        await #expect(throws: SQLiteError.self) { try await store.eventPage(everything, offset: 0, limit: 10, maxSteps: 20_000) }
        await store.close()
    }

    /// Emitted times follow commit order but for a wall clock set back: up to
    /// `emittedDisorder` (600 s) back, `since` still finds every event.
    @Test func aWallClockSetBackHidesNoEvent() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("clock.db"))
        // 1,000 events a second apart, then the clock set back 590 s for the next 1,000.
        let all = Self.events(2000, emitted: { n in Self.start + Double(n) - (n >= 1000 ? 590 : 0) })
        for chunk in stride(from: 0, to: all.count, by: 100) {
            _ = try await store.commit(StoreBatch(events: Array(all[chunk..<chunk + 100])))
        }
        for since in [0.0, 400, 500, 700, 950, 1000, 1300] {
            #expect(try await store.events(JournalQuery(since: Self.start + since)).map(\.event)
                    == Self.expected(all, since: Self.start + since), "since +\(since)")
        }
        await store.close()
    }

    /// The two halves of a `since` read use the rowid and `journal_fix_ahead`, the index no
    /// other event writes: SQLite uses a partial index only where the query spells its
    /// condition as the index does.
    @Test func sinceReadsBySequenceAndTheFixAheadIndex() async throws {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("plan.db"))
        _ = try await store.commit(StoreBatch(events: Self.events(10)))
        let plan = try await store.withConnection { connection in
            let (rows, bindings) = try GatewayStore.rows(JournalQuery(since: Self.start), on: connection)
            return try connection.query("EXPLAIN QUERY PLAN SELECT payload FROM " + rows, bindings) { $0.string(3) }
        }
        #expect(plan.contains { $0.contains("INTEGER PRIMARY KEY (rowid>?)") }, "\(plan)")
        #expect(plan.contains { $0.contains("USING INDEX journal_fix_ahead (fix_time>?)") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN journal") }, "\(plan)")
        // Only the events far ahead are in that index.
        _ = try await store.commit(StoreBatch(events: [testEvent("ahead", fix: Self.start + 5000, emitted: Self.start + 100)]))
        let ahead = try await store.withConnection { connection in
            try connection.query("SELECT id FROM journal INDEXED BY journal_fix_ahead WHERE \(GatewayStore.fixAheadCondition) AND fix_time > 0") {
                $0.string(0)
            }
        }
        #expect(ahead == ["ahead"])
        await store.close()
    }
}
