import Foundation
import GeotriggerCore
import MQTT
import Store
import Testing
import TestSupport

@testable import Gateway

/// ``RuntimeFences/run()`` on the cancellable repeater: a shutdown ends the loop and still
/// saves the changes not saved yet (docs/control-plane.md "Runtime fences": a fence change
/// is never dropped). Over a real database, with a client that never connects.
@Suite struct RuntimeFenceLoopTests {
    @Test(.timeLimit(.minutes(3))) func shutdownEndsTheLoopAndSavesAChangeStillWaitingForItsRebuild() async throws {
        let rig = try await RuntimeFenceBudgetTests.Rig(runtime: "{}")
        let client = try MQTTClient(MQTTConfiguration(port: 1, clientId: "gw-loop-\(UUID().uuidString.prefix(8))"))
        let (_, adoptions) = AsyncStream.makeStream(of: EngineSnapshot.self)
        // The first change is built at the loop's next visit; later ones wait an hour.
        let fences = await RuntimeFences(setup: rig.setup, client: client, store: rig.store, warnings: rig.warnings,
                                         logger: Logger(label: "loop-test"), adoptions: adoptions, rebuildInterval: 3600)
        let loop = Task { try await fences.run() }
        await fences.queueChange(RuntimeFenceBudgetTests.message("jobs", "a", RuntimeFenceBudgetTests.feature(300)))
        // Saved first, then adopted (RuntimeFences.rebuildIfDue): both, in time. A full test
        // run's process tests can hold the cooperative pool (two threads on a 2-core box) for
        // over a minute, so the wait is long; the time limit still catches a loop that hangs.
        #expect(await poll(timeout: .seconds(120)) {
            (try? await rig.stored()) == ["a": 300] && fences.snapshot.fence(layer: "jobs", id: "a") != nil
        })
        await fences.queueChange(RuntimeFenceBudgetTests.message("jobs", "b", RuntimeFenceBudgetTests.feature(200)))
        await fences.queueChange(RuntimeFenceBudgetTests.message("jobs", "a", []))
        // Not built, not saved: the rebuild interval has not passed.
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await rig.stored() == ["a": 300] && fences.snapshot.fence(layer: "jobs", id: "b") == nil)
        let start = MonotonicClock.now()
        await fences.shutdown()
        try await loop.value
        let stopped = MonotonicClock.now() - start
        print("runtime fence loop: ended \(Int(stopped * 1000)) ms after shutdown; stored \(try await rig.stored())")
        // No bound on `stopped`: beside the whole test run the pool can be busy for seconds
        // (RepeatingTests show the stop ending a wait; the time limit catches a loop that hangs).
        #expect(try await rig.stored() == ["b": 200])
        await rig.store.close()
    }
}
