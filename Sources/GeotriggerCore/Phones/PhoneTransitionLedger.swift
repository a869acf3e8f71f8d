/// One phone's `transition` messages judged against the gateway's own decisions for that
/// device (docs/phones.md): a phone that says it entered or left region `LAYER/FENCE` agrees
/// when the gateway, in a trigger with `phones` on, entered or left that fence too within
/// ``window`` seconds of fix time of the phone's `tst`; else it disagrees. Never an event:
/// the gateway stays the authority. Pure: the shard feeds it the device's confirmed stays
/// after each step and the phone's claims as they come, and counts the verdicts.
public struct PhoneTransitionLedger: Sendable {
    /// Seconds of fix time within which a phone's transition and the gateway's agree.
    public static let window = 60.0
    /// Gateway-clock seconds after its arrival when a claim is judged even if the device sends
    /// no fix that would settle it.
    public static let patience = 90.0
    /// The most decisions and claims kept per phone (a flapping phone cannot grow memory).
    static let capacity = 32

    /// A stay of the gateway: (trigger, `LAYER/FENCE`).
    public struct StayKey: Sendable, Hashable {
        public var trigger: String
        public var rid: String
        public init(trigger: String, rid: String) { (self.trigger, self.rid) = (trigger, rid) }
    }

    /// A phone's transition judged for one trigger.
    public struct Verdict: Sendable, Equatable {
        public var trigger: String
        public var agrees: Bool
    }

    struct Decision {
        var key: StayKey
        var enter: Bool
        var time: Double
    }

    struct Claim {
        var key: StayKey
        var enter: Bool
        var time: Double
        var receivedAt: Double
    }

    private var inside: Set<StayKey>
    private var decisions: [Decision] = []
    private var claims: [Claim] = []
    /// The latest fix time the gateway decided at.
    private var latest = -Double.infinity

    /// `inside`: the device's stays (in triggers with `phones` on) before anything is judged:
    /// they are where it is, not decisions.
    public init(inside: Set<StayKey>) { self.inside = inside }

    /// The device's stays after a step decided at fix time `time`: what entered and what left
    /// since the last call are the gateway's decisions; returns the claims they settle.
    public mutating func gatewayStays(_ stays: Set<StayKey>, time: Double) -> [Verdict] {
        latest = max(latest, time)
        var verdicts: [Verdict] = []
        for key in stays.subtracting(inside) { decide(Decision(key: key, enter: true, time: time), into: &verdicts) }
        for key in inside.subtracting(stays) { decide(Decision(key: key, enter: false, time: time), into: &verdicts) }
        inside = stays
        // Decisions older than any claim could still match are let go.
        decisions.removeAll { $0.time < latest - 2 * Self.window }
        if decisions.count > Self.capacity { decisions.removeFirst(decisions.count - Self.capacity) }
        return verdicts + expire(now: nil)
    }

    /// The phone says it entered (`enter`) or left region `rid` at its fix time `time`, for
    /// each of `triggers` (those with `phones` on that give the device that fence); `now`: the
    /// gateway clock.
    public mutating func phoneSaid(rid: String, enter: Bool, time: Double, triggers: [String], now: Double) -> [Verdict] {
        var verdicts: [Verdict] = []
        for trigger in triggers {
            let claim = Claim(key: StayKey(trigger: trigger, rid: rid), enter: enter, time: time, receivedAt: now)
            if let i = decisions.firstIndex(where: { Self.matches($0, claim) }) {
                decisions.remove(at: i)
                verdicts.append(Verdict(trigger: trigger, agrees: true))
            } else if claims.count >= Self.capacity {
                verdicts.append(Verdict(trigger: trigger, agrees: false))
            } else {
                claims.append(claim)
            }
        }
        return verdicts + expire(now: now)
    }

    /// The claims nothing can settle any more: the gateway decided past their window, or
    /// (with `now`, the gateway clock) ``patience`` passed since they came. They disagree.
    public mutating func expire(now: Double?) -> [Verdict] {
        var verdicts: [Verdict] = []
        claims.removeAll { claim in
            let late = latest > claim.time + Self.window || now.map { $0 - claim.receivedAt > Self.patience } == true
            if late { verdicts.append(Verdict(trigger: claim.key.trigger, agrees: false)) }
            return late
        }
        return verdicts
    }

    /// Claims waiting for a decision (for tests and the shard's tick).
    public var waitingClaims: Int { claims.count }

    private mutating func decide(_ decision: Decision, into verdicts: inout [Verdict]) {
        if let i = claims.firstIndex(where: { Self.matches(decision, $0) }) {
            verdicts.append(Verdict(trigger: claims[i].key.trigger, agrees: true))
            claims.remove(at: i)
        } else {
            decisions.append(decision)
        }
    }

    private static func matches(_ decision: Decision, _ claim: Claim) -> Bool {
        decision.key == claim.key && decision.enter == claim.enter && abs(decision.time - claim.time) <= window
    }
}
