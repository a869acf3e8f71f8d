import Testing
@testable import Gateway

@Suite struct CommandLineTests {
    @Test func unknownCommandIsUsageError() async {
        #expect(await GeotriggerCommand.main(["frobnicate"]) == ExitStatus.usage)
    }

    @Test func argumentsRejectUnknownOptions() throws {
        #expect(throws: UsageError.self) { try Arguments(["--nope"], valued: [], flags: []) }
        let a = try Arguments(["x", "--accuracy=5", "--json"], valued: ["accuracy"], flags: ["json"])
        #expect(a.positionals == ["x"])
        #expect(a.has("json"))
        #expect(try a.number("accuracy") == 5)
    }
}
