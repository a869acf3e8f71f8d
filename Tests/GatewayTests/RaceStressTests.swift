import Foundation
import GeotriggerCore
import MQTT
import Store
import Synchronization
import Testing
import TestSupport
@testable import Gateway

/// Races between the threads that share a decision (issue: hostile round three), each under
/// many threads hammering it, asserting the invariant after every round: `input.maxDevices` is
/// never passed by shards admitting at once; the `too-many-devices` and `event-rate-limited`
/// warnings always say what their flags say, whichever thread comes last.
@Suite(.serialized) struct RaceStressTests {
    static let t0 = DeviceShardTests.t0

    /// A context like the rig's with `warnings` of its own and `maxDevices`.
    static func context(_ rig: DeviceShardTests.Rig, maxDevices: Int, warnings: Warnings) -> ServeContext {
        var config = rig.context.config
        config.input.maxDevices = maxDevices
        return ServeContext(
            config: config, counters: rig.counters, warnings: warnings, logger: rig.context.logger, store: rig.store,
            committer: rig.committer, statePublisher: rig.context.statePublisher, eventBuilder: rig.context.eventBuilder)
    }

    /// An update of a device new to the shard: one far from the fence (nothing to decide).
    static func newDevice(_ id: String) -> LocationUpdate { LocationUpdate(device: id, lat: 10, lon: 10, time: t0) }

    /// Runs `body(i)` for i in 0..<count on `count` threads, released together: each spins
    /// until all have arrived (keep `count` at the box's cores, or below).
    static func atOnce(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let arrived = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for i in 0..<count {
            let thread = Thread {
                arrived.add(1, ordering: .acquiringAndReleasing)
                while arrived.load(ordering: .acquiring) < count {}
                body(i)
                done.signal()
            }
            thread.start()
        }
        for _ in 0..<count { done.wait() }
    }

    /// Threads racing in each round: the cores of the box, at least 2.
    static let racers = max(2, min(4, ProcessInfo.processInfo.activeProcessorCount))

    /// Four shards of one pool with `input.maxDevices: 1` take a new device each at the same
    /// moment, 1,500 times: never more than one is admitted (each shard read the total before
    /// another's increment, and all were).
    @Test(.timeLimit(.minutes(3))) func shardsAdmittingAtOnceNeverPassMaxDevices() async throws {
        let rig = try await DeviceShardTests.Rig()
        var overshoots = 0, rounds = 0
        for round in 0..<3000 {
            let pool = MonitorPool(context: Self.context(rig, maxDevices: 1, warnings: rig.warnings), snapshot: rig.snapshot, shardCount: 4)
            // A device for each shard (ids chosen by the pool's own hashing).
            var ids: [String?] = Array(repeating: nil, count: 4)
            var n = 0
            while ids.contains(where: { $0 == nil }) {
                let id = "r\(round)-\(n)"
                n += 1
                let shard = pool.shards.firstIndex { $0 === pool.shard(for: id) }!
                if ids[shard] == nil { ids[shard] = id }
            }
            let chosen = ids.map { $0! }
            Self.atOnce(Self.racers) { i in
                _ = pool.shards[i].handleNow(Self.newDevice(chosen[i]), receivedAt: 100, trackerID: nil, owntracks: nil)
            }
            let admitted = pool.deviceCount
            if admitted > 1 { overshoots += 1 }
            #expect(pool.shards[0].census.total.load(ordering: .relaxed) == admitted)
            for shard in pool.shards { shard.finish() }
            rounds += 1
            if round % 100 == 99 { await rig.committer.flush() }
        }
        print("shards admitting at once with maxDevices 1 (\(Self.racers) threads): \(overshoots) of \(rounds) rounds admitted more than one")
        #expect(overshoots == 0)
        await rig.close()
    }

