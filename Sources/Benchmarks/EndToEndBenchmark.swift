import Gateway
import FoundationEssentials
import GeotriggerCore
@_spi(Benchmarks) import MQTT

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench e2e`: the gateway end to end (broker -> `geotrigger serve` -> broker),
/// side by side with the broker's own pass-through, in one run.
///
/// 1. a private `/usr/sbin/mosquitto` on a free loopback port (or `--broker HOST:PORT`);
/// 2. a real `geotrigger serve` child (this executable) with a generated config, generated
///    fences and its database on, left idle for its idle figures; a subscriber takes its
///    events and its status counters (`received`, `accepted`, dropped) every 0.1 s;
/// 3. raw phase: the load generator publishes for `--duration` seconds to a subscriber on
///    topics outside the gateway's feed (the gateway idles);
/// 4. gateway phase: the same load to the gateway's feed.
/// With `--rounds K` the two phases alternate K times, the gateway kept running, and the
/// figures are those of the rounds pooled.
enum EndToEndBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "e2e", summary: "end to end through a real broker and geotrigger serve, against the broker alone",
        help: help, run: { try await run($0) })

    static let help = """
        Usage: geotrigger bench e2e [--devices N] [--fences F] [--rate R] [--duration S]
                                    [--qos 0|1] [--format json|owntracks] [--json] [...]

        Starts a private mosquitto on a free loopback port (or uses --broker), then publishes
        updates of N devices walking to and fro through F fences (polygons of 50 vertices, 60
        to 250 m across, over 40 x 40 km; deterministic; the devices out of step, so that their
        crossings spread over time, unless --lockstep), twice with the same generator:
          raw      to a subscriber (the broker's own pass-through), on topics as long as the
                   feed's but outside it (the first level in capitals);
          gateway  to a real `geotrigger serve` child with a generated config and its database,
                   started (and idle) before the raw phase.
        Reports the sustained rate with none lost (the gateway's `received` / `accepted` status
        counters against what was sent), up to when the gateway took every update and its
        subscriber had every event (the raw rate: until the subscriber had every update), and
        its ratio to the raw rate; the latency from the
        publish of a crossing update to its event at a subscriber (p50 / p99 / max), beside
        the broker's own latency from publish to the raw subscriber (with one publisher), both
        for the updates published after the first second (warm-up: every device is new to the
        gateway then; the first second's events are reported apart); the
        gateway's CPU time (/proc/PID/stat), idle, peak and final RSS (VmRSS before the load,
        VmHWM, VmRSS once every update was taken).
        While each phase publishes it profiles where the CPU time goes: how busy the cores are
        (/proc/stat), and how long the broker, the gateway's network thread and its other
        threads run and wait runnable for a core (/proc/PID/task/*/schedstat), in cores' worth.
        A missed target names its bottleneck from that: the saturated cores, the network
        thread or the broker.
        The generator drives its connections from its own thread (no libmosquitto network
        thread: each update is written at once; at a fixed rate it wakes at most every
        millisecond and writes what fell due, each update stamped as it is written), so the raw
        phase measures the broker rather than the generator; the subscribers record each
        message on arrival.

        Options:
          --devices N       devices (default 1000)
          --fences F        generated polygons (default 10000)
          --fence-folder D  use the layers of folder D (e.g. fences) instead of generated ones
          --rate R          updates per second (default: as fast as the broker takes them)
          --duration S      seconds of load per phase (default 10; 0: no load, idle figures only)
          --qos 0|1         QoS of the updates (default 0)
          --format F        json (topic bench/DEVICE/location) or owntracks (owntracks/bench/DEVICE)
          --lockstep        all devices start at the same end of their lines and cross their
                            fences together: bursts of N events within 5 steps, twice per pass
          --publishers P    publishing connections (default 1)
          --window W        updates per connection left with libmosquitto at most (default 1000)
          --idle S          seconds the gateway idles before the load, for the idle RSS (default 3)
          --broker H:P      use this broker instead of a private one
          --wrap CMD        start the gateway under CMD, e.g. --wrap "valgrind --tool=callgrind"
                            (its figures are then those of CMD running the gateway)
          --rounds K        alternate the raw and gateway phases K times (default 1), the
                            gateway kept running (its devices go on from where they were); the
                            rates, latencies and profile are those of the rounds pooled, the
                            ratio that of the summed rates (updates over seconds), and each
                            round's ratio is listed. A machine whose speed changes for minutes
                            at a time then slows both sides alike.
          --skip-raw        no raw phase (no ratio)
          --keep            keep the work directory (config, fences, database, logs)
          --json            print one JSON summary line instead of the report
        The private broker runs with max_queued_messages 0 (no per-client queue limit), so a
        gateway slower than the broker is measured by its rate rather than by dropped updates,
        max_inflight_messages 500 as in deploy/mosquitto/geotrigger.conf (mosquitto's default,
        20, is the receive maximum it grants the gateway: at most 20 events in flight, so
        events queue once 20 per round trip are not enough), and set_tcp_nodelay true; the
        benchmark's own connections set TCP_NODELAY too, so Nagle's algorithm adds no delay
        outside the gateway (its own connection is as configured).
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    /// The run's settings.
    struct Options: Sendable {
        var devices = 1000
        var fences = 10_000
        var fenceFolder: String?
        var rate: Double?
        var duration = 10.0
        var qos = MQTTQoS.atMostOnce
        var format = PayloadFormat.json
        var lockstep = false
        var publishers = 1
        var window = 1000
        var idle = 3.0
        var broker: (host: String, port: Int)?
        var wrap: [String] = []
        var rounds = 1
        var skipRaw = false
        var keep = false
        var json = false
    }

    static func options(_ arguments: [String]) throws -> Options {
        let args = try Arguments(
            arguments,
            valued: ["devices", "fences", "fence-folder", "rate", "duration", "qos", "format", "publishers", "window", "idle", "broker", "wrap", "rounds"],
            flags: ["skip-raw", "keep", "json", "lockstep"])
        var o = Options()
        func count(_ name: String, _ value: Int, minimum: Int) throws -> Int {
            guard let n = try args.number(name) else { return value }
            guard n >= Double(minimum), n == n.rounded(), n < 1e9 else { throw UsageError("--\(name) expects a whole number >= \(minimum), got \(args[name]!)") }
            return Int(n)
        }
        o.devices = try count("devices", o.devices, minimum: 1)
        o.fences = try count("fences", o.fences, minimum: 1)
        o.publishers = try count("publishers", o.publishers, minimum: 1)
        o.window = try count("window", o.window, minimum: 1)
        o.rounds = try count("rounds", o.rounds, minimum: 1)
        o.fenceFolder = args["fence-folder"]
        if let rate = try args.number("rate") {
            guard rate > 0 else { throw UsageError("--rate expects updates per second > 0, got \(args["rate"]!)") }
            o.rate = rate
        }
        if let d = try args.number("duration") {
            guard d >= 0 else { throw UsageError("--duration expects seconds >= 0, got \(args["duration"]!)") }
            o.duration = d
        }
        if let i = try args.number("idle") {
            guard i >= 0 else { throw UsageError("--idle expects seconds >= 0, got \(args["idle"]!)") }
            o.idle = i
        }
        switch args["qos"] {
        case nil, "0": o.qos = .atMostOnce
        case "1": o.qos = .atLeastOnce
        case let other?: throw UsageError("--qos expects 0 or 1, got \(other)")
        }
        switch args["format"] {
        case nil, "json": o.format = .json
        case "owntracks": o.format = .owntracks
        case let other?: throw UsageError("--format expects json or owntracks, got \(other)")
        }
        if let broker = args["broker"] {
            guard let colon = broker.lastIndex(of: ":"), let port = Int(broker[broker.index(after: colon)...]),
                (1...65535).contains(port), colon > broker.startIndex
            else { throw UsageError("--broker expects HOST:PORT, got \(broker)") }
            o.broker = (String(broker[..<colon]), port)
        }
        o.wrap = args["wrap"].map { $0.split(separator: " ").map(String.init) } ?? []
        o.lockstep = args.has("lockstep")
        o.skipRaw = args.has("skip-raw")
        o.keep = args.has("keep")
        o.json = args.has("json")
        return o
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        let o = try options(arguments)
        #if DEBUG
        note("warning: debug build; figures are far below a release build (swift build -c release)")
        #endif
        // The gateway child is this executable: the memory figures are those of how it was linked.
        if ChildProcess.read("/proc/self/maps")?.contains("libswiftCore.so") == true {
            note("note: the Swift runtime is linked dynamically; deploy/install.sh builds with --static-swift-stdlib, "
                 + "which resides about 3 MB less (build the same way to compare with the memory targets)")
        }
        let loadAtStart = ChildProcess.loadAverage()
        let work = try makeWorkDirectory()
        defer {
            if o.keep { note("work directory kept: \(work)") } else { try? FileManager.default.removeItem(atPath: work) }
        }

        // Fences.
        let fences: [Fence]
        let fencesPath: String
        if let folder = o.fenceFolder {
            let absolute = folder.hasPrefix("/") ? folder : FileManager.default.currentDirectoryPath + "/" + folder
            let (layers, errors) = FenceFolder.load(absolute)
            if let first = errors.first { throw UsageError("--fence-folder \(folder): \(first)") }
            fences = layers.flatMap(\.fences)
            fencesPath = absolute
        } else {
            fencesPath = work + "/fences"
            fences = try writeCity(polygons: o.fences, folder: fencesPath)
        }
        let generator = LoadGenerator(
            devices: o.devices, fences: fences, format: o.format, baseTime: (WallClock.now() - 86_400).rounded(.down),
            lockstep: o.lockstep)

        // Broker.
        var broker: ChildProcess?
        let host: String, port: Int
        if let given = o.broker {
            (host, port) = given
        } else {
            host = "127.0.0.1"
            port = try ChildProcess.freeLoopbackPort()
            broker = try startBroker(port: port, work: work)
        }
        defer { broker?.stop() }
        let tag = "\(getpid())"
        note("bench e2e: \(o.devices) devices, \(fences.count) fences\(o.fenceFolder.map { " from \($0)" } ?? " (generated)"), QoS \(o.qos.rawValue), \(o.format.rawValue), "
             + (o.rate.map { "\(Int($0)) updates/s" } ?? "as fast as possible") + ", \(format(o.duration, 0)) s per phase; broker \(host):\(port)\(broker == nil ? "" : " (private)")")

        var publisherConfiguration = MQTTConfiguration(host: host, port: port, clientId: nil, cleanStart: true, inflightWindow: 1000)
        publisherConfiguration.sessionExpiry = 0
        let connections = try (0..<o.publishers).map { _ in try LoadGenerator.Connection(publisherConfiguration) }
        defer { for c in connections { c.publisher.disconnect() } }
        ChildProcess.disableNagle(towardsPort: port)

        note("gateway: starting geotrigger serve")
        let child = try await GatewayChild(o, generator: generator, host: host, port: port, tag: tag, work: work, fencesPath: fencesPath)
        defer { child.stop() }

        var raws: [PhaseResult] = [], gateways: [PhaseResult] = []
        var next = 0  // the gateway's next update: a whole step on from the last round's
        for round in 0..<(o.duration > 0 ? o.rounds : 0) {
            let of = o.rounds > 1 ? " (round \(round + 1) of \(o.rounds))" : ""
            if !o.skipRaw {
                note("raw pass-through: publishing for \(format(o.duration, 0)) s\(of)")
                raws.append(
                    try await rawPhase(o, round: round, generator: generator, connections: connections, host: host, port: port, tag: tag, broker: broker))
            }
            note("gateway: publishing for \(format(o.duration, 0)) s\(of)")
            let result = try await child.load(o, round: round, from: next, generator: generator, connections: connections, broker: broker)
            next += (result.sent + o.devices - 1) / o.devices * o.devices
            gateways.append(result)
        }
        var gateway = PhaseResult(pooling: gateways)
        gateway.startupSeconds = child.startupSeconds
        gateway.idleResidentBytes = child.idleResidentBytes
        gateway.peakResidentBytes = child.process.peakResidentBytes
        gateway.endResidentBytes = child.process.residentBytes
        let rounds = o.rounds > 1 ? gateways.indices.map { (raw: raws.indices.contains($0) ? raws[$0].rate : nil, gateway: gateways[$0].rate) } : []
        let report = Report(options: o, fenceCount: fences.count, raw: raws.isEmpty ? nil : PhaseResult(pooling: raws), gateway: gateway,
                            rounds: rounds, loadAtStart: loadAtStart, loadAtEnd: ChildProcess.loadAverage())
        print(o.json ? report.json() : report.text())
        return ExitStatus.ok
    }

    // MARK: Phases

    /// Latencies count the updates published after this many seconds of a phase (when it lasts
    /// at least three times as long). In the first second every device is new to the gateway:
    /// its first update creates its monitor and publishes its first state, so 1,000 devices
    /// bring 1,000 state publications within 30 ms at 36,000 updates/s. That start is reported
    /// apart.
    static let warmUpSeconds = 1.0

    static func warmUp(_ o: Options) -> Double { o.duration >= 3 * warmUpSeconds ? warmUpSeconds : 0 }

    /// When a phase of `round` starting at `start` counts latencies from (the first round's
    /// warm-up apart; in later rounds every device is known).
    static func measuredFrom(_ o: Options, round: Int, start: Double) -> Double { start + (round == 0 ? warmUp(o) : 0) }

    /// What one phase measured.
    struct PhaseResult: Sendable {
        var sent = 0
        var publishSeconds = 0.0
        /// Updates that arrived (raw: at the subscriber; gateway: the `received` counter).
        var received = 0
        /// Gateway: `accepted` and the sum of the `dropped` counters.
        var accepted = 0
        var dropped = 0
        /// Seconds from the first publish until everything sent was taken (nil: not all was);
        /// for the gateway, and until its subscriber had every event.
        var completionSeconds: Double?
        /// Gateway: seconds from when every update was taken until the last event arrived (the
        /// events still on their way then; 0 when none was).
        var eventsLagSeconds: Double?
        /// Gateway: rate from the status counters while the load ran.
        var loadRate: Double?
        var events = 0
        var eventsCounter = 0
        /// Gateway: publish of a crossing update -> its event at the subscriber; raw: publish ->
        /// the update at the subscriber (only with one publisher connection and none lost). For
        /// the updates published after the warm-up; sorted.
        var latencies: [Double] = []
        /// The same for the updates published during the warm-up (``warmUpSeconds``); sorted.
        var warmUpLatencies: [Double] = []
        /// The latency split at the event's `emitted` time (wall clock, ms precision): publish ->
        /// event built in the gateway, and event built -> arrival at the subscriber.
        var toEmitted: [Double] = []
        var fromEmitted: [Double] = []
        var cpuSeconds = 0.0
        var brokerCPUSeconds: Double?
        var benchCPUSeconds = 0.0
        var idleResidentBytes = 0
        var startupSeconds = 0.0
        var peakResidentBytes = 0
        /// VmRSS once the load is over (the devices tracked, the queues drained).
        var endResidentBytes = 0
        /// Where the CPU time went while the updates were published.
        var profile: LoadProfile?

        var rate: Double? { completionSeconds.map { Double(sent) / $0 } }

        init() {}

        /// The rounds' results as one: counts, seconds and CPU times added (so the rate is that
        /// of the sums), latencies merged, the profile averaged over the rounds' seconds.
        init(pooling rounds: [PhaseResult]) {
            for r in rounds {
                sent += r.sent
                publishSeconds += r.publishSeconds
                received += r.received
                accepted += r.accepted
                dropped += r.dropped
                events += r.events
                eventsCounter += r.eventsCounter
                latencies += r.latencies
                warmUpLatencies += r.warmUpLatencies
                toEmitted += r.toEmitted
                fromEmitted += r.fromEmitted
                cpuSeconds += r.cpuSeconds
                benchCPUSeconds += r.benchCPUSeconds
            }
            func sum(_ values: [Double?]) -> Double? { values.contains { $0 == nil } ? nil : values.reduce(0) { $0 + $1! } }
            completionSeconds = sum(rounds.map(\.completionSeconds))
            brokerCPUSeconds = sum(rounds.map(\.brokerCPUSeconds))
            eventsLagSeconds = rounds.compactMap(\.eventsLagSeconds).max()
            let loads = rounds.filter { $0.loadRate != nil }
            if !loads.isEmpty {
                loadRate = loads.reduce(0) { $0 + $1.loadRate! * $1.publishSeconds } / max(1e-9, loads.reduce(0) { $0 + $1.publishSeconds })
            }
            profile = LoadProfile(pooling: rounds.compactMap(\.profile))
            latencies.sort()
            warmUpLatencies.sort()
            toEmitted.sort()
            fromEmitted.sort()
        }

        /// Files the latency of an update published at `sent` with the warm-up's or with the
        /// measured ones (published from `measuredFrom` on); true for a measured one.
        @discardableResult
        mutating func record(latency: Double, sentAt sent: Double, measuredFrom: Double) -> Bool {
            if sent < measuredFrom {
                warmUpLatencies.append(latency)
                return false
            }
            latencies.append(latency)
            return true
        }
        var lost: Int { max(0, sent - received) }
    }

    static func rawPhase(
        _ o: Options, round: Int, generator: LoadGenerator, connections: [LoadGenerator.Connection], host: String, port: Int, tag: String,
        broker: ChildProcess?
    ) async throws -> PhaseResult {
        let subscriber = try BenchSubscriber(
            host: host, port: port, clientID: "geotrigger-e2e-raw-\(tag)-\(round)", generator: generator, statusTopic: nil)
        try await subscriber.start(filters: [generator.rawTopicFilter], qos: o.qos)
        ChildProcess.disableNagle(towardsPort: port)
        let consumer = Task { await subscriber.consume() }
        defer { subscriber.client.stop() }
        let brokerCPU = broker?.cpuSeconds
        let benchCPU = ResourceUsage.cpuSeconds()
        let before = LoadProfile.Snapshot(gateway: nil, broker: broker?.pid)
        let run = await generator.publish(on: connections, qos: o.qos, rate: o.rate, duration: o.duration, window: o.window, raw: true)
        let profile = LoadProfile(from: before, to: LoadProfile.Snapshot(gateway: nil, broker: broker?.pid))
        var lastCount = -1, lastProgress = MonotonicClock.now()
        while subscriber.count < run.sent, MonotonicClock.now() - lastProgress < 5 {
            if subscriber.count != lastCount { lastCount = subscriber.count; lastProgress = MonotonicClock.now() }
            try await Task.sleep(for: .milliseconds(20))
        }
        var result = PhaseResult()
        result.sent = run.sent
        result.publishSeconds = run.seconds
        let (count, last, arrivals) = subscriber.state.withLock { ($0.count, $0.last, $0.arrivals) }
        result.received = count
        if count >= run.sent { result.completionSeconds = last - run.start }
        // The broker's own latency: one connection's updates arrive in the order they were
        // sent, so with one publisher and none lost the n-th arrival is the n-th publish.
        if connections.count == 1, arrivals.count == run.sendTimes.count {
            let measuredFrom = measuredFrom(o, round: round, start: run.start)
            for (arrival, sent) in zip(arrivals, run.sendTimes) {
                result.record(latency: arrival - sent, sentAt: sent, measuredFrom: measuredFrom)
            }
            result.latencies.sort()
            result.warmUpLatencies.sort()
        }
        result.brokerCPUSeconds = brokerCPU.map { broker!.cpuSeconds - $0 }
        result.benchCPUSeconds = ResourceUsage.cpuSeconds() - benchCPU
        result.profile = profile
        subscriber.client.stop()
        await consumer.value
        return result
    }

    /// The gateway of the gateway phases: a `geotrigger serve` child, started once and kept for
    /// every round, and the subscriber to its events and statuses.
    final class GatewayChild {
        let process: ChildProcess
        let subscriber: BenchSubscriber
        let consumer: Task<Void, Never>
        let startupSeconds: Double
        let idleResidentBytes: Int

        /// Writes the config, subscribes, starts the gateway, waits until it reports started,
        /// then `--idle` seconds for its idle RSS.
        init(_ o: Options, generator: LoadGenerator, host: String, port: Int, tag: String, work: String, fencesPath: String) async throws {
            let gatewayID = "bench-\(tag)"
            let prefix = "geotriggers"
            let statusTopic = "\(prefix)/status/\(gatewayID)"
            let config = """
                // Written by geotrigger bench e2e.
                {
                  gateway: { id: "\(gatewayID)", database: "gateway.db", fences: "\(fencesPath)" },
                  broker: { host: "\(host)", port: \(port), clientId: "geotrigger-\(gatewayID)" },
                  output: { prefix: "\(prefix)", statusInterval: 0.1 },
                  feeds: [ { name: "bench", topic: "\(generator.topicFilter)", format: "\(o.format.rawValue)" } ],
                }

                """
            let configPath = work + "/gateway.json5"
            guard FileManager.default.createFile(atPath: configPath, contents: Data(config.utf8)) else {
                throw UsageError("cannot write \(configPath)")
            }
            let subscriber = try BenchSubscriber(
                host: host, port: port, clientID: "geotrigger-e2e-events-\(tag)", generator: generator, statusTopic: statusTopic)
            try await subscriber.start(filters: [statusTopic, "\(prefix)/events/#"], qos: .atLeastOnce)
            ChildProcess.disableNagle(towardsPort: port)
            let consumer = Task { await subscriber.consume() }
            let launched = MonotonicClock.now()
            let command = o.wrap + [ChildProcess.currentExecutable(), "serve", "--config", configPath]
            let process: ChildProcess
            do {
                process = try ChildProcess(command[0], Array(command.dropFirst()), logPath: work + "/gateway.log")
            } catch {
                subscriber.client.stop()
                throw error
            }
            self.process = process
            self.subscriber = subscriber
            self.consumer = consumer
            do {
                try await waitUntil("geotrigger serve reports started", timeout: o.wrap.isEmpty ? 120 : 1200) {
                    guard process.isRunning else { throw UsageError("geotrigger serve exited:\n\(process.logTail())") }
                    return subscriber.lastStatus?.status == "started"
                }
                startupSeconds = MonotonicClock.now() - launched
                try await Task.sleep(for: .milliseconds(Int(o.idle * 1000)))
            } catch {
                process.stop()
                subscriber.client.stop()
                throw UsageError("\(error)\n\(process.logTail())")
            }
            idleResidentBytes = process.residentBytes
        }

        func stop() {
            process.stop()
            subscriber.client.stop()
        }

        /// One gateway phase of `round`: publishes from update `first` on, then waits until the
        /// gateway's counters show every update taken and the subscriber has every event it
        /// counted. Counters and events are those of this round (the statuses' totals minus
        /// what they were before it).
        func load(
            _ o: Options, round: Int, from first: Int, generator: LoadGenerator, connections: [LoadGenerator.Connection], broker: ChildProcess?
        ) async throws -> PhaseResult {
            var result = PhaseResult()
            let gateway = process
            // Wall clock minus monotonic clock, to place the events' `emitted` on the monotonic clock.
            let clockOffset = WallClock.now() - MonotonicClock.now()
            let base = subscriber.lastStatus
            let baseEvents = subscriber.state.withLock { (events: $0.events.count, unmatched: $0.unmatchedEvents) }
            func taken(_ s: BenchSubscriber.StatusSample) -> Int { s.accepted + s.dropped - (base.map { $0.accepted + $0.dropped } ?? 0) }
            func eventsReceived() -> Int { subscriber.eventCount - baseEvents.events - baseEvents.unmatched }
            let cpu = gateway.cpuSeconds
            let brokerCPU = broker?.cpuSeconds
            let benchCPU = ResourceUsage.cpuSeconds()
            let before = LoadProfile.Snapshot(gateway: gateway.pid, broker: broker?.pid)
            let run = await generator.publish(on: connections, qos: o.qos, rate: o.rate, duration: o.duration, window: o.window, from: first)
            result.profile = LoadProfile(from: before, to: LoadProfile.Snapshot(gateway: gateway.pid, broker: broker?.pid))

            // Until the counters show everything taken and the subscriber has every committed event.
            var lastDone = -1, lastProgress = MonotonicClock.now()
            var doneAt: Double?
            while MonotonicClock.now() - lastProgress < 15 {
                try await Task.sleep(for: .milliseconds(50))
                guard gateway.isRunning else { throw UsageError("geotrigger serve exited during the load:\n\(gateway.logTail())") }
                guard let s = subscriber.lastStatus else { continue }
                let done = taken(s) + eventsReceived()
                if done != lastDone { lastDone = done; lastProgress = MonotonicClock.now() }
                if taken(s) >= run.sent {
                    if doneAt == nil { doneAt = s.time }
                    // Two more statuses, so the events counter includes the last commits.
                    if s.time >= doneAt! + 1.5, eventsReceived() >= s.events - (base?.events ?? 0) { break }
                }
            }
            result.cpuSeconds = gateway.cpuSeconds - cpu
            result.brokerCPUSeconds = brokerCPU.map { broker!.cpuSeconds - $0 }
            result.benchCPUSeconds = ResourceUsage.cpuSeconds() - benchCPU
            result.sent = run.sent
            result.publishSeconds = run.seconds

            let (statuses, events, unmatched) = subscriber.state.withLock {
                ($0.statuses, $0.events[baseEvents.events...], $0.unmatchedEvents - baseEvents.unmatched)
            }
            if let last = statuses.last {
                result.received = last.received - (base?.received ?? 0)
                result.accepted = last.accepted - (base?.accepted ?? 0)
                result.dropped = last.dropped - (base?.dropped ?? 0)
                result.eventsCounter = last.events - (base?.events ?? 0)
            }
            // When did accepted + dropped reach `sent`? Interpolated between the two statuses around it
            // (the gateway stops at `sent`, so in effect the first status that has it: the statuses
            // come every 0.1 s, and every 1 s made the rate read up to a second short).
            let during = statuses.filter { $0.time >= run.start }
            if let b = during.firstIndex(where: { taken($0) >= run.sent }), result.received >= run.sent {
                let sb = during[b]
                var t = sb.time
                if b > 0 {
                    let sa = during[b - 1]
                    let da = Double(taken(sa)), db = Double(taken(sb))
                    if db > da { t = sa.time + (Double(run.sent) - da) / (db - da) * (sb.time - sa.time) }
                }
                // Answered when the subscriber also has every event, as the raw phase runs until
                // its subscriber has every update: a gateway that takes updates faster by holding
                // its events back is not faster.
                let lastEvent = events.map(\.time).max() ?? t
                result.eventsLagSeconds = max(0, lastEvent - t)
                result.completionSeconds = max(t, lastEvent) - run.start
            }
            // The rate the counters rose at while the load ran (from 1 s in to its end).
            let window = during.filter { $0.time >= run.start + 1 && $0.time <= run.end }
            if let first = window.first, let last = window.last, last.time - first.time >= 1 {
                result.loadRate = Double(taken(last) - taken(first)) / (last.time - first.time)
            }
            // Latency: each event's arrival minus the publish of the update it names.
            result.events = events.count + unmatched
            let devices = generator.tracks.count
            let measuredFrom = EndToEndBenchmark.measuredFrom(o, round: round, start: run.start)
            for e in events {
                let i = e.step * devices + e.device - run.first
                guard i >= 0, i < run.sendTimes.count,
                    result.record(latency: e.time - run.sendTimes[i], sentAt: run.sendTimes[i], measuredFrom: measuredFrom),
                    let emitted = e.emitted
                else { continue }
                let emittedMonotonic = emitted - clockOffset
                result.toEmitted.append(emittedMonotonic - run.sendTimes[i])
                result.fromEmitted.append(e.time - emittedMonotonic)
            }
            result.latencies.sort()
            result.warmUpLatencies.sort()
            result.toEmitted.sort()
            result.fromEmitted.sort()
            return result
        }
    }

    // MARK: Set-up

    /// A fresh directory `geotrigger-NAME-XXXXXX` under `parent`.
    static func makeWorkDirectory(under parent: String = "/tmp", name: String = "e2e") throws -> String {
        var template = Array("\(parent)/geotrigger-\(name)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw UsageError("cannot create a work directory in \(parent)") }
        return String(cString: made)
    }

    /// Writes `polygons` synthetic polygons (the city of `bench index`) as the layer `city`.
    static func writeCity(polygons: Int, folder: String) throws -> [Fence] {
        var random = SplitMix64(seed: 20_240_607)
        let fences = Array(IndexBenchmark.syntheticCity(polygons: polygons, random: &random).prefix(polygons))
        let features: [JSONValue] = fences.map { fence in
            guard case .polygons(let polygons) = fence.geometry, let ring = polygons.first?.exterior else { return .null }
            return .object([
                "type": .string("Feature"), "id": .string(fence.id), "properties": .object([:]),
                "geometry": .object([
                    "type": .string("Polygon"),
                    "coordinates": .array([.array(ring.map { .array([.number($0.lon), .number($0.lat)]) })]),
                ]),
            ])
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let text = JSONValue.object(["type": .string("FeatureCollection"), "features": .array(features)]).serialized()
        guard FileManager.default.createFile(atPath: folder + "/city.geojson", contents: Data(text.utf8)) else {
            throw UsageError("cannot write \(folder)/city.geojson")
        }
        return fences
    }

    /// A private mosquitto on 127.0.0.1:`port`, waited for until it accepts connections.
    static func startBroker(port: Int, work: String) throws -> ChildProcess {
        let conf = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence false
            max_queued_messages 0
            max_inflight_messages 500
            set_tcp_nodelay true
            log_dest stderr
            log_type error
            log_type warning

            """
        return try launchBroker(config: conf, port: port, work: work)
    }

    /// `/usr/sbin/mosquitto` with `config` (written to `work`/mosquitto.conf, its log to
    /// mosquitto.log), waited for until it accepts connections on 127.0.0.1:`port`.
    static func launchBroker(config: String, port: Int, work: String) throws -> ChildProcess {
        let path = work + "/mosquitto.conf"
        guard FileManager.default.createFile(atPath: path, contents: Data(config.utf8)) else { throw UsageError("cannot write \(path)") }
        let broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", path], logPath: work + "/mosquitto.log")
        let deadline = MonotonicClock.now() + 10
        while !ChildProcess.accepts(host: "127.0.0.1", port: port) {
            guard broker.isRunning, MonotonicClock.now() < deadline else {
                throw UsageError("mosquitto did not start on port \(port):\n\(broker.logTail())")
            }
            usleep(20_000)
        }
        return broker
    }

    /// Polls `condition` every 20 ms until it holds; a `UsageError` naming `what` after `timeout` s.
    static func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) async throws {
        let deadline = MonotonicClock.now() + timeout
        while try !condition() {
            guard MonotonicClock.now() < deadline else { throw UsageError("timed out after \(format(timeout, 0)) s waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A progress line on stderr (stdout has the report).
    static func note(_ text: String) {
        printError(text)
    }

    static func format(_ value: Double, _ decimals: Int) -> String { IndexBenchmark.format(value, decimals) }
}
