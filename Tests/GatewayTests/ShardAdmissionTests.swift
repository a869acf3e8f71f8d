import Testing
@testable import Gateway

/// ``ShardAdmission``: which new devices are tracked under `input.maxDevices` and
/// `input.maxDevicesPerUser`, and what becomes of the warnings; no shard, no lock.
@Suite struct ShardAdmissionTests {
    static let rules = ShardAdmission(limit: 3, perUserLimit: 2)

    /// Decides with a per-user table of its own (what the census keeps in its lock), counting
    /// how often the table was asked.
    struct Table {
        var users = ShardAdmission.Users()
        var asked = 0

        mutating func decide(_ device: String, total: Int, refusing: Bool = false, level: Int = 0,
                             rules: ShardAdmission = ShardAdmissionTests.rules) -> ShardAdmission.Decision {
            rules.decide(total: total, refusing: refusing, user: ShardAdmission.user(of: device, level: level)) { user in
                asked += 1
                return users.admit(device, user: user, limit: rules.perUserLimit)
            }
        }
    }

    @Test func admittedBelowTheLimitRefusedAtIt() {
        var table = Table()
        #expect(table.decide("a", total: 0) == .init(verdict: .admitted))
        #expect(table.decide("b", total: 2).verdict == .admitted)
        let refused = table.decide("c", total: 3)
        #expect(refused == .init(verdict: .overLimit, limitWarning: .raise))
        #expect(!refused.admitted)
        #expect(table.decide("d", total: 40).verdict == .overLimit)
        #expect(table.asked == 0, "no user level: the per-user table is never asked")
    }

    @Test func theLimitWarningIsClearedOnceUnderTheLimitAgain() {
        var table = Table()
        #expect(table.decide("a", total: 3, refusing: false).limitWarning == .raise)
        #expect(table.decide("a", total: 3, refusing: true).limitWarning == .raise)
        #expect(table.decide("a", total: 2, refusing: true) == .init(verdict: .admitted, limitWarning: .clear))
        #expect(table.decide("b", total: 2, refusing: false).limitWarning == .unchanged)
    }

    @Test func perUserLimitRefusesThatUserOnly() {
        var table = Table()
        #expect(table.decide("alice/1", total: 0, level: 1).verdict == .admitted)
        #expect(table.decide("alice/2", total: 1, level: 1).verdict == .admitted)
        #expect(table.decide("alice/3", total: 2, level: 1) == .init(verdict: .overUserLimit("alice")))
        // Another user still has room, under the overall limit.
        #expect(table.decide("bob/1", total: 2, level: 1).verdict == .admitted)
        // A device counted already is never refused for its user.
        #expect(table.decide("alice/1", total: 2, level: 1).verdict == .admitted)
        #expect(table.users.count == ["alice": 2, "bob": 1])
        #expect(table.users.of["alice/3"] == nil)
        // Over the overall limit the user's table is not asked at all.
        let asked = table.asked
        #expect(table.decide("carol/1", total: 3, level: 1).verdict == .overLimit)
        #expect(table.asked == asked)
    }

    @Test func aRefusedUserWhileTheLimitWarningGoesDownStillClearsIt() {
        var table = Table()
        _ = table.decide("alice/1", total: 0, level: 1)
        _ = table.decide("alice/2", total: 1, level: 1)
        #expect(table.decide("alice/3", total: 2, refusing: true, level: 1) == .init(verdict: .overUserLimit("alice"), limitWarning: .clear))
    }

    @Test func releaseGivesTheUserRoomAndAttributeCountsWhateverTheRoom() {
        var users = ShardAdmission.Users()
        #expect(users.admit("alice/1", user: "alice", limit: 1) == true)
        #expect(users.admit("alice/2", user: "alice", limit: 1) == false)
        users.release("alice/1")
        #expect(users.count["alice"] == nil && users.of.isEmpty)
        #expect(users.admit("alice/2", user: "alice", limit: 1) == true)
        // Restored or woken devices were tracked before: counted even past the limit, once.
        users.attribute("alice/3", user: "alice")
        users.attribute("alice/3", user: "alice")
        #expect(users.count["alice"] == 2)
        #expect(users.admit("alice/4", user: "alice", limit: 2) == false)
        users.release("unknown")
        #expect(users.count["alice"] == 2)
    }

    @Test func theUserIsTheLevelOfTheDeviceID() {
        #expect(ShardAdmission.user(of: "owntracks/alice/phone", level: 0) == nil)
        #expect(ShardAdmission.user(of: "alice/phone", level: 1) == "alice")
        #expect(ShardAdmission.user(of: "alice/phone", level: 2) == "phone")
        #expect(ShardAdmission.user(of: "alice/phone", level: 3) == nil)
        #expect(ShardAdmission.user(of: "/phone", level: 1) == "")
    }

    @Test func warningTextsNameTheLimits() {
        #expect(Self.rules.limitWarningText.hasPrefix("3 devices are tracked (input.maxDevices)"))
        #expect(Self.rules.userWarningText("alice").hasPrefix("user alice has 2 devices (input.maxDevicesPerUser)"))
    }

    /// The census carries a decision out on its shared numbers: the flag's swap raises the
    /// warning once for all shards, and lowers it once.
    @Test func theCensusRaisesAndClearsTheWarningOnce() {
        let census = DeviceShard.Census(limit: 2, perUser: 1)
        #expect(census.admit("alice/1", userLevel: 1) == (.init(verdict: .admitted), false, false))
        census.total.store(1, ordering: .relaxed)
        #expect(census.admit("alice/2", userLevel: 1).decision.verdict == .overUserLimit("alice"))
        census.total.store(2, ordering: .relaxed)
        #expect(census.admit("bob/1", userLevel: 1) == (.init(verdict: .overLimit, limitWarning: .raise), true, false))
        #expect(census.admit("bob/2", userLevel: 1).raisesWarning == false, "raised once")
        census.total.store(0, ordering: .relaxed)
        census.release("alice/1")
        #expect(census.admit("alice/2", userLevel: 1) == (.init(verdict: .admitted, limitWarning: .clear), false, true))
        #expect(census.total.load(ordering: .relaxed) == 1, "an admitted device is counted at once")
        #expect(census.admit("bob/1", userLevel: 1) == (.init(verdict: .admitted), false, false), "cleared once")
        #expect(census.admit("carol/1", userLevel: 1).decision.verdict == .overLimit)
    }
}
