import Gateway
import FoundationEssentials
import GeotriggerCore
@_spi(Benchmarks) import MQTT
import Store

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench endurance`: what `serve` and the shipped broker config write to disk and
/// how often they wake, for a fleet reporting at a real rate (a Raspberry Pi's SD card and
/// battery budget), in four segments: warm-up, drive, settle, idle.
enum EnduranceBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "endurance", summary: "disk writes per day, wake-ups and CPU of serve and the shipped broker config, a fleet at a real rate",
        help: help, run: { try await run($0) })

    static let help = """
        Usage: geotrigger bench endurance [--devices N] [--interval S] [--fleet mixed|parked|edge|driving|idle]
                                          [--mix parked=60,driving=20,edge=20] [--duration S] [--idle S]
                                          [--warmup S] [--trips N] [--gateway PATH] [--json] [...]

        Runs the shipped broker config and `geotrigger serve` as child processes, drives a fleet
        through them at a real rate (no gpsd feed), then lets them idle, and prints what each
        writes to disk per day, how often its threads wake, its CPU time and the events' latency.

        The broker: /usr/sbin/mosquitto -c FILE, FILE being --broker-config with only what a
        private run needs rewritten: one listener on a free loopback port (the websockets
        listener and http_dir dropped), persistence_location in the work directory, no
        password_file, acl_file or security plugin, allow_anonymous true, and no use_username_as_clientid (with
        anonymous clients mosquitto refuses a client without a user name). Every persistence
        and autosave line stays as shipped.
        The gateway: PATH serve (this executable unless --gateway) with a generated config: the
        zones as the fence layer `taxi`, one trigger over it with enterAfter and exitAfter
        30 s (the advice against jitter in docs/operations.md "Troubleshooting"),
        output.occupancy and Home Assistant discovery on, everything else at its default; its
        database in the work directory.
        The work directory must be on a disk (not tmpfs).
        The fleet: each device publishes a JSON update at QoS 1 every --interval s, the devices
        spread evenly over the interval (N / interval updates per second in all), fix times
        the real time. Positions are deterministic (seeded):
          parked   inside a zone, each fix within 3 m of its spot
          driving  at 10 m/s to and fro along a 5 km line through a zone and across others
          edge     on a zone's boundary, each fix 1-8 m across it, inside and outside
                   alternately: each fix starts a hold and the next cancels it (few events)
          mixed    60 % parked, 20 % driving, 20 % edge (the default)
          idle     nothing reports

        Trips (--trips N): before the warm-up the benchmark publishes a trip for each of the
        first N devices (retained on PREFIX/trips/bench-D, the route a GeoJSON LineString, a
        corridor of 50 m, no destination fence, no deadline), then asks the `trips` query until
        the gateway's shards follow all N (within 60 s; fewer, or an error on a trip's error
        topic, ends the run). Each route is one its device drives: a driving device's own
        to-and-fro from where its first update finds it, to 1 km beyond the run (so no trip
        arrives and every fix is decided along it); a parked or edge device's a 1 km line
        from 20 m behind its spot through it (the trip stays pending). --fleet driving is the
        case the figures are meant for: run it with and without --trips N, alternated, and
        compare CPU per update. The report adds the open trips before the warm-up and after
        the drive (by state), the trips' events (counted apart from the trigger's, not in the
        latency), progress messages per second in the drive, and memory per trip: the
        gateway's VmRSS once all N are followed minus just before they were published, over N
        (the requests, routes and their state before any fix; the ETA's speeds come with the
        fixes: compare the drive-end VmRSS of two runs, with and without, for those).

        Segments, each measured from a settled point to the next: warm-up (--warmup s of
        driving, in which every device's first update creates its state: reported apart),
        drive (the rest of --duration), settle (35 s after the last update, the holds' 30 s and
        5 s more, in which the holds pending at the end are decided by silence: reported
        apart), idle (--idle s, nothing reporting). At each segment's end the benchmark forces
        out what is still buffered, so nothing is left unwritten: the broker saves its
        persistence database (kill -USR1, then until its write_bytes stop changing for 0.3 s,
        at most 10 s), and a thread of the benchmark opens the gateway's database and runs
        PRAGMA wal_checkpoint(PASSIVE); what that thread wrote (/proc/thread-self/io) is added
        to the gateway's figure. The broker's forced save is one save of its database more per
        segment than autosave_interval alone would have made (its bytes are printed apart, and the
        broker's own writes without it: in a window shorter than the time between two autosaves,
        the forced save is all of the broker's figure).

        Figures, per segment and per process (gateway PID, broker PID):
          bytes/day       write_bytes - cancelled_write_bytes of /proc/PID/io (bytes the process
                          dirtied that reach the disk), x 86400 / the segment's seconds; MB are
                          10^6 bytes, KiB 1024. The processes' stdout and stderr go to log files
                          in the work directory and count; their growth is printed beside.
          disk            sectors written of the block device of the work directory
                          (/proc/diskstats), the whole machine's writes there: a cross-check
          wake-ups/s      context switches (voluntary + involuntary) of every thread
                          (/proc/PID/task/*/status); a thread ended within a segment is not counted
          CPU             utime + stime (/proc/PID/stat): per update in the drive, % of a core
          bytes per event the gateway's bytes in the drive over its events
          beyond events   the gateway's bytes/day minus 2 KiB per event: what the quiet
                          updates cost; per quiet update: that over the updates with no event
          latency         event arrival at a subscriber minus the publish of the update that
                          decided it: the device's first update with a fix time at least the
                          hold after the event's position.time (its crossing update); events
                          decided by silence (no such update) are counted apart
        Targets: gateway <= 2 KiB per event; <= 50 MB/day beyond its events (for --fleet edge);
        broker <= 100 MB/day at 1,000 devices (scaled to N; its forced save included); idle:
        gateway + broker <= 20 MB/day (the broker's own writes: changing nothing, it saves
        nothing), gateway <= 5 wake-ups/s and <= 0.1 % of a core; <= 50 us of gateway CPU per
        update at 100 updates/s; event latency p99 < 1 s.

        Options:
          --devices N         devices (default 1000)
          --interval S        seconds between two updates of a device (default 10)
          --fleet F           mixed, parked, edge, driving or idle (default mixed)
          --mix LIST          shares instead of --fleet, e.g. parked=60,driving=20,edge=20
          --duration S        seconds of driving, warm-up included (default 600; the record
                              wants at least 600)
          --warmup S          seconds of driving before the drive segment (default 30)
          --trips N           an open trip for each of the first N devices (default 0; at
                              most --devices, at most 10,000: the gateway's limit)
          --idle S            seconds of the idle segment (default 120)
          --zones FILE        fence layer (default Tests/Fixtures/geometry/nyc-taxi-zones.geojson)
          --broker-config F   broker config (default deploy/mosquitto/geotrigger.conf)
          --gateway PATH      run PATH serve ... (an older geotrigger build, to compare)
          --commit-interval S the gateway's gateway.commitInterval (default: the gateway's own)
          --dir D             where the work directory is made (default /var/tmp)
          --keep              keep the work directory (configs, database, broker db, logs)
          --json              print one JSON summary line instead of the report
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    /// The most open trips a gateway takes (docs/trips.md "Limits").
    static let maximumTrips = 10_000

    /// The trigger's `enterAfter` and `exitAfter`.
    static let hold = 30.0
    /// How long after the last update the idle segment starts: the holds pending then are
    /// decided by silence within `hold` (and the gateway's 0.5 s tick).
    static let settle = hold + 5

    struct Options: Sendable {
        var devices = 1000
        var interval = 10.0
        var fleet = "mixed"
        /// nil: nothing reports.
        var mix: EnduranceFleet.Mix? = EnduranceFleet.Mix(parked: 60, driving: 20, edge: 20)
        var duration = 600.0
        var warmup = 30.0
        /// Devices that get a trip before the warm-up (the first ones).
        var trips = 0
        var idle = 120.0
        var zones = "Tests/Fixtures/geometry/nyc-taxi-zones.geojson"
        var brokerConfig = "deploy/mosquitto/geotrigger.conf"
        var gateway: String?
        /// `gateway.commitInterval` in the generated config; nil leaves the gateway's default.
        var commitInterval: Double?
        var directory = "/var/tmp"
        var keep = false
        var json = false

        var rate: Double { Double(devices) / interval }
    }

    static func options(_ arguments: [String]) throws -> Options {
        let args = try Arguments(
            arguments,
            valued: ["devices", "interval", "fleet", "mix", "duration", "warmup", "trips", "idle", "zones", "broker-config", "gateway",
                     "commit-interval", "dir"],
            flags: ["keep", "json"])
        var o = Options()
        if let n = try args.number("devices") {
            guard n >= 1, n == n.rounded(), n < 1e7 else { throw UsageError("--devices expects a whole number >= 1, got \(args["devices"]!)") }
            o.devices = Int(n)
        }
        func seconds(_ name: String, _ value: Double, minimum: Double) throws -> Double {
            guard let s = try args.number(name) else { return value }
            guard s >= minimum, s.isFinite else { throw UsageError("--\(name) expects seconds >= \(IndexBenchmark.format(minimum, 0)), got \(args[name]!)") }
            return s
        }
        o.interval = try seconds("interval", o.interval, minimum: 0.1)
        o.duration = try seconds("duration", o.duration, minimum: 1)
        o.warmup = try seconds("warmup", o.warmup, minimum: 0)
        o.idle = try seconds("idle", o.idle, minimum: 1)
        guard o.warmup < o.duration else { throw UsageError("--warmup must be shorter than --duration") }
        if let fleet = args["fleet"] {
            o.fleet = fleet
            o.mix = try EnduranceFleet.Mix.named(fleet)
        }
        if let mix = args["mix"] {
            guard args["fleet"] == nil else { throw UsageError("give --fleet or --mix, not both") }
            o.mix = try EnduranceFleet.Mix.parse(mix)
            o.fleet = "mix"
        }
        if let n = try args.number("trips") {
            guard n >= 0, n == n.rounded(), n <= Double(min(o.devices, maximumTrips)) else {
                throw UsageError("--trips expects a whole number from 0 to --devices (\(o.devices)) and at most \(maximumTrips), got \(args["trips"]!)")
            }
            o.trips = Int(n)
            guard o.trips == 0 || o.mix != nil else { throw UsageError("--trips needs devices that report: not with --fleet idle") }
        }
        o.zones = args["zones"] ?? o.zones
        o.brokerConfig = args["broker-config"] ?? o.brokerConfig
        o.gateway = args["gateway"]
        if let s = try args.number("commit-interval") {
            guard s >= 0, s <= 5 else { throw UsageError("--commit-interval expects seconds from 0 to 5, got \(args["commit-interval"]!)") }
            o.commitInterval = s
        }
        o.directory = args["dir"] ?? o.directory
        o.keep = args.has("keep")
        o.json = args.has("json")
        return o
    }

    // MARK: The broker's config

    /// The shipped broker config with what a private run needs rewritten (see the help): the
    /// first listener on 127.0.0.1:`port`, the other listeners and their `protocol` and
    /// `http_dir` left out, `persistence_location` set to `persistence`, `password_file`,
    /// `acl_file`, the security plugin and `use_username_as_clientid` left out, `allow_anonymous true`. Every other
    /// line as shipped. Each rewritten line is marked with a comment.
    static func privateBrokerConfig(shipped: String, port: Int, persistence: String) -> String {
        var lines: [String] = []
        var listeners = 0
        var inDroppedListener = false
        for raw in shipped.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            let key = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            switch key {
            case "listener":
                listeners += 1
                inDroppedListener = listeners > 1
                lines.append("# bench endurance: was \(line)")
                if !inDroppedListener { lines.append("listener \(port) 127.0.0.1") }
            case "protocol" where inDroppedListener, "http_dir", "password_file", "acl_file", "plugin", "plugin_opt_config_file",
                "use_username_as_clientid":
                lines.append("# bench endurance: left out: \(line)")
            case "persistence_location":
                lines += ["# bench endurance: was \(line)", "persistence_location \(persistence)"]
            case "allow_anonymous":
                lines += ["# bench endurance: was \(line)", "allow_anonymous true"]
            default:
                lines.append(line)
            }
        }
        // (mosquitto reads a comment only on a line of its own.)
        if !lines.contains(where: { $0.hasPrefix("allow_anonymous ") }) { lines.append("allow_anonymous true") }
        if listeners == 0 { lines.append("listener \(port) 127.0.0.1") }
        return lines.joined(separator: "\n")
    }

    /// The shipped config's persistence and autosave lines, for the report.
    static func persistenceLines(_ config: String) -> [String] {
        config.split(separator: "\n").map(String.init).filter { $0.hasPrefix("persistence ") || $0.hasPrefix("autosave") }
    }

    // MARK: The schedule

    /// When each update is due and the fix time it carries: update `i` (step `i / devices` of
    /// device `i % devices`) `i * interval / devices` seconds after the first, its fix time
    /// that moment of the wall clock in hundredths of a second (so a device's updates are
    /// exactly `interval` apart, and a hold of a whole number of intervals is decided by the
    /// same update every time).
    struct Schedule: Sendable, Equatable {
        var devices: Int
        var interval: Double
        /// The wall clock's hundredths of a second at update 0.
        var start: Int

        func fixHundredths(update i: Int) -> Int { start + Int((Double(i) * interval * 100 / Double(devices)).rounded()) }

        /// The update of device `d` with the fix time `hundredths` (nil when there is none).
        func update(device d: Int, fixHundredths t: Int) -> Int? {
            let k = Int(((Double(t - start) - Double(d) * interval * 100 / Double(devices)) / (interval * 100)).rounded())
            guard k >= 0 else { return nil }
            let i = k * devices + d
            return fixHundredths(update: i) == t ? i : nil
        }

        /// The update that decides a hold of `hold` seconds started by update `i`: the device's
        /// first one with a fix time at least `hold` later.
        func deciding(update i: Int, hold: Double) -> Int {
            var k = max(1, Int((hold / interval).rounded(.up)))
            while fixHundredths(update: i + k * devices) - fixHundredths(update: i) < Int((hold * 100).rounded()) { k += 1 }
            return i + k * devices
        }
    }

    // MARK: Run

    static func run(_ arguments: [String]) async throws -> Int32 {
        let o = try options(arguments)
        #if DEBUG
        EndToEndBenchmark.note("warning: debug build; figures are far below a release build (swift build -c release)")
        #endif
        guard access(o.directory, W_OK) == 0 else { throw UsageError("--dir \(o.directory): not a writable directory") }
        if let memory = DiskWrites.memoryFileSystem(at: o.directory) {
            throw UsageError("--dir \(o.directory) is on \(memory), which writes nothing to a disk: give a directory on a disk (e.g. /var/tmp or .build)")
        }
        guard let shipped = ChildProcess.read(o.brokerConfig), !shipped.isEmpty else {
            throw UsageError("cannot read the broker config \(o.brokerConfig) (--broker-config; run from the repository or give the file)")
        }
        let zones: [Fence]
        do {
            zones = try IndexBenchmark.loadTaxiZones(path: o.zones)
        } catch {
            throw UsageError("--zones \(o.zones): \(error)")
        }
        let fleet = try o.mix.map { try EnduranceFleet(zones: zones, mix: $0, count: o.devices) }
        let gatewayExecutable = o.gateway ?? ChildProcess.currentExecutable()
        guard access(gatewayExecutable, X_OK) == 0 else { throw UsageError("--gateway \(gatewayExecutable): not an executable") }

        let work = try EndToEndBenchmark.makeWorkDirectory(under: o.directory, name: "endurance")
        defer {
            if o.keep { EndToEndBenchmark.note("work directory kept: \(work)") } else { try? FileManager.default.removeItem(atPath: work) }
        }
        let device = DiskWrites.blockDevice(of: work)
        let loadAtStart = ChildProcess.loadAverage()

        // The broker, with the shipped config.
        let port = try ChildProcess.freeLoopbackPort()
        let persistence = work + "/broker/"
        try FileManager.default.createDirectory(atPath: persistence, withIntermediateDirectories: true)
        try letBrokerWrite(work: work, persistence: persistence)
        let broker = try EndToEndBenchmark.launchBroker(
            config: privateBrokerConfig(shipped: shipped, port: port, persistence: persistence), port: port, work: work)
        defer { broker.stop() }

        // The gateway's fences and config.
        let fences = work + "/fences"
        try FileManager.default.createDirectory(atPath: fences, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: o.zones, toPath: fences + "/taxi.geojson")
        let tag = "\(getpid())"
        let gatewayID = "endurance-\(tag)"
        let prefix = "geotriggers"
        let naming = LoadGenerator(devices: o.devices, fences: [], format: .json, baseTime: WallClock.now().rounded(.down))
        let config = """
            // Written by geotrigger bench endurance.
            {
              gateway: { id: "\(gatewayID)", database: "gateway.db", fences: "fences"\(o.commitInterval.map { ", commitInterval: \($0)" } ?? "") },
              broker: { host: "127.0.0.1", port: \(port), clientId: "geotrigger-\(gatewayID)" },
              output: { prefix: "\(prefix)", occupancy: true },
              homeassistant: { discovery: true },
              feeds: [ { name: "fleet", topic: "\(naming.topicFilter)", format: "json" } ],
              triggers: [ { name: "zones", fences: ["taxi"], enterAfter: \(Int(hold)), exitAfter: \(Int(hold)) } ],
            }

            """
        let configPath = work + "/gateway.json5"
        guard FileManager.default.createFile(atPath: configPath, contents: Data(config.utf8)) else { throw UsageError("cannot write \(configPath)") }

        EndToEndBenchmark.note(
            "bench endurance: \(gatewayExecutable) serve, fleet \(o.fleet), \(o.devices) devices every \(IndexBenchmark.format(o.interval, 1)) s; "
                + "broker 127.0.0.1:\(port) with \(o.brokerConfig); work directory \(work)")
        let statusTopic = "\(prefix)/status/\(gatewayID)"
        let queryTopic = "\(prefix)/query/\(gatewayID)"
        let subscriber = try BenchSubscriber(
            host: "127.0.0.1", port: port, clientID: "geotrigger-endurance-events-\(tag)", generator: naming, statusTopic: statusTopic,
            tripsPrefix: prefix + "/", queryReplyTopic: queryTopic + "/reply")
        try await subscriber.start(
            filters: [statusTopic, "\(prefix)/events/#", "\(prefix)/trips/+/progress", "\(prefix)/trips/+/error", queryTopic + "/reply"],
            qos: .atLeastOnce)
        let consumer = Task { await subscriber.consume() }
        defer {
            subscriber.client.stop()
            consumer.cancel()
        }
        var publisherConfiguration = MQTTConfiguration(host: "127.0.0.1", port: port, clientId: nil, cleanStart: true, inflightWindow: 1000)
        publisherConfiguration.sessionExpiry = 0
        let connection = try LoadGenerator.Connection(publisherConfiguration)
        defer { connection.publisher.disconnect() }
        ChildProcess.disableNagle(towardsPort: port)

        EndToEndBenchmark.note("gateway: starting \(gatewayExecutable) serve")
        let gateway = try ChildProcess(gatewayExecutable, ["serve", "--config", configPath], logPath: work + "/gateway.log")
        defer { gateway.stop() }
        do {
            try await EndToEndBenchmark.waitUntil("geotrigger serve reports started", timeout: 120) {
                guard gateway.isRunning else { throw UsageError("geotrigger serve exited:\n\(gateway.logTail())") }
                return subscriber.lastStatus?.status == "started"
            }
        } catch {
            throw UsageError("\(error)\n\(gateway.logTail())")
        }
        try await Task.sleep(for: .seconds(3))

        var trips = TripSummary(requested: o.trips, residentBefore: gateway.residentBytes)
        if o.trips > 0, let fleet {
            EndToEndBenchmark.note("trips: publishing \(o.trips), then asking the trips query until the gateway follows them all")
            let seconds = o.duration + settle
            for d in 0..<o.trips {
                let payload = tripRequest(device: naming.deviceIDs[d], route: fleet.tripRoute(device: d, seconds: seconds, interval: o.interval))
                _ = try subscriber.client.publish(topic: "\(prefix)/trips/\(tripID(d))", payload: payload, qos: .atLeastOnce, retain: true)
            }
            let opened = try await waitForTrips(o.trips, subscriber: subscriber, query: queryTopic, gateway: gateway, timeout: 60)
            trips.residentWith = opened.resident
            trips.atStart = opened.reply
        }

        let probe = Probe(gateway: gateway, broker: broker, database: work + "/gateway.db", device: device, work: work)
        var readings = [try await probe.reading(afterFlush: true)]
        let schedule = Schedule(devices: o.devices, interval: o.interval, start: Int((WallClock.now() * 100).rounded(.down)))
        var publishing: Task<LoadGenerator.Run, Never>?
        if let fleet {
            EndToEndBenchmark.note("driving \(o.devices) devices for \(IndexBenchmark.format(o.duration, 0)) s (\(IndexBenchmark.format(o.warmup, 0)) s warm-up)")
            let topics = naming.topics, interval = o.interval, rate = o.rate, duration = o.duration
            publishing = Task {
                await BenchThread.run {
                    LoadGenerator.publishLoop(
                        [connection], topics: topics, qos: .atLeastOnce, rate: rate, duration: duration, window: 1000, first: 0,
                        payload: { d, k, bytes in
                            writeUpdate(fleet.position(device: d, step: k, interval: interval), fixHundredths: schedule.fixHundredths(update: k * topics.count + d), into: &bytes)
                        })
                }
            }
        } else {
            EndToEndBenchmark.note("nothing reports for \(IndexBenchmark.format(o.duration, 0)) s (\(IndexBenchmark.format(o.warmup, 0)) s warm-up), as the drive would")
        }
        let driveStart = readings[0].time
        try await sleep(until: driveStart + o.warmup)
        readings.append(try await probe.reading(afterFlush: true))
        let run = await publishing?.value
        try await sleep(until: driveStart + o.duration + 1)  // the last events on their way
        readings.append(try await probe.reading(afterFlush: true))
        if o.trips > 0 { trips.afterDrive = try await queryTrips(subscriber: subscriber, query: queryTopic) }
        EndToEndBenchmark.note("settling \(IndexBenchmark.format(settle, 0)) s, then idle for \(IndexBenchmark.format(o.idle, 0)) s")
        try await sleep(until: (run?.end ?? readings[2].time) + settle)
        readings.append(try await probe.reading(afterFlush: true))
        try await sleep(until: readings[3].time + o.idle)
        readings.append(try await probe.reading(afterFlush: true))
        guard gateway.isRunning, broker.isRunning else {
            throw UsageError("a child exited during the run:\n\(gateway.logTail())\n\(broker.logTail())")
        }

        // Events: their segment by arrival, their latency from the update that decided them.
        let (events, unmatched, progressTimes) = subscriber.state.withLock { ($0.events, $0.unmatchedEvents, $0.progressTimes) }
        let baseHundredths = Int((naming.baseTime * 100).rounded())
        var segments = ["warm-up", "drive", "settle", "idle"].indices.map { s in
            Segment(
                name: ["warm-up", "drive", "settle", "idle"][s], from: readings[s], to: readings[s + 1], sendTimes: run?.sendTimes ?? [],
                progressTimes: progressTimes)
        }
        var silence = 0
        for event in events {
            guard let s = segments.indices.last(where: { readings[$0].time <= event.time }), event.time < readings[segments.count].time else { continue }
            segments[s].events += 1
            guard let run, let crossing = schedule.update(device: event.device, fixHundredths: baseHundredths + event.step) else {
                segments[s].unmatched += 1
                continue
            }
            let deciding = schedule.deciding(update: crossing, hold: hold)
            if deciding < run.sendTimes.count, run.sendTimes[deciding] <= event.time {
                segments[s].latencies.append(event.time - run.sendTimes[deciding])
            } else {
                segments[s].decidedBySilence += 1
                silence += 1
            }
        }
        for s in segments.indices { segments[s].latencies.sort() }
        let report = Report(
            options: o, executable: gatewayExecutable, zoneCount: zones.count, fleet: fleet, persistence: persistenceLines(shipped),
            work: work, device: device, segments: segments, unmatchedEvents: unmatched, sent: run?.sent ?? 0,
            loadAtStart: loadAtStart, loadAtEnd: ChildProcess.loadAverage(), trips: trips,
            tripEvents: subscriber.state.withLock { $0.tripEvents })
        print(o.json ? report.json() : report.text())
        return ExitStatus.ok
    }

    // MARK: Trips

    /// What the run's trips were and cost (all nil / zero without `--trips`).
    struct TripSummary: Sendable {
        var requested: Int
        /// The gateway's VmRSS just before the requests were published, and once the `trips`
        /// query listed all of them (read before that query).
        var residentBefore: Int
        var residentWith: Int?
        var atStart: BenchSubscriber.TripsReply?
        var afterDrive: BenchSubscriber.TripsReply?

        /// Bytes of resident memory per open trip, before any fix (nil without trips).
        var memoryPerTrip: Double? {
            guard requested > 0, let residentWith else { return nil }
            return Double(residentWith - residentBefore) / Double(requested)
        }
    }

    /// The trip id of device `d`'s trip: `bench-D`.
    static func tripID(_ d: Int) -> String { "bench-\(d)" }

    /// A trip request: `{"device": ID, "route": {"type": "LineString", "coordinates": [...]},
    /// "corridor": 50}`, positions to 7 decimals.
    static func tripRequest(device: String, route: [Coordinate]) -> String {
        let coordinates = route.map { c in
            var bytes: [UInt8] = []
            bytes += "[".utf8
            LoadGenerator.appendDecimal(Int((c.lon * 1e7).rounded()), decimals: 7, to: &bytes)
            bytes += ",".utf8
            LoadGenerator.appendDecimal(Int((c.lat * 1e7).rounded()), decimals: 7, to: &bytes)
            bytes += "]".utf8
            return String(decoding: bytes, as: UTF8.self)
        }
        return #"{"device": ""# + device + #"", "route": {"type": "LineString", "coordinates": ["# + coordinates.joined(separator: ",")
            + #"]}, "corridor": \#(Int(tripCorridor))}"#
    }

    /// The trips' corridor (metres).
    static let tripCorridor = 50.0

    /// Publishes the query `{"trips": {}}` and waits (up to 10 s) for its reply.
    static func queryTrips(subscriber: BenchSubscriber, query: String) async throws -> BenchSubscriber.TripsReply {
        let before = subscriber.state.withLock { $0.tripReplies.count }
        _ = try subscriber.client.publish(topic: query, payload: #"{"trips": {}}"#, qos: .atLeastOnce)
        let deadline = MonotonicClock.now() + 10
        while MonotonicClock.now() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            let replies = subscriber.state.withLock { $0.tripReplies }
            if replies.count > before { return replies[replies.count - 1] }
        }
        throw UsageError("the gateway did not answer the trips query on \(query) within 10 s")
    }

    /// Asks the `trips` query once a second until it counts `count` open trips (VmRSS read
    /// before each query); throws at a trip's error or after `timeout` s.
    static func waitForTrips(
        _ count: Int, subscriber: BenchSubscriber, query: String, gateway: ChildProcess, timeout: Double
    ) async throws -> (reply: BenchSubscriber.TripsReply, resident: Int) {
        let deadline = MonotonicClock.now() + timeout
        var last: BenchSubscriber.TripsReply?
        while MonotonicClock.now() < deadline {
            try await Task.sleep(for: .seconds(1))
            let errors = subscriber.state.withLock { $0.tripErrors }
            if !errors.isEmpty {
                throw UsageError("\(errors.count) trip request(s) rejected by the gateway, the first: \(errors[0])")
            }
            guard gateway.isRunning else { throw UsageError("geotrigger serve exited:\n\(gateway.logTail())") }
            let resident = gateway.residentBytes
            let reply = try await queryTrips(subscriber: subscriber, query: query)
            if reply.count >= count { return (reply, resident) }
            last = reply
        }
        throw UsageError(
            "only \(last?.count ?? 0) of \(count) trips are open after \(IndexBenchmark.format(timeout, 0)) s (the trips query's count)\n\(gateway.logTail())")
    }

    /// Sleeps until the monotonic clock reads `time`.
    static func sleep(until time: Double) async throws {
        let wait = time - MonotonicClock.now()
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
    }

    /// A fleet update's payload: `{"lat":..,"lon":..,"time":..,"accuracy":5}`, the position
    /// to 7 decimals, the fix time in hundredths of a second.
    static func writeUpdate(_ p: Coordinate, fixHundredths: Int, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        bytes += #"{"lat":"#.utf8
        LoadGenerator.appendDecimal(Int((p.lat * 1e7).rounded()), decimals: 7, to: &bytes)
        bytes += #","lon":"#.utf8
        LoadGenerator.appendDecimal(Int((p.lon * 1e7).rounded()), decimals: 7, to: &bytes)
        bytes += #","time":"#.utf8
        LoadGenerator.appendDecimal(fixHundredths, decimals: 2, to: &bytes)
        bytes += #","accuracy":5}"#.utf8
    }

    /// mosquitto started as root runs as the user `mosquitto`: its persistence directory is
    /// made its own, and the work directory searchable.
    static func letBrokerWrite(work: String, persistence: String) throws {
        guard getuid() == 0, let user = getpwnam("mosquitto") else { return }
        guard chmod(work, 0o755) == 0, chown(persistence, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw UsageError("cannot give \(persistence) to the mosquitto user: \(String(cString: strerror(errno)))")
        }
    }

    // MARK: Readings

    /// The counters of one moment.
    struct Reading: Sendable {
        var time: Double
        var gateway: DiskWrites.IO
        var broker: DiskWrites.IO
        /// What the benchmark's checkpoint thread wrote in the flush before this reading, and
        /// what the broker wrote from its forced save's SIGUSR1 until the reading.
        var checkpointBytes: Int64
        var forcedSaveBytes: Int64
        var gatewaySwitches: [pid_t: Int]
        var brokerSwitches: [pid_t: Int]
        var gatewayCPU: Double
        var brokerCPU: Double
        var disk: Int64?
        var gatewayLog: Int64
        var brokerLog: Int64
        /// The gateway's VmRSS.
        var gatewayResident: Int
    }

    /// Reads the children's counters, after forcing out what they hold unwritten.
    struct Probe {
        let gateway: ChildProcess
        let broker: ChildProcess
        let database: String
        let device: (name: String, major: Int, minor: Int)?
        let work: String

        func reading(afterFlush flush: Bool) async throws -> Reading {
            var checkpoint: Int64 = 0
            let brokerBefore = DiskWrites.io(of: broker.pid)?.net ?? 0
            if flush {
                checkpoint = try await checkpointGateway()
                await saveBroker()
            }
            let brokerIO = DiskWrites.io(of: broker.pid) ?? DiskWrites.IO(writeBytes: 0, cancelledWriteBytes: 0)
            return Reading(
                time: MonotonicClock.now(), gateway: DiskWrites.io(of: gateway.pid) ?? DiskWrites.IO(writeBytes: 0, cancelledWriteBytes: 0),
                broker: brokerIO, checkpointBytes: checkpoint, forcedSaveBytes: flush ? brokerIO.net - brokerBefore : 0,
                gatewaySwitches: DiskWrites.contextSwitches(of: gateway.pid), brokerSwitches: DiskWrites.contextSwitches(of: broker.pid),
                gatewayCPU: gateway.cpuSeconds, brokerCPU: broker.cpuSeconds,
                disk: device.flatMap { DiskWrites.deviceBytesWritten(major: $0.major, minor: $0.minor) },
                gatewayLog: fileSize(gateway.logPath), brokerLog: fileSize(broker.logPath), gatewayResident: gateway.residentBytes)
        }

        /// `PRAGMA wal_checkpoint(PASSIVE)` on a connection of a thread of its own; the bytes
        /// that thread wrote (opening and closing the connection included).
        func checkpointGateway() async throws -> Int64 {
            let database = database
            let result: Result<Int64, UsageError> = await BenchThread.run {
                let before = DiskWrites.currentThreadIO()
                do {
                    let connection = try SQLiteConnection(path: database, options: .init(create: false))
                    try connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
                } catch {
                    return .failure(UsageError("cannot checkpoint \(database): \(error)"))
                }
                guard let before, let after = DiskWrites.currentThreadIO() else {
                    return .failure(UsageError("cannot read /proc/thread-self/io"))
                }
                return .success(after.net - before.net)
            }
            return try result.get()
        }

        /// SIGUSR1 (mosquitto saves its persistence database), then waits until the broker's
        /// write_bytes have changed and stopped changing for 0.3 s (at most 10 s; a note when
        /// they did not change: the save failed, see the broker's log).
        func saveBroker() async {
            var last = DiskWrites.io(of: broker.pid)?.writeBytes
            broker.signal(SIGUSR1)
            let deadline = MonotonicClock.now() + 10
            var stableSince = MonotonicClock.now(), changed = false
            while MonotonicClock.now() < deadline {
                try? await Task.sleep(for: .milliseconds(50))
                let now = DiskWrites.io(of: broker.pid)?.writeBytes
                if now != last {
                    last = now
                    changed = true
                    stableSince = MonotonicClock.now()
                } else if changed, MonotonicClock.now() - stableSince >= 0.3 {
                    return
                }
            }
            if !changed { EndToEndBenchmark.note("note: the broker wrote nothing within 10 s of SIGUSR1 (see mosquitto.log in the work directory)") }
        }

        func fileSize(_ path: String) -> Int64 {
            var info = stat()
            return stat(path, &info) == 0 ? Int64(info.st_size) : 0
        }
    }

    /// What one segment measured.
    struct Segment: Sendable {
        var name: String
        var seconds: Double
        /// Net bytes written: the gateway's (with the checkpoint thread's at the segment's end),
        /// the broker's and the block device's (nil when unknown).
        var gatewayBytes: Int64
        var checkpointBytes: Int64
        var brokerBytes: Int64
        /// Of the broker's bytes, those of the save forced at the segment's end.
        var forcedSaveBytes: Int64
        var diskBytes: Int64?
        var gatewayLogBytes: Int64
        var brokerLogBytes: Int64
        var gatewaySwitches: Int
        var brokerSwitches: Int
        var gatewayCPU: Double
        var brokerCPU: Double
        /// Updates published within the segment.
        var updates: Int
        var events = 0
        /// Events whose device or fix time names no update of the fleet.
        var unmatched = 0
        var decidedBySilence = 0
        /// Sorted, seconds.
        var latencies: [Double] = []
        /// The gateway's VmRSS at the segment's end.
        var gatewayResident: Int
        /// Trip progress messages that arrived within the segment.
        var progress: Int

        init(name: String, from a: Reading, to b: Reading, sendTimes: [Double], progressTimes: [Double] = []) {
            self.name = name
            seconds = b.time - a.time
            checkpointBytes = b.checkpointBytes
            gatewayBytes = b.gateway.net - a.gateway.net + checkpointBytes
            brokerBytes = b.broker.net - a.broker.net
            forcedSaveBytes = b.forcedSaveBytes
            diskBytes = b.disk.flatMap { end in a.disk.map { end - $0 } }
            gatewayLogBytes = b.gatewayLog - a.gatewayLog
            brokerLogBytes = b.brokerLog - a.brokerLog
            gatewaySwitches = DiskWrites.switches(from: a.gatewaySwitches, to: b.gatewaySwitches)
            brokerSwitches = DiskWrites.switches(from: a.brokerSwitches, to: b.brokerSwitches)
            gatewayCPU = b.gatewayCPU - a.gatewayCPU
            brokerCPU = b.brokerCPU - a.brokerCPU
            updates = sendTimes.reduce(0) { $0 + ($1 >= a.time && $1 < b.time ? 1 : 0) }
            gatewayResident = b.gatewayResident
            progress = progressTimes.reduce(0) { $0 + ($1 >= a.time && $1 < b.time ? 1 : 0) }
        }

        func perDay(_ bytes: Int64) -> Double { Double(bytes) * 86_400 / max(1e-9, seconds) }
    }
}
