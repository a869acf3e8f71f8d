import GeotriggerCore
import Store
import Testing

@testable import Gateway

/// `ExpectationBook` and `ExpectedArrival.parse` on their own: no broker, no store, fixed times.
@Suite struct ExpectationBookTests {
    static let by = 1_800_000_000.0

    static func expectation(_ id: String = "e1", device: String = "vehicles/v17", fence: String = "depot", by: Double = by,
                            payload: String? = nil) -> ExpectedArrival {
        ExpectedArrival(id: id, device: device, layer: "fleet", fence: fence, by: by,
                    payload: Array((payload ?? "\(id)-\(device)-\(fence)-\(by)").utf8), received: by - 600)
    }

    /// The decisions in `actions`.
    static func decisions(_ actions: [ExpectationBook.Action]) -> [ExpectationDecision] {
        actions.compactMap { if case .decide(let d) = $0 { d } else { nil } }
    }

    static func generation(_ actions: [ExpectationBook.Action]) -> Int? {
        for case .checkStay(_, let generation) in actions { return generation }
        return nil
    }

    @Test func anEnterBeforeTheDeadlineArrivesOnceWithHowEarly() throws {
        var book = ExpectationBook(capacity: 10)
        let actions = book.offer(Self.expectation(), now: Self.by - 600)
        #expect(actions.first == ExpectationBook.Action.store(.open(Self.expectation().row)))
        let generation = try #require(Self.generation(actions))
        let r1 = book.stay("e1", generation: generation, since: nil, now: Self.by - 599)
        #expect(r1.isEmpty)
        #expect(book.hasOpen(device: "vehicles/v17"))
        // Another fence, and another device, meet nothing.
        let r2 = book.arrival(device: "vehicles/v17", layer: "fleet", fence: "site-east", time: Self.by - 300, now: Self.by - 299)
        #expect(r2.isEmpty)
        let r3 = book.arrival(device: "vehicles/v18", layer: "fleet", fence: "depot", time: Self.by - 300, now: Self.by - 299)
        #expect(r3.isEmpty)
        let arrived = book.arrival(device: "vehicles/v17", layer: "fleet", fence: "depot", time: Self.by - 120.5, now: Self.by - 120)
        #expect(arrived.count == 1)
        #expect(arrived.first?.outcome == .arrived(Self.by - 120.5))
        #expect(!book.hasOpen(device: "vehicles/v17"))
        // Decided once: a second enter and the deadline decide nothing more.
        let r4 = book.arrival(device: "vehicles/v17", layer: "fleet", fence: "depot", time: Self.by - 60, now: Self.by - 60)
        #expect(r4.isEmpty)
        let r5 = book.tick(now: Self.by + 1)
        #expect(r5.isEmpty)
        let result = try #require(arrived.first?.resultJSON(emitted: Self.by - 120).objectValue)
        #expect(result["result"] == .string("arrived"))
        #expect(result["early"] == .number(120.5))
        #expect(result["time"] == .string(ISO8601Time.format(Self.by - 120.5)))
        #expect(result["expectation"] == .string("e1"))
        #expect(result["id"] == .string(arrived[0].id))
    }

    @Test func noArrivalByTheDeadlineIsMissedAtIt() throws {
        var book = ExpectationBook(capacity: 10)
        let generation = try #require(Self.generation(book.offer(Self.expectation(), now: Self.by - 10)))
        let r6 = book.stay("e1", generation: generation, since: nil, now: Self.by - 10)
        #expect(r6.isEmpty)
        let r7 = book.tick(now: Self.by - 0.001)
        #expect(r7.isEmpty)
        let missed = book.tick(now: Self.by)
        #expect(missed.map(\.outcome) == [ExpectationDecision.Outcome.missed])
        let result = try #require(missed.first?.resultJSON(emitted: Self.by).objectValue)
        #expect(result["result"] == .string("missed"))
        #expect(result["time"] == .string(ISO8601Time.format(Self.by)))
        #expect(result["early"] == nil)
        // An enter after the deadline decided changes nothing; a late enter (fix time past by)
        // never arrives.
        let r8 = book.arrival(device: "vehicles/v17", layer: "fleet", fence: "depot", time: Self.by - 5, now: Self.by + 1)
        #expect(r8.isEmpty)
        var other = ExpectationBook(capacity: 10)
        _ = other.offer(Self.expectation(), now: Self.by - 10)
        let r9 = other.arrival(device: "vehicles/v17", layer: "fleet", fence: "depot", time: Self.by + 1, now: Self.by - 5)
        #expect(r9.isEmpty)
        #expect(other.hasOpen(device: "vehicles/v17"))
    }

