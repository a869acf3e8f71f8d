import Foundation
import Testing
import TestSupport
import GeotriggerCore
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

    /// `replay` drops a fix less accurate than `input.maxAccuracy` as `serve` does.
    @Test func replayDropsFixesPastMaxAccuracy() throws {
        let setup = try GatewaySetup.load(configFile: nil, fencesOverride: repositoryRoot + "/fences")
        let updates = [
            LocationUpdate(device: "a", lat: 34.4497, lon: -119.7122, time: 1_796_040_000, accuracy: 5),
            LocationUpdate(device: "a", lat: 34.4500, lon: -119.7100, time: 1_796_040_010, accuracy: 20_000),
        ]
        let run = ReplayRun(updates: updates, snapshot: setup.snapshot, maxAccuracy: 10_000)
        #expect(run.accepted == 1 && run.dropped == ["outOfRange": 1])
        #expect(ReplayRun(updates: updates, snapshot: setup.snapshot).accepted == 2)
    }
}
