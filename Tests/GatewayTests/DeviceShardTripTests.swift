import Foundation
import GeotriggerCore
import Store
import Testing
import TestSupport
@testable import Gateway

/// A trip in its device's shard (`DeviceShard+Trips.swift`), with the rig of
/// ``DeviceShardTests``: a real shard, committer and store, no broker.
@Suite struct DeviceShardTripTests {
    /// A trip of `device` along the crossing's path (west to east along 34.45 N), `by` on the wall clock.
    static func trip(_ id: String, device: String, by: Double, snapshot: EngineSnapshot) throws -> TripRun {
        let payload = #"{"device":"\#(device)","route":{"type":"LineString","coordinates":[[-119.80,34.45],[-119.60,34.45]]},"by":"\#(iso8601(by, milliseconds: true))"}"#
        let request = try TripRequest.parse(
            Array(payload.utf8), id: id, topic: "p/trips/\(id)", snapshot: snapshot, maxVertices: 100, created: 1_800_000_000
        ).get()
        return TripRun(request)
    }

    /// A hibernated device is woken by its trip and stays in memory while the trip is open (its
    /// fixes decide the trip's events, committed with the journal); once the trip is cancelled
    /// the shard's clock lets it go again.
    @Test(.timeLimit(.minutes(5))) func aTripWakesItsHibernatedDeviceAndHoldsItInMemory() async throws {
        let rig = try await DeviceShardTests.Rig {
            $0.gateway.hibernateAfter = 60
            $0.gateway.forgetAfter = 600
        }
        let shard = rig.pool.shard(for: "truck")
        let running = Task { await shard.run() }
        func ask() async -> DeviceShard.QueryAnswer { await rig.ask(shard, about: "truck") }
        await rig.submit(Array(DeviceShardTests.Rig.crossing("truck").prefix(1)))  // received at gateway clock 100
        await rig.tick(shard, 170)
        #expect(await ask().hibernated == ["truck"], "hibernated")

        await shard.apply(.assign(try Self.trip("run", device: "truck", by: Date().timeIntervalSince1970 + 3600, snapshot: rig.snapshot)))
        #expect(await ask().states.count == 1, "woken by its trip")
        #expect(rig.counters.values().trips == GatewayCounters.Trips(pending: 1, onRoute: 0, offRoute: 0))
        await rig.tick(shard, 5000)
        #expect(await ask().states.count == 1, "held in memory past gateway.forgetAfter while its trip is open")

        let t = DeviceShardTests.t0 + 100
        await rig.submit([LocationUpdate(device: "truck", lat: 34.45, lon: -119.80, time: t),
                          LocationUpdate(device: "truck", lat: 34.45, lon: -119.799, time: t + 10)])
        let events = try await rig.store.events(JournalQuery(device: "truck"))
        #expect(events.map(\.event.type) == ["tripStarted"], "\(events.map(\.event.type))")
        #expect(events.first?.event.trigger == "trips")
        #expect(rig.counters.values().trips == GatewayCounters.Trips(pending: 0, onRoute: 1, offRoute: 0))

        await shard.apply(.cancel(id: "run", device: "truck", created: 1_800_000_000, clearProgress: true))
        #expect(rig.counters.values().trips.open == 0)
        await rig.tick(shard, 5001)
        let after = await ask()
        #expect(after.states.isEmpty && after.hibernated.isEmpty, "forgotten once its trip ended: \(after)")
        shard.finish()
        await running.value
        await rig.close()
    }

    /// A van reporting every 10 s for five minutes: its progress is published at every fix (10 s
    /// of fix time apart; at QoS 0 but at its first fix and its event), but its row is written with its event (`tripStarted`) and then once a
    /// minute of fix time, not with every progress (docs/trips.md "Restarts"): 6 writes, not 31.
    @Test func progressIsPublishedEvery10SecondsAndCommittedOncePerMinute() async throws {
        let rig = try await DeviceShardTests.Rig()
        var run = try Self.trip("run", device: "van", by: Date().timeIntervalSince1970 + 3600, snapshot: rig.snapshot)
        await rig.close()
        let emission = TripEmission(gatewayID: "gw", prefix: "p", qos: 1)
        var item: EventCommitter.Item?
        var committedAlong: [Double] = []
        let t = DeviceShardTests.t0
        for k in 0...30 {
            // 100 m east every 10 s (10 m/s) from the route's start.
            let fix = LocationUpdate(device: "van", lat: 34.45, lon: -119.80 + Double(k) * 100 / 91_900, time: t + Double(k) * 10, accuracy: 5)
            let events = run.progress.update(fix)
            let before = item?.trips.count ?? 0
            emission.emit(events, of: &run, wall: fix.time, into: &item)
            if (item?.trips.count ?? 0) > before, let along = run.committed?.along { committedAlong.append(along) }
        }
        let published = item?.retained.filter { $0.topic == "p/trips/run/progress" } ?? []
        #expect(published.count == 31)
        // The first fix's and tripStarted's progress at QoS 1, those between changes at QoS 0.
        #expect(published.map(\.atMostOnce) == [false, false] + Array(repeating: true, count: 29))
        #expect(committedAlong.count == 6, "\(committedAlong)")
        // The last write is at most a minute (600 m) behind.
        #expect(run.progress.figures.along - (committedAlong.last ?? 0) <= 600)
    }

