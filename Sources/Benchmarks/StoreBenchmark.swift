import Gateway
import FoundationEssentials
import GeotriggerCore
import Store
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench store`: what persistence costs. The same deterministic drive goes through
/// the gateway's own monitors (``MonitorPool``, one shard per core), once with persistence off
/// (the monitors' results counted and dropped: ``Discarding``) and once on (``EventCommitter``
/// on a real SQLite file in WAL mode, group commit, plus the outbox deletions a broker's
/// acknowledgements cause in `serve`: ``Acknowledger``), alternating, in one process.
enum StoreBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "store", summary: "updates per second with persistence on versus off, events committed per second",
        help: help, run: { try await run($0) })

    static let help = """
        Usage: geotrigger bench store [--fences DIR] [--devices N] [--updates N] [--dwell N]
                                      [--rounds N] [--durability normal|full] [--directory DIR]

        Updates per second through the gateway's monitors with persistence off (their results
        counted and dropped) and on (SQLite file, WAL, group commit; state, journal and outbox in
        one transaction per batch; outbox streams settled as the broker's acknowledgements would), in the
        same run, alternating off/on for --rounds rounds; events committed per second, SQLite
        transactions, CPU seconds and peak RSS. MQTT is not involved (no JSON decoding either).

        The drive: N devices jumping between points inside the fences of DIR (and outside
        them), staying 1 to 2*dwell-1 updates on each, so most jumps cross fences.

        Options:
          --fences DIR       fence folder (default fences)
          --devices N        devices (default 1000)
          --updates N        updates per device (default 100)
          --dwell N          mean updates per stay (default 4; smaller: more events)
          --rounds N         off/on pairs (default 2; the best of each is compared, and
                             each round's pair, which ran back to back)
          --durability M     normal (default) or full (synchronous=FULL)
          --directory DIR    where the database files go (default /tmp)
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    struct Figures {
        var seconds: Double
        var cpuSeconds: Double
        var updates: Int
        var events: Int
        var transactions: Int
        var updatesPerSecond: Double { Double(updates) / seconds }
        var eventsPerSecond: Double { Double(events) / seconds }
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["fences", "devices", "updates", "dwell", "rounds", "durability", "directory"], flags: [])
        let folder = args["fences"] ?? "fences"
        let deviceCount = Int(try args.number("devices") ?? 1000)
        let updatesPerDevice = Int(try args.number("updates") ?? 100)
        let dwell = Int(try args.number("dwell") ?? 4)
        let rounds = Int(try args.number("rounds") ?? 2)
        let directory = args["directory"] ?? "/tmp"
        guard deviceCount > 0, updatesPerDevice > 0, dwell > 0, rounds > 0 else {
            throw UsageError("--devices, --updates, --dwell and --rounds must be positive")
        }
        let durability: StoreDurability
        switch args["durability"] ?? "normal" {
        case "normal": durability = .normal
        case "full": durability = .full
        case let other: throw UsageError("--durability: expected normal or full, got '\(other)'")
        }
        #if DEBUG
        print("warning: debug build; figures are far below a release build (swift build -c release)")
        #endif

        let (layers, errors) = FenceFolder.load(folder)
        if let first = errors.first { throw UsageError("--fences \(folder): \(first)") }
        guard !layers.isEmpty else { throw UsageError("--fences \(folder): no fence layers") }
        let snapshot: EngineSnapshot
        do { snapshot = try EngineSnapshot(layers: layers, configTriggers: nil) } catch {
            throw UsageError("--fences \(folder): \(error)")
        }
        let drive = makeDrive(layers: layers, devices: deviceCount, updates: updatesPerDevice, dwell: dwell)
        let shards = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))
        print("bench store: \(deviceCount) devices x \(updatesPerDevice) updates = \(IndexBenchmark.grouped(drive.count)) updates, "
              + "\(layers.reduce(0) { $0 + $1.fenceCount }) fences in \(layers.count) layers, \(shards) shards, mean stay \(dwell) updates, "
              + "durability \(durability.rawValue)")

        var best: [Bool: Figures] = [:]
        var pairs: [Double] = []  // each round's on/off: the two runs back to back see the same machine
        var lastOff: Double?
        for round in 1...rounds {
            for persist in [false, true] {
                let path = "\(directory)/geotrigger-bench-store-\(getpid())-\(round)-\(persist ? "on" : "off").db"
                defer { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
                let figures = try await measure(drive, snapshot: snapshot, shards: shards, persist: persist, path: path, durability: durability)
                print("  round \(round) persistence \(persist ? "on " : "off"): \(IndexBenchmark.grouped(Int(figures.updatesPerSecond))) updates/s, "
                      + "\(IndexBenchmark.grouped(figures.events)) events (\(IndexBenchmark.grouped(Int(figures.eventsPerSecond))) events/s"
                      + (persist ? " committed in \(IndexBenchmark.grouped(figures.transactions)) transactions" : "") + "), "
                      + "\(IndexBenchmark.format(figures.seconds, 2)) s wall, \(IndexBenchmark.format(figures.cpuSeconds, 2)) s CPU, "
                      + "RSS \(IndexBenchmark.megabytes(ResourceUsage.residentBytes()))")
                if best[persist].map({ figures.updatesPerSecond > $0.updatesPerSecond }) ?? true { best[persist] = figures }
                if persist, let off = lastOff { pairs.append(figures.updatesPerSecond / off) }
                if !persist { lastOff = figures.updatesPerSecond }
            }
        }
        let off = best[false]!, on = best[true]!
        let ratio = on.updatesPerSecond / off.updatesPerSecond
        print("best: off \(IndexBenchmark.grouped(Int(off.updatesPerSecond))) updates/s, on \(IndexBenchmark.grouped(Int(on.updatesPerSecond))) updates/s: "
              + "on/off = \(IndexBenchmark.format(ratio, 3)), persistence costs \(IndexBenchmark.format((1 - ratio) * 100, 1)) % of throughput (target <= 20 %); "
              + "\(IndexBenchmark.grouped(Int(on.eventsPerSecond))) events committed/s; "
              + "CPU per update off \(IndexBenchmark.format(off.cpuSeconds / Double(off.updates) * 1e6, 2)) us, on \(IndexBenchmark.format(on.cpuSeconds / Double(on.updates) * 1e6, 2)) us")
        let sorted = pairs.sorted()
        print("per round on/off: \(pairs.map { IndexBenchmark.format($0, 3) }.joined(separator: ", ")) "
              + "(median \(IndexBenchmark.format((sorted[(sorted.count - 1) / 2] + sorted[sorted.count / 2]) / 2, 3)))")
        print("peak RSS \(IndexBenchmark.megabytes(ResourceUsage.peakResidentBytes()))")
        return ExitStatus.ok
    }

    /// Drives every update through a fresh pool (and committer, with `persist`); returns when
    /// all is committed.
    static func measure(_ drive: [LocationUpdate], snapshot: EngineSnapshot, shards: Int, persist: Bool, path: String,
                        durability: StoreDurability) async throws -> Figures {
        var config = GatewayConfig()
        config.gateway.database = path
        let logger = Logger(label: "bench")
        let counters = GatewayCounters()
        let warnings = Warnings(logger: logger)
        let store = try await GatewayStore(path: path, options: GatewayStore.Options(durability: durability))
        let statePublisher = StatePublisher(client: nil, prefix: config.output.prefix, logger: logger)
        let acknowledger = Acknowledger()
        let committer = EventCommitter(
            store: store, counters: counters, warnings: warnings, logger: logger,
            publishers: Dictionary(uniqueKeysWithValues: OutboxDestination.allCases.map { ($0, acknowledger.outbox($0)) }),
            statePublisher: statePublisher)
        let discarding = Discarding()
        let context = ServeContext(
            config: config, counters: counters, warnings: warnings, logger: logger, store: store,
            committer: persist ? committer : discarding, statePublisher: statePublisher,
            eventBuilder: EventBuilder(gatewayID: config.gateway.id, prefix: config.output.prefix, qos: 1, owntracksTransitions: false))
        let pool = MonitorPool(context: context, snapshot: snapshot, shardCount: shards)

        let startWall = ResourceUsage.now(), startCPU = ResourceUsage.cpuSeconds()
        let figures: Figures = await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await committer.run() }
            group.addTask { try? await pool.run() }
            group.addTask { await acknowledger.run(store) }
            let now = MonotonicClock.now()
            for update in drive { await pool.submit(update, receivedAt: now) }
            await pool.barrier()
            await committer.flush()
            let seconds = ResourceUsage.now() - startWall
            let cpu = ResourceUsage.cpuSeconds() - startCPU
            await pool.shutdown()
            await committer.shutdown()
            acknowledger.finish()
            await group.waitForAll()
            let events = persist ? counters.events.load(ordering: .relaxed) : discarding.events.load(ordering: .relaxed)
            return Figures(seconds: seconds, cpuSeconds: cpu, updates: drive.count, events: events, transactions: 0)
        }
        var result = figures
        if persist {
            let statistics = await store.statistics
            result.events = statistics.events
            result.transactions = statistics.transactions
        }
        await store.close()
        return result
    }

    /// The monitors' output with persistence off: counts the events a commit would take.
    final class Discarding: StepSink {
        let events = Atomic<Int>(0)
        func enqueue(_ item: EventCommitter.Item, inBurst: Bool) -> Bool {
            events.add(item.events.count, ordering: .relaxed)
            return false
        }
        func waitForRoom() async {}
        func waitForRoomBlocking() {}
    }

    /// The broker's part with persistence on: what `serve`'s outbox publishers commit once the
    /// broker acknowledges the committed messages (their outbox rows deleted, their streams
    /// settled), a batch of commits at a time.
    final class Acknowledger: Sendable {
        struct Outbox: CommittedOutbox {
            let destination: OutboxDestination
            let committed: BoundedQueue<StoreBatch>
            func deliverFresh(rows: [OutboxRow]) {
                var acknowledged = StoreBatch()
                for row in rows {
                    switch row.source {
                    case .table: acknowledged.acknowledge(destination, sequence: row.sequence)
                    case .journal: acknowledged.settle(destination, through: row.sequence)
                    }
                }
                _ = committed.trySend(acknowledged)
            }
            func publishVolatile(_ messages: [OutboxMessage]) {}
        }

        private let committed = BoundedQueue<StoreBatch>(capacity: 100_000)

        func outbox(_ destination: OutboxDestination) -> Outbox { Outbox(destination: destination, committed: committed) }

        func run(_ store: GatewayStore) async {
            while let first = await committed.next() {
                var acknowledged = [first]
                committed.drain(upTo: 4096, into: &acknowledged)
                var batch = StoreBatch()
                for commit in acknowledged {
                    batch.acknowledgements += commit.acknowledgements
                    for (destination, sequence) in commit.settled { batch.settle(destination, through: sequence) }
                }
                _ = try? await store.commit(batch)
            }
        }

        func finish() { committed.finish() }
    }

    /// Devices jumping between points inside the layers' fences and a few outside, in rounds
    /// of one update per device (fix times one second apart per device).
    static func makeDrive(layers: [FenceLayer], devices: Int, updates: Int, dwell: Int) -> [LocationUpdate] {
        var spots: [Coordinate] = []
        var bounds = (minLat: 90.0, maxLat: -90.0, minLon: 180.0, maxLon: -180.0)
        for layer in layers {
            for fence in layer.fences {
                let points: [Coordinate]
                switch fence.geometry {
                case .polygons(let polygons): points = polygons.first.map { Array($0.exterior.dropLast()) } ?? []
                case .points(let ps): points = ps
                case .lines(let lines): points = lines.first ?? []
                }
                guard !points.isEmpty else { continue }
                for p in points {
                    bounds = (min(bounds.minLat, p.lat), max(bounds.maxLat, p.lat), min(bounds.minLon, p.lon), max(bounds.maxLon, p.lon))
                }
                // The vertex average (inside a convex polygon; on a point or line: the first vertex).
                if case .polygons = fence.geometry {
                    let lat = points.reduce(0) { $0 + $1.lat } / Double(points.count)
                    let lon = points.reduce(0) { $0 + $1.lon } / Double(points.count)
                    spots.append(Coordinate(lat: lat, lon: lon))
                } else {
                    spots.append(points[0])
                }
            }
        }
        let margin = 0.002
        spots += [Coordinate(lat: bounds.minLat - margin, lon: bounds.minLon - margin),
                  Coordinate(lat: bounds.maxLat + margin, lon: bounds.maxLon + margin)]
        var random = SplitMix64(seed: 0x5709E)
        func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        let start = (WallClock.now() - 86_400).rounded()
        var tracks: [[LocationUpdate]] = []
        tracks.reserveCapacity(devices)
        for d in 0..<devices {
            let device = "bench/d\(d)"
            var track: [LocationUpdate] = []
            track.reserveCapacity(updates)
            while track.count < updates {
                let spot = spots[pick(spots.count)]
                let stay = 1 + pick(2 * dwell - 1)
                for _ in 0..<stay where track.count < updates {
                    track.append(LocationUpdate(device: device, lat: spot.lat, lon: spot.lon, time: start + Double(track.count)))
                }
            }
            tracks.append(track)
        }
        var drive: [LocationUpdate] = []
        drive.reserveCapacity(devices * updates)
        for r in 0..<updates { for t in tracks { drive.append(t[r]) } }
        return drive
    }
}