    @Test func aStayWhenTheExpectationArrivesMeetsIt() throws {
        var book = ExpectationBook(capacity: 10)
        let generation = try #require(Self.generation(book.offer(Self.expectation(), now: Self.by + 5)))
        // Past by, but the stay check comes first: the deadline waits for its answer.
        let r10 = book.tick(now: Self.by + 5)
        #expect(r10.isEmpty)
        let arrived = book.stay("e1", generation: generation, since: Self.by - 3600, now: Self.by + 5)
        #expect(arrived.map(\.outcome) == [ExpectationDecision.Outcome.arrived(Self.by - 3600)])
        // A stale answer (for a replaced version) is ignored.
        let g2 = try #require(Self.generation(book.offer(Self.expectation(payload: "v2"), now: Self.by + 6)))
        let r11 = book.stay("e1", generation: generation, since: Self.by - 10, now: Self.by + 6)
        #expect(r11.isEmpty)
        let r12 = book.stay("e1", generation: g2, since: nil, now: Self.by + 6)
        #expect(r12.map(\.outcome) == [ExpectationDecision.Outcome.missed])
    }

    @Test func aRetainedCopyIsNoChangeAndASettledOnesCopyIsClearedAgain() throws {
        var book = ExpectationBook(capacity: 10)
        let e = Self.expectation()
        _ = book.offer(e, now: Self.by - 100)
        let r13 = book.offer(e, now: Self.by - 90)
        #expect(r13.isEmpty)
        let decided = book.arrival(device: e.device, layer: "fleet", fence: "depot", time: Self.by - 50, now: Self.by - 50)
        let resultID = try #require(decided.first?.id)
        let r14 = book.clearing("e1", resultID: resultID)
        #expect(r14)
        #expect(book.echoes["e1"] == 1)
        // The retained copy again (its clear did not reach the broker): cleared again, not opened.
        let r15 = book.offer(e, now: Self.by - 40)
        #expect(r15 == [ExpectationBook.Action.clearRetained("e1")])
        #expect(!book.hasOpen(device: e.device))
        // Both clears come back: the broker holds no copy; the settled entry and its row stay,
        // cleared, to recognise a copy an old save of the broker brings back.
        let r16 = book.cancel("e1")
        #expect(r16.isEmpty)
        let r17 = book.cancel("e1")
        #expect(r17.isEmpty)
        #expect(book.entries["e1"]?.cleared == true)
        #expect(book.echoes["e1"] == nil)
        // The broker restarts from a save older than the clear: the request comes back at the
        // connect, and is cleared again, not decided a second time.
        let r16b = book.offer(e, now: Self.by + 100)
        #expect(r16b == [ExpectationBook.Action.clearRetained("e1")])
        let r16c = book.tick(now: Self.by + 200)
        #expect(!book.hasOpen(device: e.device) && r16c.isEmpty)
        #expect(book.entries["e1"]?.status == .settled(resultID: resultID))
        let r16d = book.cancel("e1")
        #expect(r16d.isEmpty && book.entries["e1"]?.cleared == true)
    }

    /// Cleared settled entries do not hold places of open ones, and past `capacity` of them
    /// the oldest leave with their rows.
    @Test func clearedSettledOnesAreBoundedAndHoldNoPlace() {
        var book = ExpectationBook(capacity: 2)
        for n in 0..<5 {
            let e = Self.expectation("x\(n)")
            _ = book.offer(e, now: Self.by - 100)
            let decided = book.arrival(device: e.device, layer: "fleet", fence: "depot", time: Self.by - 50, now: Self.by - 50)
            #expect(decided.count == 1)
            let clearing = book.clearing("x\(n)", resultID: decided[0].id)
            #expect(clearing)
            let removed = book.cancel("x\(n)")
            #expect(removed == (n >= 2 ? [ExpectationBook.Action.store(.remove("x\(n - 2)", onlySettled: true))] : []))
        }
        #expect(book.clearedCount == 2 && book.entries.count == 2)
        #expect(book.entries["x3"]?.cleared == true && book.entries["x4"]?.cleared == true)
    }

