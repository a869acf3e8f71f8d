import Foundation
import GeotriggerCore
import Store
import Testing
import TestSupport
@testable import Gateway

/// A real ``DeviceShard`` and a real ``MonitorPool`` in front of a real ``EventCommitter`` and
/// ``GatewayStore`` in a temporary directory; no broker (the state publisher has no client and
/// the committer no outbox publisher: the outbox rows stay in the database). Devices cross one
/// square fence; the tests read what was committed.
@Suite struct DeviceShardTests {
    /// The fence: about 2 km square around (34.45, -119.70).
    static let fences = #"{"type":"FeatureCollection","features":[{"type":"Feature","id":"square","properties":{},"geometry":{"type":"Polygon","coordinates":[[[-119.71,34.44],[-119.69,34.44],[-119.69,34.46],[-119.71,34.46],[-119.71,34.44]]]}}]}"#
    static let t0 = 1_790_000_000.0

    /// The store, the committer and a pool (one shard) with everything the shards report to.
    final class Rig: Sendable {
        let directory: TemporaryDirectory
        let store: GatewayStore
        let counters = GatewayCounters()
        let warnings: Warnings
        let committer: EventCommitter
        let context: ServeContext
        let snapshot: EngineSnapshot
        let pool: MonitorPool

        /// `hold`: the trigger's `enterAfter` and `exitAfter` (seconds of fix time).
        init(hold: Double = 0, _ configure: (inout GatewayConfig) -> Void = { _ in }) async throws {
            directory = try TemporaryDirectory(prefix: "device-shard")
            var config = GatewayConfig()
            config.gateway.database = directory.file("gw.db")
            configure(&config)
            let logger = Logger(label: "device-shard-test")
            warnings = Warnings(logger: logger)
            store = try await GatewayStore(path: config.gateway.database)
            let statePublisher = StatePublisher(client: nil, prefix: config.output.prefix, logger: logger)
            committer = EventCommitter(store: store, counters: counters, warnings: warnings, logger: logger, publishers: [:],
                                       statePublisher: statePublisher)
            context = ServeContext(
                config: config, counters: counters, warnings: warnings, logger: logger, store: store, committer: committer,
                statePublisher: statePublisher,
                eventBuilder: EventBuilder(gatewayID: config.gateway.id, prefix: config.output.prefix, qos: 1, owntracksTransitions: false))
            let layer = FenceLayerParser.parse(Array(DeviceShardTests.fences.utf8), file: "zones.geojson", layer: "zones")
            #expect(layer.errors.isEmpty)
            snapshot = try EngineSnapshot(
                layers: [layer.layer],
                configTriggers: .array([.object(["name": .string("zone"), "fences": .array([.string("zones")]),
                                                 "enterAfter": .number(hold), "exitAfter": .number(hold)])]))
            pool = MonitorPool(context: context, snapshot: snapshot, shardCount: 1)
        }

        /// Outside (west), inside, outside (east): one enter, one exit.
        static func crossing(_ device: String, from start: Double = DeviceShardTests.t0) -> [LocationUpdate] {
            [LocationUpdate(device: device, lat: 34.45, lon: -119.80, time: start),
             LocationUpdate(device: device, lat: 34.45, lon: -119.70, time: start + 10),
             LocationUpdate(device: device, lat: 34.45, lon: -119.60, time: start + 20)]
        }

        /// Hands `updates` to the pool (received at gateway-clock 100, 101, ...) and waits until
        /// all is committed.
        func submit(_ updates: [LocationUpdate], userLevel: Int = 0) async {
            for (index, update) in updates.enumerated() {
                await pool.submit(update, receivedAt: 100 + Double(index), userLevel: userLevel)
            }
            await committer.flush()
        }

        /// The committed events of `device`, by type.
        func events(_ device: String) async throws -> [String] {
            try await store.events(JournalQuery(device: device)).map(\.event.type)
        }

        func state(_ device: String) async throws -> [UInt8]? { try await store.deviceState(device) }

        func dropped(_ reason: DropReason) -> Int { counters.values().dropped[reason] ?? 0 }

        /// Runs the shard's tick at gateway clock `now`, waits until it has run and its items
        /// are committed.
        func tick(_ shard: DeviceShard, _ now: Double) async {
            await shard.mailbox.send(.tick(now))
            await withCheckedContinuation { c in Task { await shard.mailbox.send(.barrier(c)) } }
            await committer.flush()
        }

        /// What the shard answers about `device` (in memory, hibernated).
        func ask(_ shard: DeviceShard, about device: String) async -> DeviceShard.QueryAnswer {
            await withCheckedContinuation { c in Task { await shard.mailbox.send(.query(.device(device), c)) } }
        }