    /// The sharpest order of the device-limit warning's race, 10,000 rounds: a shard refuses a new device at the
    /// limit (the flag goes up, then its warning) and another, the moment it sees the flag up,
    /// admits one after a device was forgotten (the flag goes down, then its warning). However
    /// the two interleave, the warning afterwards says what the flag says.
    @Test(.timeLimit(.minutes(3))) func aClearRightAfterARaiseLeavesTheWarningAsItsFlag() async throws {
        let rig = try await DeviceShardTests.Rig()
        var mismatches = 0, raced = 0
        let rounds = 10_000, perPool = 1_000
        for batch in 0..<(rounds / perPool) {
            let warnings = Warnings(logger: Logger(label: "race"))
            let pool = MonitorPool(context: Self.context(rig, maxDevices: 2, warnings: warnings), snapshot: rig.snapshot, shardCount: 2)
            let census = pool.shards[0].census
            for n in 0..<perPool {
                let round = batch * perPool + n
                // From a quiet start: the flag down and no warning, the gateway full.
                census.total.store(0, ordering: .relaxed)
                _ = pool.shards[1].handleNow(Self.newDevice("reset-\(round)"), receivedAt: 100, trackerID: nil, owntracks: nil)
                warnings.clear(ShardAdmission.limitWarning)
                census.total.store(2, ordering: .relaxed)
                let cleared = Atomic<Bool>(false)
                Self.atOnce(2) { i in
                    if i == 0 {
                        _ = pool.shards[0].handleNow(Self.newDevice("refused-\(round)"), receivedAt: 100, trackerID: nil, owntracks: nil)
                    } else {
                        var spins = 0
                        while !census.refusing.load(ordering: .relaxed), spins < 5_000_000 { spins += 1 }
                        guard census.refusing.load(ordering: .relaxed) else { return }
                        census.total.store(0, ordering: .relaxed)
                        _ = pool.shards[1].handleNow(Self.newDevice("admitted-\(round)"), receivedAt: 100, trackerID: nil, owntracks: nil)
                        cleared.store(true, ordering: .relaxed)
                    }
                }
                if cleared.load(ordering: .relaxed) { raced += 1 }
                let up = warnings.texts.contains { $0.contains("input.maxDevices") }
                if up != census.refusing.load(ordering: .relaxed) { mismatches += 1 }
            }
            for shard in pool.shards { shard.finish() }
            await rig.committer.flush()
        }
        print("a clear right after a raise: \(mismatches) of \(rounds) rounds (\(raced) raced) left the warning unlike its flag")
        #expect(raced > rounds / 2)
        #expect(mismatches == 0)
        await rig.close()
    }

    /// Shards refusing events and the pool's clock clearing the `event-rate-limited` warning at
    /// once, 5,000 rounds: afterwards the warning is up exactly when its time says so
    /// (`clearDue` not nil).
    @Test(.timeLimit(.minutes(3))) func theEventRateWarningFollowsItsTimeWhateverTheOrder() {
        var mismatches = 0
        for round in 0..<5000 {
            let warnings = Warnings(logger: Logger(label: "race"))
            let warning = DeviceShard.EventRateWarning(limit: 1, warnings: warnings)
            warning.refused(device: "old", now: 1, first: true)
            Self.atOnce(Self.racers) { i in
                if i % 2 == 0 {
                    warning.clearIfQuiet(now: 100)
                } else {
                    warning.refused(device: "d\(round)-\(i)", now: 90, first: false)
                }
            }
            let up = warnings.texts.contains { $0.contains("input.maxEventsPerDevice") }
            if up != (warning.clearDue != nil) { mismatches += 1 }
        }
        print("event-rate warning against its time after racing refusals and clearings: \(mismatches) of 5000 rounds disagreed")
        #expect(mismatches == 0)
    }

    /// One runtime fence changed 150 times while SIGHUP reloads (each rebuilds and saves) race
    /// the fences' own loop (which rebuilds and saves too), 100 rounds, the database refusing
    /// writes (`PRAGMA query_only`) while the changes come: once they stop and the database
    /// takes writes again, it holds the last version, never an older one given back by a
    /// failed save or written after it.
    @Test(.timeLimit(.minutes(3))) func aRuntimeFenceSavedFromTheLoopAndAReloadEndsAtItsLastVersion() async throws {
        var stale = 0
        let rounds = 100
        for round in 0..<rounds {
            let rig = try await RuntimeFenceBudgetTests.Rig(runtime: "{}")
            let client = try MQTTClient(MQTTConfiguration(port: 1, clientId: "gw-race-\(UUID().uuidString.prefix(8))"))
            let (_, adoptions) = AsyncStream.makeStream(of: EngineSnapshot.self)
            let fences = await RuntimeFences(setup: rig.setup, client: client, store: rig.store, warnings: rig.warnings,
                                             logger: Logger(label: "race"), adoptions: adoptions, rebuildInterval: 0)
            let loop = Task { try await fences.run() }
            let versions = 150
            let store = rig.store
            try await store.withConnection { try $0.execute("PRAGMA query_only = 1") }
            let changing = Task {
                for v in 1...versions {
                    await fences.queueChange(RuntimeFenceBudgetTests.message("jobs", "a", RuntimeFenceBudgetTests.feature(300 + v)))
                    if v % 3 == 0 { await Task.yield() }
                }
            }
            let reloading = Task {
                while !Task.isCancelled { await fences.reload(rig.setup) }
            }
            await changing.value
            reloading.cancel()
            await reloading.value
            try await store.withConnection { try $0.execute("PRAGMA query_only = 0") }
            await fences.reload(rig.setup)
            await fences.shutdown()
            try await loop.value
            let stored = try await rig.stored()["a"]
            if stored != 300 + versions { stale += 1 }
            if stored != 300 + versions { print("runtime fence race round \(round): stored \(stored.map(String.init) ?? "nothing"), last version \(300 + versions)") }
            await rig.store.close()
        }
        print("a runtime fence saved from the loop and from reloads, writes refused meanwhile: \(stale) of \(rounds) rounds ended with an older version stored")
        #expect(stale == 0, "\(stale) of \(rounds) rounds ended with an older version stored")
    }
}