    /// The progress payload is written straight to bytes (`TripEmission.progressPayload`): it
    /// must be what the progress JSON (the `trips` query's row) serializes to, in every state
    /// and with every figure present or absent: before any fix, pending, on the route, off it
    /// (a detour of 200 m), standing (no speed, then no ETA after 5 minutes), arrived.
    @Test func theProgressPayloadIsTheProgressJSON() async throws {
        let rig = try await DeviceShardTests.Rig()
        let t = DeviceShardTests.t0
        var run = try Self.trip("run-1", device: "van/é", by: t + 100_000, snapshot: rig.snapshot)
        await rig.close()
        let emission = TripEmission(gatewayID: "gw", prefix: "p", qos: 1)
        #expect(emission.progressPayload(run) == emission.progressJSON(run).serializedBytes())
        var fixes: [LocationUpdate] = []
        var time = t
        var lon = -119.8010
        func drive(_ count: Int, metres: Double, lat: Double = 34.45, every seconds: Double = 10) {
            for _ in 0..<count {
                time += seconds
                lon += metres / 91_900
                fixes.append(LocationUpdate(device: "van/é", lat: lat, lon: lon, time: time, accuracy: 5))
            }
        }
        drive(12, metres: 123.4)
        drive(8, metres: 97.3, lat: 34.452)  // 220 m north: off the route
        drive(8, metres: 101.1)
        drive(40, metres: 0, every: 10)  // standing: no speed, then no ETA
        drive(600, metres: 41.3, every: 3.7)
        var states: Set<String> = []
        var item: EventCommitter.Item?
        for fix in fixes {
            let events = run.progress.update(fix)
            let before = item?.retained.count ?? 0
            emission.emit(events, of: &run, wall: fix.time, into: &item)
            guard let published = item?.retained.last, (item?.retained.count ?? 0) > before else { continue }
            #expect(published.topic == "p/trips/run-1/progress")
            let json = emission.progressJSON(run)
            #expect(published.payload == json.serializedBytes(), "\(json.serialized())")
            if case .object(let object) = json, case .string(let state)? = object["state"] { states.insert(state) }
            if run.progress.state.isFinal { break }
        }
        #expect(states == ["pending", "onRoute", "offRoute", "arrived"], "\(states)")
    }

    /// `by` passed on the wall clock: the shard's tick decides `missed`, for a device it has
    /// never seen too, once; the trip leaves the shard.
    @Test(.timeLimit(.minutes(5))) func theShardsTickMissesATripPastItsDeadline() async throws {
        let rig = try await DeviceShardTests.Rig()
        let shard = rig.pool.shard(for: "van")
        let running = Task { await shard.run() }
        let by = Date().timeIntervalSince1970 - 1
        await shard.apply(.assign(try Self.trip("gone", device: "van", by: by, snapshot: rig.snapshot)))
        #expect(shard.tickDue <= MonotonicClock.now() + 1, "a tick is due at once for a passed deadline")
        await rig.tick(shard, 10)
        await rig.tick(shard, 11)
        let events = try await rig.store.events(JournalQuery(device: "van"))
        #expect(events.map(\.event.type) == ["missed"])
        #expect(events.first.map { abs($0.event.fixTime - (by * 1000).rounded() / 1000) < 0.001 } == true)
        #expect(rig.counters.values().trips.open == 0)
        let answer = await withCheckedContinuation { c in Task { await shard.mailbox.send(.query(.trips(device: nil), c)) } }
        #expect(answer.trips.isEmpty)
        shard.finish()
        await running.value
        await rig.close()
    }
}