        /// The fix times of `device`'s recent track, as the shard answers the `track` query (nil:
        /// the shard does not know the device).
        func track(_ shard: DeviceShard, of device: String) async -> [Double]? {
            let answer = await withCheckedContinuation { c in
                Task { await shard.mailbox.send(.query(.track(device: device, since: nil, offset: 0, limit: 10_000), c)) }
            }
            return answer.track.map { $0.positions.map(\.time) }
        }

        func close() async {
            await committer.shutdown()
            await store.close()
        }
    }

    @Test func aDeviceCrossingAFenceCommitsItsEnterExitAndState() async throws {
        let rig = try await Rig()
        await rig.submit(Rig.crossing("truck"))
        let committed = try await rig.store.events(JournalQuery(device: "truck"))
        #expect(committed.map(\.event.type) == ["enter", "exit"])
        #expect(committed.allSatisfy { $0.event.trigger == "zone" && $0.event.layer == "zones" && $0.event.fence == "square" })
        #expect(committed.first.map { abs($0.event.fixTime - (Self.t0 + 10)) < 0.01 } == true, "\(committed)")
        // The first update wrote the state (the trigger met the truck); the enter and the exit
        // are told by their journal rows alone, and the state takes them when folded.
        let written = try #require(try await rig.state("truck"))
        #expect(try DeviceMonitor.restore(from: written, snapshot: rig.snapshot, now: 200).monitor.lastFixTime == Self.t0)
        await rig.store.setStateFold(JournalFold.fold)
        #expect(try await rig.store.foldJournal() == (events: 2, devices: 1))
        let state = try #require(try await rig.state("truck"))
        let (monitor, _) = try DeviceMonitor.restore(from: state, snapshot: rig.snapshot, now: 200)
        #expect(monitor.stays.isEmpty, "out again")
        #expect(monitor.lastFixTime == Self.t0 + 20)
        #expect(rig.counters.accepted.load(ordering: .relaxed) == 3)
        #expect(rig.pool.deviceCount == 1)
        await rig.close()
    }

