import Foundation
import Testing
@testable import Gateway

/// A track whose time is 1e300 used to trap while the events were written; now `replay`
/// reports it and exits 2.
@Suite struct ReplayTimeTests {
    @Test func aTrackTimeOf1e300IsAUsageError() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try """
            {"device": "a", "lat": 34.4497, "lon": -119.7122, "time": 1796040000}
            {"device": "a", "lat": 34.4500, "lon": -119.7100, "time": 1e300}

            """.write(toFile: file, atomically: true, encoding: .utf8)
        let status = await GeotriggerCommand.main(["replay", file, "--fences", repositoryRoot + "/fences"])
        #expect(status == ExitStatus.usage)
    }
}