    @Test func anEmptyPayloadCancelsButTheGatewaysOwnClearDoesNot() throws {
        var book = ExpectationBook(capacity: 10)
        _ = book.offer(Self.expectation(), now: Self.by - 100)
        let r18 = book.cancel("e1")
        #expect(r18 == [ExpectationBook.Action.store(.remove("e1", onlySettled: false))])
        #expect(!book.hasOpen(device: "vehicles/v17"))
        let r19 = book.tick(now: Self.by + 1)
        #expect(r19.isEmpty)
        let r20 = book.cancel("unknown")
        #expect(r20.isEmpty)

        // Settled, cleared; a replacement arrives before the clear comes back: it stays open.
        _ = book.offer(Self.expectation("e2"), now: Self.by - 100)
        let decided = book.arrival(device: "vehicles/v17", layer: "fleet", fence: "depot", time: Self.by - 90, now: Self.by - 90)
        let r21 = book.clearing("e2", resultID: try #require(decided.first?.id))
        #expect(r21)
        _ = book.offer(Self.expectation("e2", payload: "replacement"), now: Self.by - 80)
        let r22 = book.cancel("e2")
        #expect(r22.isEmpty)
        #expect(book.hasOpen(device: "vehicles/v17"))
        // A clear of a replaced one is not published.
        let r23 = book.clearing("e2", resultID: decided[0].id)
        #expect(!r23)
    }

    @Test func capacityRejectsNewOnesButNotReplacements() {
        var book = ExpectationBook(capacity: 2)
        _ = book.offer(Self.expectation("a"), now: 0)
        _ = book.offer(Self.expectation("b"), now: 0)
        let rejected = book.offer(Self.expectation("c"), now: 0)
        guard case .reject(let id, let reason)? = rejected.first else {
            Issue.record("expected a rejection, got \(rejected)")
            return
        }
        #expect(id == "c" && reason.contains("2 expectations are open"))
        let r24 = book.offer(Self.expectation("a", payload: "new"), now: 0)
        #expect(r24.contains(ExpectationBook.Action.store(.open(Self.expectation("a", payload: "new").row))))
        #expect(book.openCount == 2)
    }

    @Test func restoredRowsAreOpenOrSettledAsStored() throws {
        var book = ExpectationBook(capacity: 10)
        let open = Self.expectation("open")
        var settled = Self.expectation("settled").row
        settled.result = "missed"
        settled.resultID = "r1"
        let checks = book.restore([open.row, settled])
        #expect(book.openCount == 1)
        #expect(book.open(device: nil).map(\.id) == ["open"])
        // A restart past by: the stay is checked first, then missed when not inside.
        let generation = try #require(Self.generation(checks))
        #expect(checks.count == 1)
        #expect(book.tick(now: Self.by + 3600).isEmpty)
        let r25 = book.stay("open", generation: generation, since: nil, now: Self.by + 3600)
        #expect(r25.map(\.expectation.id) == ["open"] && r25.map(\.result) == ["missed"])
        #expect(book.entries["settled"]?.status == .settled(resultID: "r1"))
    }

    /// A run killed after storing an expectation and before its stay check was answered: the
    /// start checks the stay again and decides the arrival exactly as the live path would have
    /// (same outcome, same result id), even past `by`.
    @Test func aRestoredOpenExpectationIsDecidedFromTheStayAsLive() throws {
        var live = ExpectationBook(capacity: 10)
        let g1 = try #require(Self.generation(live.offer(Self.expectation(), now: Self.by - 60)))
        let liveDecision = try #require(live.stay("e1", generation: g1, since: Self.by - 3600, now: Self.by - 60).first)

        var restarted = ExpectationBook(capacity: 10)
        let checks = restarted.restore([Self.expectation().row])
        let g2 = try #require(Self.generation(checks))
        #expect(restarted.tick(now: Self.by + 30).isEmpty, "the deadline waits for the check")
        let decision = try #require(restarted.stay("e1", generation: g2, since: Self.by - 3600, now: Self.by + 30).first)
        #expect(decision.result == "arrived" && decision.outcome == liveDecision.outcome)
        #expect(decision.id == liveDecision.id)
        #expect(restarted.openCount == 0)
    }

    /// The start left open rows out (over the cap): a cancel of an id the book does not know
    /// deletes its row; without rows left out it changes nothing.
    @Test func aCancelOfAnUnknownIDDeletesItsRowOnlyWhenTheStartLeftSomeOut() {
        var book = ExpectationBook(capacity: 2)
        _ = book.restore([Self.expectation("a").row], leftOut: 3)
        #expect(book.cancel("z") == [ExpectationBook.Action.store(.remove("z", onlySettled: false))])
        var full = ExpectationBook(capacity: 2)
        _ = full.restore([Self.expectation("a").row])
        #expect(full.cancel("z").isEmpty)
    }

    @Test func resultIDsAreDeterministic() {
        let a = ExpectationDecision(expectation: Self.expectation(), outcome: .missed, decided: 1)
        let b = ExpectationDecision(expectation: Self.expectation(), outcome: .missed, decided: 2)
        let c = ExpectationDecision(expectation: Self.expectation(), outcome: .arrived(Self.by - 1), decided: 1)
        #expect(a.id == b.id)
        #expect(a.id != c.id)
        #expect(a.id.count == 32 && a.id.allSatisfy { $0.isHexDigit })
    }

    @Test func payloadsAreCheckedAgainstTheFencesAndTriggers() throws {
        let fleet = FenceLayerParser.parse(
            Array(#"{"type":"FeatureCollection","features":[{"type":"Feature","id":"depot","properties":{},"geometry":{"type":"Point","coordinates":[-119.69,34.43]}}]}"#.utf8),
            file: "fleet.geojson", layer: "fleet")
        #expect(fleet.errors.isEmpty)
        let snapshot = try EngineSnapshot(
            layers: [fleet.layer], configTriggers: .array([.object(["name": .string("fleet"), "fences": .array([.string("fleet")]),
                                                               "buffer": .number(50), "devices": .array([.string("vehicles/*")])])]))
        func parse(_ text: String, id: String = "e1") -> String? {
            switch ExpectedArrival.parse(Array(text.utf8), id: id, topic: "p/expect/\(id)", snapshot: snapshot, maxPayload: 256, received: 0) {
            case .success: nil
            case .failure(let problem): problem.message
            }
        }
        #expect(parse(#"{"device":"vehicles/v17","layer":"fleet","fence":"depot","by":"2026-12-02T09:30:00Z"}"#) == nil)
        #expect(parse(#"[1]"#)?.contains("expected a JSON object") == true)
        #expect(parse(#"{"device":"vehicles/v17""#)?.contains("not JSON") == true)
        #expect(parse(#"{"device":"vehicles/v17","layer":"fleet","fence":"depot"}"#)?.contains("\"by\" is missing") == true)
        #expect(parse(#"{"device":"vehicles/v17","layer":"fleet","fence":"depot","by":1800000000}"#)?.contains("\"by\" must be a string") == true)
        #expect(parse(#"{"device":"vehicles/v17","layer":"fleet","fence":"depot","by":"tomorrow"}"#)?.contains("ISO-8601") == true)
        #expect(parse(#"{"device":"vehicles/v17","layer":"sites","fence":"depot","by":"2026-12-02T09:30:00Z"}"#)?.contains("no fence layer \"sites\"") == true)
        #expect(parse(#"{"device":"vehicles/v17","layer":"fleet","fence":"dock","by":"2026-12-02T09:30:00Z"}"#)?.contains("no fence \"dock\"") == true)
        #expect(parse(#"{"device":"walkers/ann","layer":"fleet","fence":"depot","by":"2026-12-02T09:30:00Z"}"#)?.contains("no trigger watches layer \"fleet\" for device \"walkers/ann\"") == true)
        #expect(parse(#"{"device":"a/+","layer":"fleet","fence":"depot","by":"2026-12-02T09:30:00Z"}"#)?.contains("wildcard") == true)
        #expect(parse(String(repeating: " ", count: 300) + "{}")?.contains("over the 256 bytes an expectation may have") == true)
        #expect(parse("{}", id: "")?.contains("needs an expectation ID") == true)
    }
}