    /// A device parked on the fence's edge with `enterAfter`/`exitAfter` 30: each fix starts or
    /// cancels a hold and decides nothing, so nothing is written (docs/configuration.md "Durability"); the
    /// decision that finally comes is committed with the state, and a stop saves the hold
    /// still running.
    @Test func holdsStartedAndCancelledWriteNothingUntilADecision() async throws {
        let rig = try await Rig(hold: 30)
        let outside = { (t: Double) in LocationUpdate(device: "parked", lat: 34.45, lon: -119.7101, time: Self.t0 + t) }
        let inside = { (t: Double) in LocationUpdate(device: "parked", lat: 34.45, lon: -119.7099, time: Self.t0 + t) }
        // The first fix: the trigger now knows the device, a decision of its own.
        await rig.submit([outside(0)])
        let known = await rig.store.statistics.transactions
        #expect(try await rig.state("parked") != nil)
        // Jitter across the edge: 20 fixes, 5 s apart, each starting or cancelling an enter.
        await rig.submit((1...20).map { $0 % 2 == 1 ? inside(Double($0) * 5) : outside(Double($0) * 5) })
        #expect(await rig.store.statistics.transactions == known, "a hold started or cancelled wrote to the database")
        // It stays inside for 30 s of fix time: the enter, with its state, in one commit.
        await rig.submit([inside(110), inside(125), inside(141)])
        #expect(try await rig.events("parked") == ["enter"])
        #expect(await rig.store.statistics.transactions == known + 1)
        // An exit hold begins; the stop saves it with the last position.
        await rig.submit([outside(150)])
        #expect(await rig.store.statistics.transactions == known + 1)
        let shard = rig.pool.shard(for: "parked")
        let running = Task { await shard.run() }
        await rig.pool.shutdown()
        await running.value
        await rig.committer.flush()
        let (monitor, _) = try DeviceMonitor.restore(from: try #require(try await rig.state("parked")), snapshot: rig.snapshot, now: 300)
        #expect(monitor.lastFixTime == Self.t0 + 150)
        #expect(monitor.pendingCount == 1, "the exit hold was saved at the stop")
        await rig.close()
    }

    /// The shard's clock wakes only for what is due (docs/operations.md
    /// "Deploying on a Raspberry Pi": an idle gateway sleeps): a hold ended by silence, then nothing until the device would hibernate.
    @Test func aShardsTickIsDueOnlyWhenADeviceNeedsOne() async throws {
        let rig = try await Rig(hold: 30) {
            $0.output.stateInterval = 1_000
            $0.gateway.hibernateAfter = 600
        }
        let shard = rig.pool.shard(for: "parked")
        let running = Task { await shard.run() }
        // Outside at gateway clock 100, inside at 101: the enter's hold ends by silence at 131.
        await rig.submit([LocationUpdate(device: "parked", lat: 34.45, lon: -119.80, time: Self.t0),
                          LocationUpdate(device: "parked", lat: 34.45, lon: -119.70, time: Self.t0 + 10)])
        #expect(shard.tickDue == 131)
        await rig.tick(shard, 131)
        #expect(try await rig.events("parked") == ["enter"])
        // Nothing more is due until the device would hibernate, 600 s after its last update.
        #expect(shard.tickDue == 701)
        await rig.tick(shard, 701)
        #expect(shard.tickDue == .infinity || shard.tickDue > 100_000, "hibernated: only its forgetting is due")
        shard.finish()
        await running.value
        await rig.close()
    }

    /// The shard on its own: an update of a new device is handled on the calling thread.
    @Test func aShardHandlesANewDevicesUpdatesOnTheCallingThread() async throws {
        let rig = try await Rig()
        let census = DeviceShard.Census(limit: 10)
        let shard = DeviceShard(context: rig.context, snapshot: rig.snapshot, capacity: 8, census: census,
                                eventRate: DeviceShard.EventRateWarning(limit: 100, warnings: rig.warnings))
        for (index, update) in Rig.crossing("bike").enumerated() {
            guard case .handled(mustWait: false) = shard.handleNow(update, receivedAt: 100 + Double(index), trackerID: nil, owntracks: nil)
            else { Issue.record("update \(index) not handled at once"); continue }
        }
        #expect(shard.mailbox.count == 0)
        #expect(census.total.load(ordering: .relaxed) == 1 && shard.deviceCount.load(ordering: .relaxed) == 1)
        await rig.committer.flush()
        #expect(try await rig.events("bike") == ["enter", "exit"])
        #expect(try await rig.state("bike") != nil)
        shard.finish()
        guard case .stopped = shard.handleNow(Rig.crossing("bike", from: Self.t0 + 100)[0], receivedAt: 200, trackerID: nil, owntracks: nil)
        else { Issue.record("a finished shard takes no update"); return }
        await rig.close()
    }

    /// The same crossing by a device past `input.maxDevices`: nothing committed.
    @Test func aDeviceRefusedAtMaxDevicesCommitsNothing() async throws {
        let rig = try await Rig { $0.input.maxDevices = 1 }
        await rig.submit([LocationUpdate(device: "first", lat: 0, lon: 0, time: Self.t0)])
        await rig.submit(Rig.crossing("second"))
        #expect(try await rig.events("second") == [])
        #expect(try await rig.state("second") == nil)
        #expect(rig.dropped(.tooManyDevices) == 3)
        #expect(rig.counters.accepted.load(ordering: .relaxed) == 1)
        #expect(rig.warnings.texts.contains { $0.contains("input.maxDevices") }, "\(rig.warnings.texts)")
        // The device admitted first still crosses.
        await rig.submit(Rig.crossing("first", from: Self.t0 + 100))
        #expect(try await rig.events("first") == ["enter", "exit"])
        await rig.close()
    }

    /// `input.maxDevicesPerUser` refuses one user's next device, not another user's.
    @Test func aUsersDevicePastMaxDevicesPerUserCommitsNothing() async throws {
        let rig = try await Rig { $0.input.maxDevicesPerUser = 1 }
        await rig.submit(Rig.crossing("alice/phone"), userLevel: 1)
        await rig.submit(Rig.crossing("alice/watch"), userLevel: 1)
        await rig.submit(Rig.crossing("bob/phone"), userLevel: 1)
        #expect(try await rig.events("alice/phone") == ["enter", "exit"])
        #expect(try await rig.events("alice/watch") == [])
        #expect(try await rig.state("alice/watch") == nil)
        #expect(try await rig.events("bob/phone") == ["enter", "exit"])
        #expect(rig.dropped(.tooManyDevices) == 3)
        #expect(rig.warnings.texts.contains { $0.contains("user alice") }, "\(rig.warnings.texts)")
        await rig.close()
    }

    /// Past `input.maxEventsPerDevice` the exit is counted, not journaled; the state still
    /// tells the device is out.
    @Test func eventsPastMaxEventsPerDeviceAreCountedNotCommitted() async throws {
        let rig = try await Rig { $0.input.maxEventsPerDevice = 1 }
        await rig.submit(Rig.crossing("truck"))
        #expect(try await rig.events("truck") == ["enter"])
        #expect(rig.counters.eventRateLimited.load(ordering: .relaxed) == 1)
        #expect(rig.warnings.texts.contains { $0.contains("input.maxEventsPerDevice") }, "\(rig.warnings.texts)")
        let state = try #require(try await rig.state("truck"))
        #expect(try DeviceMonitor.restore(from: state, snapshot: rig.snapshot, now: 200).0.stays.isEmpty)
        await rig.close()
    }

    /// `output.stateInterval`: positions held back by the interval are published by the first
    /// tick once it ends, and by the tick that hibernates the device if that comes first; the
    /// retained state ends at the last accepted position.
    @Test(.timeLimit(.minutes(5)), arguments: [600.0, 5.0])
    func aTickPublishesAHeldBackPosition(hibernateAfter: Double) async throws {
        let rig = try await Rig {
            $0.output.stateInterval = 10
            $0.gateway.hibernateAfter = hibernateAfter
        }
        let shard = rig.pool.shard(for: "walker")
        let running = Task { await shard.run() }
        func tick(_ now: Double) async { await rig.tick(shard, now) }
        func ask() async -> DeviceShard.QueryAnswer { await rig.ask(shard, about: "walker") }
        func retainedFixTime() -> String? {
            guard let payload = rig.context.statePublisher.payload(of: rig.context.statePublisher.topic("walker")),
                  let state = try? JSONReader.parse(payload, file: "state", dialect: .json).value.objectValue
            else { return nil }
            return state["position"]?.objectValue?["time"]?.stringValue
        }
        // Outside the fence, received at gateway clock 100, 101, 102: the first is published.
        await rig.submit((0..<3).map { LocationUpdate(device: "walker", lat: 34.45, lon: -119.80 - 0.001 * Double($0), time: Self.t0 + Double($0)) })
        #expect(retainedFixTime() == ISO8601Time.format(Self.t0), "published at once, the next two held back")
        if hibernateAfter > 10 {
            await tick(109.9)
            #expect(retainedFixTime() == ISO8601Time.format(Self.t0), "within the interval")
            await tick(110)
            #expect(await ask().states.count == 1, "in memory")
        } else {
            await tick(106.9)
            #expect(retainedFixTime() == ISO8601Time.format(Self.t0), "within the interval, in memory")
            await tick(107)
            #expect(await ask().hibernated == ["walker"], "hibernated")
        }
        #expect(retainedFixTime() == ISO8601Time.format(Self.t0 + 2), "the last accepted position")
        shard.finish()
        await running.value
        await rig.close()
    }

    /// The shard's clock: idle past `gateway.hibernateAfter` the monitor leaves memory (its
    /// next update goes through the mailbox), past `gateway.forgetAfter` its state leaves the
    /// database.
    @Test(.timeLimit(.minutes(5))) func ticksHibernateThenForgetAnIdleDevice() async throws {
        let rig = try await Rig {
            $0.gateway.hibernateAfter = 60
            $0.gateway.forgetAfter = 600
        }
        let shard = rig.pool.shard(for: "truck")
        let running = Task { await shard.run() }
        func tick(_ now: Double) async { await rig.tick(shard, now) }
        func ask() async -> DeviceShard.QueryAnswer { await rig.ask(shard, about: "truck") }
        await rig.submit(Rig.crossing("truck"))  // last received at gateway clock 102
        await tick(161)
        #expect(await ask().states.count == 1, "in memory before hibernateAfter")
        // Back 59.5 s later, outside: its position changes, its state does not.
        guard case .handled = shard.handleNow(Rig.crossing("truck", from: Self.t0 + 100)[0], receivedAt: 161.5, trackerID: nil, owntracks: nil)
        else { Issue.record("still in memory before hibernateAfter"); return }
        await rig.committer.flush()
        await tick(221.4)
        #expect(await ask().states.count == 1, "still in memory")
        await tick(221.5)
        let hibernated = await ask()
        #expect(hibernated.states.isEmpty && hibernated.hibernated == ["truck"], "\(hibernated)")
        #expect(shard.lastReports() == ["truck": 161.5], "its last report kept")
        let saved = try #require(try await rig.state("truck"))
        #expect(try DeviceMonitor.restore(from: saved, snapshot: rig.snapshot, now: 300).0.lastFixTime == Self.t0 + 100,
                "the position accepted since the last saved state is saved at hibernation")
        await tick(761.4)
        #expect(try await rig.state("truck") != nil)
        await tick(761.5)
        let forgotten = await ask()
        #expect(forgotten.states.isEmpty && forgotten.hibernated.isEmpty)
        #expect(shard.lastReports().isEmpty)
        #expect(try await rig.state("truck") == nil, "forgotten")
        #expect(rig.pool.deviceCount == 0)
        shard.finish()
        await running.value
        await rig.close()
    }

