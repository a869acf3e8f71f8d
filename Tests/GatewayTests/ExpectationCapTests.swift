import Foundation
import Store
import Testing
import TestSupport

@testable import Gateway

/// The cap on open expectations (docs/limits.md) at start: a database holding more than the
/// cap (written by a run with a larger one, or grown by anything else) gives a book of at most
/// the cap, the ones accepted first, every one of them with a stay check, and a warning naming
/// how many were left out. The cap is ``Expectations/load(from:capacity:warnings:logger:)``'s
/// parameter (and `Expectations`'s), so the test uses a small one.
@Suite struct ExpectationCapTests {
    static func row(_ id: String, received: Double, result: String? = nil) -> ExpectationRow {
        ExpectationRow(id: id, payload: Array("\(id)-payload".utf8), device: "vehicles/v17", layer: "fleet", fence: "depot",
                       by: WallClock.now() + 3600, received: received, result: result, resultID: result.map { "r-\($0)" },
                       resultTime: result.map { _ in WallClock.now() }, settled: result.map { _ in WallClock.now() })
    }

    @Test func aStartWithMoreOpenThanTheCapLoadsTheFirstOnesAndWarns() async throws {
        let directory = try TemporaryDirectory(prefix: "expect-cap")
        let store = try await GatewayStore(path: directory.file("gw.db"))
        let now = WallClock.now()
        var batch = StoreBatch()
        // Accepted in the order e5, e4, ... e1: the first three accepted are e5, e4, e3.
        batch.expectations = (1...5).map { .open(Self.row("e\($0)", received: now - Double($0) * 10)) }
        batch.expectations.append(.settle(Self.row("s1", received: now - 100, result: "missed")))
        _ = try await store.commit(batch)

        let warnings = Warnings(logger: Logger(label: "cap-test"))
        let (book, checks) = await Expectations.load(from: store, capacity: 3, warnings: warnings, logger: Logger(label: "cap-test"))
        let warning = warnings.texts.first { $0.contains("left out at start") }
        print("expectations cap 3, 5 open stored: open \(book.open(device: nil).map(\.id).sorted()); checks \(checks.count); warning: \(warning ?? "none")")
        #expect(book.openCount == 3)
        #expect(book.open(device: nil).map(\.id).sorted() == ["e3", "e4", "e5"])
        #expect(Set(checks.map(\.0.id)) == ["e3", "e4", "e5"], "every restored open one is checked against its device's stay")
        #expect(book.entries["s1"]?.status == .settled(resultID: "r-missed"))
        #expect(warning?.hasPrefix("2 open and 0 settled expectations in the database were left out at start: at most 3 are open at once") == true,
                "\(warnings.texts)")
        // The next one is rejected on its error topic.
        var live = book
        let rejected = live.offer(ExpectedArrival(row: Self.row("e6", received: now)), now: now)
        #expect(rejected.contains { if case .reject("e6", let reason) = $0 { reason.contains("3 expectations are open") } else { false } },
                "\(rejected)")
        await store.close()
    }
}
