import Gateway
#if canImport(Glibc)
import Glibc
#endif
import GeotriggerCore

/// `geotrigger bench engine`: updates per second through the device monitors, the memory of
/// an idle device, and feed payload decodes per second (``decodeRate(format:messages:passes:)``).
///
/// Synthetic and deterministic (a seeded SplitMix64): fences on a 100 × 100 grid 150 m apart
/// (polygons of 6-12 vertices, 20-60 m across, and one in ten a point with a 15 m buffer, in
/// two layers), three triggers (plain; hysteresis with dwell, exit margin and an Arcade message;
/// accuracy circles for `fleet/**` with `staleAfter`), devices walking (1.4 m/s) or driving
/// (10 m/s) with a wandering heading, one fix per second with 3-15 m accuracy, so they cross
/// fences all the time. One thread; the clock is the round number.
enum EngineBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "engine", summary: "updates/s through the device monitors; memory per idle device; payload decodes/s",
        help: """
            Usage: geotrigger bench engine [--devices N] [--fences N] [--rounds N] [--idle N]
                                           [--messages N]

            Builds N fences (default 10000) and 3 triggers, then sends one update per device per
            round (default 10000 devices, 60 rounds after 5 warm-up rounds) through the device
            monitors on one thread, firing due deadlines (silence, dwell, stale) as the gateway
            would. Runs the same walks twice, with crossings false and true on every trigger, and
            reports for each updates/s, per-update latency percentiles (every 16th update timed),
            events, then the cost of crossings (true against false), and then the memory of --idle idle monitors (default 100000): RSS growth, the
            struct's size and the persisted size. Target: >= 500,000 updates/s, <= 1 KB per idle device.

            After building the first snapshot it prints its memory per fence by part (coordinates,
            spatial index, prepared containment and distance structures, PreparedFence objects,
            ids/names/properties, per-fence and per-watch tables, the layers' arrays), each counted
            from the structures' capacities and element sizes with glibc malloc's block sizes, against
            the resident growth around generating the fences and building the snapshot (before and
            after malloc_trim); "other" is the growth not accounted for. The layers hold the fences
            prepared, as the gateway's do after reading the fence files, and both snapshots (crossings
            false and true) take those prepared fences.

            Last, decodes --messages feed payloads per format (default 300000, json and
            owntracks, made like the end-to-end load generator's) with the feed's LocationDecoder
            on one thread: messages per CPU second, best of 3 passes.
            """,
        run: { try await run($0) })

    static let origin = Coordinate(lat: 34.40, lon: -119.80)
    /// Fix time of the first round.
    static let startTime = 1_796_040_000.0
    static let metresPerDegreeLat = 110_900.0
    static let metresPerDegreeLon = 91_900.0

    static func coordinate(x: Double, y: Double) -> Coordinate {
        Coordinate(lat: origin.lat + y / metresPerDegreeLat, lon: origin.lon + x / metresPerDegreeLon)
    }

    /// The synthetic fence layers: `sites` (polygons) and `stops` (points, buffer 15 m by default).
    static func layers(fenceCount: Int, random: inout SplitMix64) -> (layers: [FenceLayer], side: Double) {
        let perRow = Int(Double(fenceCount).squareRoot().rounded(.up))
        let spacing = 150.0
        var sites: [Fence] = [], stops: [Fence] = []
        for n in 0..<fenceCount {
            let cx = (Double(n % perRow) + 0.5) * spacing + random.nextUniform(-30, 30)
            let cy = (Double(n / perRow) + 0.5) * spacing + random.nextUniform(-30, 30)
            if n % 10 == 9 {
                stops.append(
                    Fence(
                        id: "s\(n)", layer: "stops", name: "Stop \(n)", properties: ["name": .string("Stop \(n)")],
                        geometry: .points([coordinate(x: cx, y: cy)]), featureIndex: stops.count))
                continue
            }
            let vertices = Int(random.nextUniform(6, 13))
            let radius = random.nextUniform(10, 30)
            var ring: [Coordinate] = []
            ring.reserveCapacity(vertices + 1)  // as the fence file reader sizes its rings
            for v in 0..<vertices {
                let angle = Double(v) / Double(vertices) * 2 * .pi
                let r = radius * random.nextUniform(0.7, 1.3)
                ring.append(coordinate(x: cx + r * cos(angle), y: cy + r * sin(angle)))
            }
            ring.append(ring[0])
            sites.append(
                Fence(
                    id: "f\(n)", layer: "sites", name: "Site \(n)", properties: ["name": .string("Site \(n)")],
                    geometry: .polygons([Polygon(exterior: ring)]), featureIndex: sites.count))
        }
        return (
            [
                FenceLayer(name: "sites", fences: sites),
                FenceLayer(name: "stops", fences: stops, defaults: ["buffer": .number(15)]),
            ], Double(perRow) * spacing
        )
    }

    /// ``layers(fenceCount:random:)`` as the gateway holds them after reading the files: each
    /// fence prepared once, held in its prepared form only (``FenceLayer/init(name:file:prepared:defaults:)``),
    /// and every snapshot built from the layers takes those prepared fences.
    static func preparedLayers(fenceCount: Int, random: inout SplitMix64) throws -> (layers: [FenceLayer], side: Double) {
        let (plain, side) = layers(fenceCount: fenceCount, random: &random)
        var layers: [FenceLayer] = []
        for layer in plain {
            var prepared: [PreparedFence] = []
            prepared.reserveCapacity(layer.fenceCount)
            for i in 0..<layer.fenceCount { prepared.append(try PreparedFence(layer.fence(at: i))) }
            layers.append(FenceLayer(name: layer.name, file: layer.file, prepared: prepared, defaults: layer.defaults))
        }
        return (layers, side)
    }

    static let triggers: JSONValue = .array([
        .object(["name": .string("plain")]),
        .object([
            "name": .string("dispatch"), "enterAfter": .number(10), "exitAfter": .number(10), "dwell": .number(120),
            "exitMargin": .number(5), "message": .string("'Entered ' + $fencefeature.name"),
        ]),
        .object([
            "name": .string("fleet"), "devices": .array([.string("fleet/**")]),
            "accuracyMode": .string("useGeometryWithAccuracy"),
            "spatialRelationship": .string("enterContainsAndExitDoesNotIntersect"), "staleAfter": .number(300),
        ]),
    ])

    /// One simulated device: position in metres, heading, speed.
    struct Walker {
        var x: Double, y: Double, heading: Double, speed: Double
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["devices", "fences", "rounds", "idle", "messages"], flags: [])
        func count(_ name: String, _ fallback: Int) throws(UsageError) -> Int {
            guard let value = try args.number(name) else { return fallback }
            guard value >= 1, value == value.rounded() else { throw UsageError("--\(name) expects a whole number >= 1") }
            return Int(value)
        }
        let deviceCount = try count("devices", 10_000)
        let fenceCount = try count("fences", 10_000)
        let rounds = try count("rounds", 60)
        let idleCount = try count("idle", 100_000)
        let messageCount = try count("messages", 300_000)
        let warmUp = 5
        #if DEBUG
        print("warning: a debug build; build with `swift build -c release` for meaningful figures")
        #endif

        var random = SplitMix64(seed: 2026)  // every run sees the same fences
        let rssBeforeFences = ResourceUsage.residentBytes()
        var started = ResourceUsage.now()
        let (layers, side) = try preparedLayers(fenceCount: fenceCount, random: &random)
        let snapshot = try EngineSnapshot(layers: layers, configTriggers: triggers, zones: SystemTimeZones.source)
        print("snapshot: \(fenceCount) fences in \(layers.count) layers, 3 triggers, built in \(ms(ResourceUsage.now() - started))")
        // Where the bytes went (after the timed build; the counting's own memory comes after the RSS readings).
        let rssAfterFences = ResourceUsage.residentBytes()
        ResourceUsage.trimHeap()
        let rssTrimmed = ResourceUsage.residentBytes()
        var memory = FenceMemory()
        memory.add(snapshot)
        memory.addArrays(of: layers)
        print(
            MemoryBreakdown.table(
                memory, growth: rssAfterFences - rssBeforeFences, trimmedGrowth: rssTrimmed - rssBeforeFences))

        // The same walks twice: the triggers as they are, then with `crossings: true` on all three.
        var crossingTriggers: [JSONValue] = []
        if case .array(let list) = triggers {
            for case .object(var t) in list {
                t["crossings"] = .bool(true)
                crossingTriggers.append(.object(t))
            }
        }
        let crossingSnapshot = try EngineSnapshot(layers: layers, configTriggers: .array(crossingTriggers))
        var rates: [Int] = []
        for (label, snap) in [("crossings false", snapshot), ("crossings true", crossingSnapshot)] {
            print("\(label):")
            rates.append(drive(snapshot: snap, side: side, deviceCount: deviceCount, rounds: rounds, warmUp: warmUp))
        }
        if rates.count == 2, rates[1] > 0 {
            print("crossings: \(rates[1]) against \(rates[0]) updates per CPU second: \(Double(rates[0] * 100 / rates[1]) / 100)x the cost")
        }

        // Idle devices: each has taken one update outside every fence (so it has a last position
        // and every trigger knows it).
        started = ResourceUsage.now()
        let far = coordinate(x: -5_000, y: -5_000)
        let rssBefore = ResourceUsage.residentBytes()
        var idle: [DeviceMonitor] = []
        idle.reserveCapacity(idleCount)
        var serializedBytes = 0
        for i in 0..<idleCount {
            let id = i % 3 == 0 ? "fleet/vehicles/idle\(i)" : "workers/idle\(i)"
            var m = DeviceMonitor(device: id, snapshot: snapshot, now: 0)
            _ = m.handle(LocationUpdate(device: id, lat: far.lat, lon: far.lon, time: startTime, accuracy: 5), receivedAt: 0)
            if i < 1_000 { serializedBytes += m.serialized().count }
            idle.append(m)
        }
        let rssAfter = ResourceUsage.residentBytes()
        let perDevice = Double(rssAfter - rssBefore) / Double(idleCount)
        print(
            "idle devices: \(idleCount) monitors, RSS +\((rssAfter - rssBefore) / 1_048_576) MB = \(Int(perDevice)) bytes per device "
                + "(struct \(MemoryLayout<DeviceMonitor>.stride) bytes + its arrays and id); persisted state \(serializedBytes / min(idleCount, 1_000)) bytes; "
                + "created in \(ms(ResourceUsage.now() - started))")
        withExtendedLifetime(idle) {}
        idle = []

        // Feed payload decoding last: its payload buffers (~30 MB) would otherwise count in the
        // peak RSS and idle-device RSS figures above.
        var decodeFigures: [String] = []
        for format in [PayloadFormat.json, .owntracks] {
            switch try decodeRate(format: format, messages: messageCount) {
            case .success(let rate): decodeFigures.append("\(Int(rate)) messages/s (\(format))")
            case .failure(let drop):
                print("decode: a \(format) benchmark payload was dropped as \(drop.reason): \(drop.detail)")
                return ExitStatus.failure
            }
        }
        print("decode: \(decodeFigures.joined(separator: ", ")) per CPU second on one thread, \(messageCount) payloads each")
        return ExitStatus.ok
    }

    /// Drives `deviceCount` walking devices for `rounds` rounds (after `warmUp`) through
    /// monitors of `snapshot`, prints the figures and returns the updates per CPU second.
    static func drive(snapshot: EngineSnapshot, side: Double, deviceCount: Int, rounds: Int, warmUp: Int) -> Int {
        var random = SplitMix64(seed: 4711)  // every pass sees the same walks
        // Devices: one in three a vehicle (`fleet/...`, 10 m/s), the others walking (1.4 m/s).
        var walkers: [Walker] = []
        var ids: [String] = []
        for d in 0..<deviceCount {
            let vehicle = d % 3 == 0
            ids.append(vehicle ? "fleet/vehicles/v\(d)" : "workers/w\(d)")
            walkers.append(
                Walker(
                    x: random.nextUniform(0, side), y: random.nextUniform(0, side), heading: random.nextUniform(0, 2 * .pi),
                    speed: vehicle ? 10 : 1.4))
        }
        var monitors = ids.map { DeviceMonitor(device: $0, snapshot: snapshot, now: 0) }
        var batch = [LocationUpdate](repeating: LocationUpdate(device: "", lat: 0, lon: 0, time: 0), count: deviceCount)
        let startTime = EngineBenchmark.startTime

        var handled = 0, events = 0, deadlineEvents = 0
        var busy = 0.0, busyCPU = 0.0
        var samples: [Double] = []
        samples.reserveCapacity((rounds * deviceCount) / 16 + 1)
        let cpuBefore = ResourceUsage.cpuSeconds()
        for round in 0..<(warmUp + rounds) {
            let now = Double(round)
            // Move everyone (not timed).
            for d in 0..<deviceCount {
                var w = walkers[d]
                w.heading += random.nextUniform(-0.2, 0.2)
                w.x += w.speed * cos(w.heading)
                w.y += w.speed * sin(w.heading)
                if w.x < 0 || w.x > side { w.heading = .pi - w.heading; w.x = min(max(w.x, 0), side) }
                if w.y < 0 || w.y > side { w.heading = -w.heading; w.y = min(max(w.y, 0), side) }
                walkers[d] = w
                let c = coordinate(x: w.x, y: w.y)
                batch[d] = LocationUpdate(
                    device: ids[d], lat: c.lat, lon: c.lon, time: startTime + now, accuracy: random.nextUniform(3, 15),
                    speed: w.speed)
            }
            let measuring = round >= warmUp
            let roundStart = ResourceUsage.now()
            let roundCPU = threadCPUSeconds()
            monitors.withUnsafeMutableBufferPointer { monitors in
                for d in 0..<deviceCount {
                    let timed = measuring && d & 15 == 0
                    let t0 = timed ? ResourceUsage.now() : 0
                    let outcome = monitors[d].handle(batch[d], receivedAt: now)
                    if let deadline = monitors[d].nextDeadline(), deadline <= now {
                        deadlineEvents += monitors[d].advance(to: now).count
                    }
                    if timed { samples.append(ResourceUsage.now() - t0) }
                    if measuring {
                        handled += 1
                        events += outcome.notifications.count
                    }
                }
            }
            if measuring {
                busy += ResourceUsage.now() - roundStart
                busyCPU += threadCPUSeconds() - roundCPU
            }
        }
        let cpu = ResourceUsage.cpuSeconds() - cpuBefore
        samples.sort()
        func percentile(_ p: Double) -> String {
            samples.isEmpty ? "-" : us(samples[min(samples.count - 1, Int(Double(samples.count) * p))])
        }
        let inside = monitors.reduce(0) { $0 + $1.stays.count }
        print(
            "updates: \(handled) (\(deviceCount) devices × \(rounds) rounds) in \(ms(busy)) wall, \(ms(busyCPU)) thread CPU: "
                + "\(Int(Double(handled) / busyCPU)) updates per CPU second on one thread (\(Int(Double(handled) / busy)) per wall second)")
        print("latency per update: p50 \(percentile(0.5)), p99 \(percentile(0.99)), p99.9 \(percentile(0.999)), max \(percentile(1))")
        print("events: \(events) from updates + \(deadlineEvents) by the clock; stays open at the end: \(inside)")
        print("process CPU for all rounds incl. the simulation: \(ms(cpu)); peak RSS \(ResourceUsage.peakResidentBytes() / 1_048_576) MB")
        withExtendedLifetime(monitors) {}
        return Int(Double(handled) / busyCPU)

    }

    /// CPU seconds used by the calling thread (what "one core" spends, whatever else runs).
    static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    static func ms(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10_000).rounded())
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    static func us(_ seconds: Double) -> String {
        let hundredths = Int((seconds * 100_000_000).rounded())
        return "\(hundredths / 100).\(String(repeating: "0", count: hundredths % 100 < 10 ? 1 : 0))\(hundredths % 100) µs"
    }
}