    /// A walk of `seconds` s from `start`, a fix every 2 s, 10 m east every 2 s (4 m accuracy).
    static func walk(_ device: String, from start: Double, seconds: Int = 60) -> [LocationUpdate] {
        stride(from: 0, through: seconds, by: 2).map {
            LocationUpdate(device: device, lat: 34.45, lon: -119.80 + Double($0) * 5 / 91_900, time: start + Double($0), accuracy: 4)
        }
    }

    /// The recent track (DeviceShard+Track.swift): every accepted fix is offered to it, one per
    /// 10 s of fix time is kept; hibernation keeps it, waking brings it back and it grows on;
    /// forgetting the device drops it.
    @Test(.timeLimit(.minutes(5))) func acceptedFixesLandInTheTrackThinnedAndSurviveHibernation() async throws {
        let rig = try await Rig {
            $0.gateway.hibernateAfter = 60
            $0.gateway.forgetAfter = 600
        }
        let shard = rig.pool.shard(for: "walker")
        let running = Task { await shard.run() }
        // Fix times an hour ago: the query keeps the last 24 hours of the wall clock.
        let start = (WallClock.now() - 3600).rounded(.down)
        await rig.submit(Self.walk("walker", from: start))  // received at gateway clock 100...130
        #expect(await rig.track(shard, of: "walker") == [0, 10, 20, 30, 40, 50, 60].map { start + $0 })
        #expect(await rig.track(shard, of: "stranger") == nil, "an unknown device has no track")
        await rig.tick(shard, 191)
        #expect(await rig.ask(shard, about: "walker").hibernated == ["walker"], "hibernated")
        #expect(await rig.track(shard, of: "walker") == [0, 10, 20, 30, 40, 50, 60].map { start + $0 }, "kept through hibernation")
        // Back 100 s later (woken through the mailbox): the track goes on from where it was.
        await rig.submit(Self.walk("walker", from: start + 100, seconds: 12))
        #expect(await rig.ask(shard, about: "walker").states.count == 1, "awake")
        #expect(await rig.track(shard, of: "walker") == [0, 10, 20, 30, 40, 50, 60, 100, 110].map { start + $0 })
        await rig.tick(shard, 200)
        await rig.tick(shard, 1000)  // hibernated, then forgotten
        #expect(await rig.track(shard, of: "walker") == nil, "forgotten with its track")
        shard.finish()
        await running.value
        await rig.close()
    }

