import Testing
@testable import GeotriggerCore

/// docs/phones.md: a phone's transitions judged against the gateway's own decisions, within 60 s
/// of fix time, by a pure ledger.
@Suite struct PhoneTransitionLedgerTests {
    typealias Key = PhoneTransitionLedger.StayKey
    static let desert = Key(trigger: "garden", rid: "garden-sections/desert")
    static let agree = PhoneTransitionLedger.Verdict(trigger: "garden", agrees: true)
    static let disagree = PhoneTransitionLedger.Verdict(trigger: "garden", agrees: false)

    @Test func aPhoneThatSaysWhatTheGatewayDecidedAgrees() {
        var ledger = PhoneTransitionLedger(inside: [])
        // The gateway first, the phone 20 s later (its circle is larger: it may be early or late).
        #expect(ledger.gatewayStays([Self.desert], time: 1_000).isEmpty)
        #expect(ledger.phoneSaid(rid: Self.desert.rid, enter: true, time: 1_020, triggers: ["garden"], now: 0) == [Self.agree])
        // The phone first, the gateway 50 s later.
        #expect(ledger.phoneSaid(rid: Self.desert.rid, enter: false, time: 1_100, triggers: ["garden"], now: 1).isEmpty)
        #expect(ledger.waitingClaims == 1)
        #expect(ledger.gatewayStays([], time: 1_150) == [Self.agree])
        #expect(ledger.waitingClaims == 0)
    }

    @Test func aPhoneThatSaysOtherwiseDisagrees() {
        var ledger = PhoneTransitionLedger(inside: [])
        // The phone says it entered; the gateway never did, and its fixes go on past the window.
        #expect(ledger.phoneSaid(rid: Self.desert.rid, enter: true, time: 1_000, triggers: ["garden"], now: 0).isEmpty)
        #expect(ledger.gatewayStays([], time: 1_030).isEmpty)
        #expect(ledger.gatewayStays([], time: 1_061) == [Self.disagree])
        // The gateway entered, the phone says it left: no match, judged when the window ends.
        _ = ledger.gatewayStays([Self.desert], time: 1_100)
        #expect(ledger.phoneSaid(rid: Self.desert.rid, enter: false, time: 1_101, triggers: ["garden"], now: 2).isEmpty)
        #expect(ledger.gatewayStays([Self.desert], time: 1_200) == [Self.disagree])
        // Too far apart (90 s) is no agreement either.
        _ = ledger.gatewayStays([], time: 1_300)
        #expect(ledger.phoneSaid(rid: Self.desert.rid, enter: false, time: 1_390, triggers: ["garden"], now: 3).isEmpty)
        #expect(ledger.gatewayStays([], time: 1_451) == [Self.disagree])
    }

    @Test func aSilentDeviceStillGetsItsClaimsJudged() {
        var ledger = PhoneTransitionLedger(inside: [])
        _ = ledger.phoneSaid(rid: Self.desert.rid, enter: true, time: 1_000, triggers: ["garden"], now: 100)
        #expect(ledger.expire(now: 150).isEmpty)
        #expect(ledger.expire(now: 100 + PhoneTransitionLedger.patience + 1) == [Self.disagree])
    }

    @Test func whereTheDeviceAlreadyWasIsNoDecision() {
        var ledger = PhoneTransitionLedger(inside: [Self.desert])
        #expect(ledger.gatewayStays([Self.desert], time: 1_000).isEmpty)
        // So a phone's late enter finds nothing to agree with.
        _ = ledger.phoneSaid(rid: Self.desert.rid, enter: true, time: 1_001, triggers: ["garden"], now: 0)
        #expect(ledger.gatewayStays([Self.desert], time: 1_100) == [Self.disagree])
    }

    @Test func eachTriggerIsJudgedOnItsOwn() {
        let other = Key(trigger: "night", rid: Self.desert.rid)
        var ledger = PhoneTransitionLedger(inside: [])
        _ = ledger.gatewayStays([Self.desert], time: 1_000)
        let verdicts = ledger.phoneSaid(rid: Self.desert.rid, enter: true, time: 1_005, triggers: ["garden", "night"], now: 0)
        #expect(verdicts == [Self.agree])
        #expect(ledger.gatewayStays([Self.desert], time: 1_070) == [PhoneTransitionLedger.Verdict(trigger: other.trigger, agrees: false)])
    }

    @Test func aFlappingPhoneCannotGrowTheLedger() {
        var ledger = PhoneTransitionLedger(inside: [])
        var verdicts: [PhoneTransitionLedger.Verdict] = []
        for i in 0..<1_000 {
            verdicts += ledger.phoneSaid(rid: "garden-sections/r\(i)", enter: true, time: 1_000, triggers: ["garden"], now: 0)
        }
        #expect(ledger.waitingClaims == PhoneTransitionLedger.capacity)
        #expect(verdicts.count == 1_000 - PhoneTransitionLedger.capacity && verdicts.allSatisfy { !$0.agrees })
    }
}