    /// `output.trackMemory`: past its budget the shard drops the oldest chunk among its devices'
    /// tracks; 0 keeps none.
    @Test(.timeLimit(.minutes(5))) func pastTrackMemoryTheOldestChunkGoes() async throws {
        var two = RecentTrack()
        two.record(Coordinate(lat: 34.45, lon: -119.80), time: 0, accuracy: nil)
        two.record(Coordinate(lat: 34.45, lon: -119.79), time: 10, accuracy: nil)
        let start = (WallClock.now() - 3600).rounded(.down)
        // Room for one device's two positions and another's one, not two each.
        // Updates are received at gateway clock 100, 101, ... and the shard's ticks read the real
        // one: a tick under a loaded suite would hibernate both devices mid-test.
        let rig = try await Rig {
            $0.output.trackMemory = 2 * two.bytes - 1
            $0.gateway.hibernateAfter = 1e9
        }
        let shard = rig.pool.shard(for: "first")
        let running = Task { await shard.run() }
        await rig.submit(Self.walk("first", from: start, seconds: 10))
        await rig.submit(Self.walk("second", from: start + 20, seconds: 10))
        // The shard takes the updates on its own task: under load the question may come first.
        #expect(await poll { await rig.track(shard, of: "second") == [start + 20, start + 30] })
        #expect(await rig.track(shard, of: "first") == [], "the oldest chunk went")
        shard.finish()
        await running.value
        await rig.close()

        let off = try await Rig { $0.output.trackMemory = 0 }
        let offShard = off.pool.shard(for: "first")
        let offRunning = Task { await offShard.run() }
        await off.submit(Self.walk("first", from: start, seconds: 10))
        #expect(await off.track(offShard, of: "first") == [], "trackMemory 0: no track kept")
        offShard.finish()
        await offRunning.value
        await off.close()
    }
}
