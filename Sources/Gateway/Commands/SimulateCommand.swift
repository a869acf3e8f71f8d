import FoundationEssentials
import GeotriggerCore
import MQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger simulate`: simulated devices walking a route, published to MQTT (the ArcGIS
/// simulated location source, over MQTT).
enum SimulateCommand: Subcommand {
    static let name = "simulate"
    static let summary = "publish simulated devices walking a route at a speed"
    static let help = """
        Usage: geotrigger simulate ROUTE [--speed M/S] [--interval S] [--accuracy M] [--noise M]
                                   [--device ID] [--devices N] [--format json|owntracks]
                                   [--topic TEMPLATE] [--loop] [--rate R] [--seed N]
                                   [--qos 0|1] [--config FILE] [--broker HOST:PORT] [--quiet]
                                   [--trip FILE]... [--no-trip] [--fences DIR]
               geotrigger simulate TRACK --recorded [--device ID] [--speed M/S] [--format F]
                                   [--topic TEMPLATE] [--rate R] [--qos 0|1] [--config FILE]
                                   [--broker HOST:PORT] [--quiet] [--trip FILE]... [--no-trip]
                                   [--fences DIR]

        Walks N simulated devices along ROUTE (a GeoJSON LineString, GPX, TCX, KML, OwnTracks
        recorder file, NMEA log or JSON lines of {lat, lon}) and publishes their positions to
        the broker, one update per device every --interval seconds of simulated time. A file is
        read as `replay` reads it (see `geotrigger replay --help`): the route is the points of
        its tracks, one track after the other (its routes only when it has no tracks);
        standard error says what was ignored.

        With --recorded, TRACK is played as recorded instead: every fix `replay` would run
        (each GPX track its own device, tracks and points without times skipped and said on
        standard error, or walked at --speed), published at the pace of its fix times, which
        are moved to start now (with --rate other than 1: to end now).

        Trips: a trip file (see `geotrigger replay --help` and docs/trips.md) is published,
        retained, on PREFIX/trips/TRIP_ID (PREFIX: the config's output.prefix) before the first
        position, so a running `serve` follows the trip: ROUTE's own trip file beside it (its
        name with .trip.json for its extension), unless --trip or --no-trip is given. It is
        checked first as `replay` checks it, against the fences of the config (or --fences),
        and its device must be one that is simulated. With --recorded, the trip's `by` is moved
        with the fix times; at a --rate other than 1 the times are then placed so that the
        play reaches `by` when the gateway's clock does (fixes after `by` are dated ahead of
        the clock by up to their distance from it, times 1 - 1/R), so `serve` decides late,
        arrived and missed as `replay` does (at --rate 0 the times end now, as without a
        trip: a `by` before the last fix has passed). Walking a ROUTE, `by` is published as
        written.
        The trip is left to the gateway at the end: it clears the request itself once the trip
        has arrived or is missed; an open one stays open until a dispatcher cancels it (an
        empty retained message on its topic).

        Options:
          --speed M/S       walking speed in metres per second (default 1.4)
          --interval S      seconds between updates of a device (default 1)
          --accuracy M      horizontal accuracy reported with each update (metres, 68 %)
          --noise M         Gaussian position noise per axis in metres (default 0)
          --seed N          seed of the noise (default 1): the same seed, the same positions
          --device ID       the device id (default "sim" for json, "sim/walker" for owntracks);
                            with --recorded one id for every fix (default: each track's name,
                            made valid as replay does, else "sim" or "sim/walker")
          --devices N       N devices spread evenly along the route, ids ID-1 ... ID-N
          --format F        json (default: {"lat","lon","time","accuracy","speed","heading"})
                            or owntracks (_type location; the id must be USER/DEVICE)
          --topic T         topic template, {device} is replaced (default devices/{device}/location
                            for json, owntracks/{device} for owntracks)
          --loop            start again at the beginning of the route, forever
          --recorded        play TRACK's fixes at their recorded pace (not with --interval,
                            --accuracy, --noise, --seed, --devices or --loop)
          --rate R          R times faster than real time (default 1; 0: as fast as possible).
                            Without --loop and with R != 1 the fix times end at "now" (they start
                            in the past), so the gateway's input.maxFutureSkew never drops them.
          --qos Q           0 or 1 (default 1)
          --config FILE     the broker settings of a gateway config
          --broker H:P      the broker (default from the config, else 127.0.0.1:1883)
          --quiet           no line per tick
          --trip FILE       publish this trip first (repeat for several); default: the trip
                            file beside ROUTE or TRACK, if there is one
          --no-trip         publish no trip, not even the one beside the file
          --fences DIR      the fences a trip's {"layer", "fence"} is looked up in (default:
                            gateway.fences of the config, else fences)
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(
            arguments,
            valued: ["speed", "interval", "accuracy", "noise", "seed", "device", "devices", "format", "topic", "rate",
                     "qos", "config", "broker", "fences"],
            repeated: ["trip"],
            flags: ["loop", "quiet", "recorded", "no-trip"])
        guard args.positionals.count == 1 else { throw UsageError("expected one ROUTE file") }
        let file = args.positionals[0]
        guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("\(file): cannot read the route file") }
        let track: Track
        do { track = try TrackReader.read([UInt8](data), file: file) } catch { throw UsageError(Logger.escaped(error.description)) }

        guard let format = PayloadFormat(rawValue: args["format"] ?? "json") else {
            throw UsageError("--format expects json or owntracks")
        }
        if args.has("recorded") { return try await playRecorded(track, file: file, args: args, format: format) }
        for line in track.skipSummary { printError("simulate: skipped " + line) }
        if !track.ignored.isEmpty { printError(Logger.escaped("simulate: ignored " + track.ignored.joined(separator: " and "))) }
        let base = args["device"] ?? (format == .owntracks ? "sim/walker" : "sim")
        let count = try args.integer("devices", range: 0...1_000_000) ?? 1
        guard count >= 1 else { throw UsageError("--devices must be at least 1") }
        let devices = RouteWalker.deviceIDs(base: base, count: count)
        for device in devices {
            if let problem = DeviceID.problem(with: device) { throw UsageError("device id '\(device)': \(problem)") }
            if format == .owntracks, device.split(separator: "/").count != 2 {
                throw UsageError("OwnTracks device ids are USER/DEVICE (topic owntracks/USER/DEVICE); got '\(device)'")
            }
        }
        let speed = try args.number("speed") ?? 1.4
        let interval = try args.number("interval") ?? 1
        let rate = try args.number("rate") ?? 1
        guard rate >= 0 else { throw UsageError("--rate must be 0 or more") }
        let loop = args.has("loop")
        let qos = try args.integer("qos", range: 0...2) ?? 1
        guard qos == 0 || qos == 1 else { throw UsageError("--qos expects 0 or 1") }
        let topicTemplate = args["topic"] ?? (format == .owntracks ? "owntracks/{device}" : "devices/{device}/location")

        // Fix times: real time at rate 1; otherwise ending about now (see --help).
        let now = WallClock.now()
        var start = now
        if rate != 1, !loop, speed > 0 {
            var length = 0.0
            let route = track.coordinates
            for (a, b) in zip(route, route.dropFirst()) { length += Earth.distance(a, b) }
            start = now - (length / speed).rounded(.up) - interval
        }
        let accuracy = try args.number("accuracy")
        let noise = try args.number("noise") ?? 0
        let seed = UInt64(try args.integer("seed", range: 0...Int.max) ?? 1)
        var walker: RouteWalker
        do {
            walker = try RouteWalker(
                route: track.coordinates, file: file, devices: devices, speed: speed, interval: interval,
                accuracy: accuracy, noise: noise, loop: loop, start: start, seed: seed)
        } catch {
            throw UsageError(error.description)
        }

        let trips = try tripFiles(args, file: file, devices: Set(devices))
        let options = try ClientOptions(args, role: "simulate")
        let client = try CountingClient(options.mqtt)
        defer { client.stop() }
        try await publish(trips, shift: 0, prefix: options.config.output.prefix, client: client)
        let clock = MonotonicClock.now()
        var published = 0
        while let tick = walker.next() {
            if rate > 0 {
                let due = clock + Double(walker.tick - 1) * interval / rate
                let wait = due - MonotonicClock.now()
                // At most a day at a time (a tiny --rate makes the wait too long for an Int of ms).
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int(Swift.min(wait, 86_400) * 1000))) }
            }
            for update in tick {
                let topic = topicTemplate.replacing("{device}", with: update.device)
                try client.publish(topic: topic, payload: payload(update, format: format).serializedBytes(), qos: MQTTQoS(qos))
                published += 1
            }
            if !args.has("quiet"), let first = tick.first {
                print("\(ISO8601Time.format(first.time))  \(tick.count) device\(tick.count == 1 ? "" : "s")  first at \(first.lat), \(first.lon)")
            }
        }
        // Let QoS 1 publications reach the broker before disconnecting.
        let deadline = MonotonicClock.now() + 10
        while client.isConnected, client.pendingAcknowledgements > 0, MonotonicClock.now() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        print("published \(published) updates of \(devices.count) device\(devices.count == 1 ? "" : "s")")
        return ExitStatus.ok
    }

    /// `--recorded`: the fixes `replay` would run, published at the pace of their fix times
    /// (divided by `--rate`), moved to start now (to end now at a rate other than 1).
    static func playRecorded(_ track: Track, file: String, args: Arguments, format: PayloadFormat) async throws -> Int32 {
        for option in ["interval", "accuracy", "noise", "seed", "devices"] where args[option] != nil {
            throw UsageError("--\(option) walks a route; it does not go with --recorded")
        }
        if args.has("loop") { throw UsageError("--loop walks a route; it does not go with --recorded") }
        if let device = args["device"], let problem = DeviceID.problem(with: device) {
            throw UsageError("--device '\(Logger.escaped(device))': \(problem)")
        }
        let speed = try args.number("speed")
        let plan: TrackReplay
        do {
            plan = try track.replayPlan(
                file: file, device: args["device"], defaultDevice: format == .owntracks ? "sim/walker" : "sim", speed: speed)
        } catch {
            throw UsageError(Logger.escaped(error.description))
        }
        for line in track.skipSummary { printError("simulate: skipped " + line) }
        for note in plan.notes { printError(Logger.escaped("simulate: " + note)) }
        let devices = Set(plan.updates.map(\.device))
        for device in devices.sorted() {
            if let problem = DeviceID.problem(with: device) {
                throw UsageError("\(file): device id '\(Logger.escaped(device))': \(problem)")
            }
            if format == .owntracks, device.split(separator: "/").count != 2 {
                throw UsageError(
                    "OwnTracks device ids are USER/DEVICE (topic owntracks/USER/DEVICE); got '\(Logger.escaped(device))': give --device USER/DEVICE")
            }
        }
        let rate = try args.number("rate") ?? 1
        guard rate >= 0 else { throw UsageError("--rate must be 0 or more") }
        let qos = try args.integer("qos", range: 0...2) ?? 1
        guard qos == 0 || qos == 1 else { throw UsageError("--qos expects 0 or 1") }
        let topicTemplate = args["topic"] ?? (format == .owntracks ? "owntracks/{device}" : "devices/{device}/location")
        let first = plan.updates.map(\.time).min() ?? 0
        let last = plan.updates.map(\.time).max() ?? 0
        let trips = try tripFiles(args, file: file, devices: devices)
        let options = try ClientOptions(args, role: "simulate")
        let client = try CountingClient(options.mqtt)
        defer { client.stop() }
        let now = WallClock.now()
        var shift = rate == 1 ? now - first : now - last
        // The play reaches the earliest `by` when the wall clock does (see --help).
        if rate > 0, let by = trips.compactMap(\.request.plan.by).min() {
            shift = ((now + (by - first) / rate - by) * 1000).rounded() / 1000
            let ahead = (last - by) * (1 - 1 / rate)
            if ahead > 0 {
                printError("simulate: the fixes after the trip's by are dated up to \(Int(ahead.rounded(.up))) s ahead of the clock "
                    + "(the gateway drops those more than input.maxFutureSkew ahead)")
            }
        }
        try await publish(trips, shift: shift, prefix: options.config.output.prefix, client: client)
        let clock = MonotonicClock.now()
        var published = 0
        for var update in plan.updates {
            if rate > 0 {
                let wait = clock + (update.time - first) / rate - MonotonicClock.now()
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int(Swift.min(wait, 86_400) * 1000))) }
            }
            update.time += shift
            let topic = topicTemplate.replacing("{device}", with: update.device)
            try client.publish(topic: topic, payload: payload(update, format: format).serializedBytes(), qos: MQTTQoS(qos))
            published += 1
            if !args.has("quiet") {
                print(Logger.escaped("\(ISO8601Time.format(update.time))  \(update.device)  at \(update.lat), \(update.lon)"))
            }
        }
        let deadline = MonotonicClock.now() + 10
        while client.isConnected, client.pendingAcknowledgements > 0, MonotonicClock.now() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        print("published \(published) updates of \(devices.count) device\(devices.count == 1 ? "" : "s")")
        return ExitStatus.ok
    }

    /// The trips to publish: each `--trip FILE`, else the trip file beside `file` (unless
    /// `--no-trip`), checked against the fences of the config (or `--fences`); each trip's
    /// device must be simulated.
    static func tripFiles(_ args: Arguments, file: String, devices: Set<String>) throws -> [TripFile] {
        if args.has("no-trip") {
            guard args.all("trip").isEmpty else { throw UsageError("--no-trip and --trip do not go together") }
            return []
        }
        var paths = args.all("trip")
        if paths.isEmpty, let beside = TripFile.beside(file) { paths = [beside] }
        guard !paths.isEmpty else { return [] }
        let setup: GatewaySetup
        do {
            setup = try GatewaySetup.load(configFile: args["config"], fencesOverride: args["fences"])
        } catch {
            throw UsageError(error.problems.joined(separator: "\n"))
        }
        var trips: [TripFile] = []
        for path in paths {
            let trip = try TripFile.read(
                path, snapshot: setup.snapshot, maxVertices: setup.config.fences.maxVertices, created: WallClock.now())
            if let other = trips.first(where: { $0.id == trip.id }) {
                throw UsageError("\(path): trip id \"\(trip.id)\" is also the id of \(other.file); give each trip its own \"id\"")
            }
            guard devices.contains(trip.request.device) else {
                throw UsageError(Logger.escaped(
                    "\(path): \"device\": \"\(trip.request.device)\" is not simulated (simulated: "
                        + devices.sorted().prefix(5).map { "\"\($0)\"" }.joined(separator: ", ") + (devices.count > 5 ? ", ..." : "")
                        + "); expected one of them (or --device), or --no-trip"))
            }
            trips.append(trip)
        }
        return trips
    }

    /// Publishes each trip, retained (QoS 1), on `PREFIX/trips/TRIP_ID` with its `by` moved by
    /// `shift`, and waits (at most 10 s) for the broker to have them before the first position.
    static func publish(_ trips: [TripFile], shift: Double, prefix: String, client: CountingClient) async throws {
        guard !trips.isEmpty else { return }
        for trip in trips {
            let topic = "\(prefix)/trips/\(trip.id)"
            try client.publish(topic: topic, payload: trip.payload(shiftingBy: shift), qos: .atLeastOnce, retain: true)
            var note = "simulate: trip \(trip.id) from \(trip.file) published on \(topic) (retained)"
            if shift != 0, let by = trip.request.plan.by { note += ", by \(ISO8601Time.format(by + shift, milliseconds: true))" }
            printError(Logger.escaped(note + "; cancel: an empty retained message on that topic"))
        }
        let deadline = MonotonicClock.now() + 10
        while client.isConnected, client.pendingAcknowledgements > 0, MonotonicClock.now() < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The payload of one simulated update.
    static func payload(_ u: LocationUpdate, format: PayloadFormat) -> JSONValue {
        if format == .owntracks { return u.owntracksPayload() }
        var o: JSONObject = ["lat": .number(u.lat), "lon": .number(u.lon), "time": .string(ISO8601Time.format(u.time))]
        if let a = u.accuracy { o["accuracy"] = .number(a) }
        if let s = u.speed { o["speed"] = .number(s) }
        if let h = u.heading { o["heading"] = .number((h * 10).rounded() / 10) }
        return .object(o)
    }
}

/// An MQTT client that counts QoS 1 publications not yet acknowledged, and waits for its
/// first connection.
final class CountingClient: Sendable {
    private struct Ids {
        var pending: Set<Int32> = []
        /// Acknowledgements that arrived before `publish` returned their id.
        var early: Set<Int32> = []
    }

    private final class Tracker: Sendable {
        let ids = Mutex(Ids())
    }

    private let client: MQTTClient
    private let tracker = Tracker()

    init(_ configuration: MQTTConfiguration) throws {
        let tracker = self.tracker
        client = try MQTTClient(configuration, onAcknowledgement: { ack in
            tracker.ids.withLock { if $0.pending.remove(ack.messageId) == nil { $0.early.insert(ack.messageId) } }
        })
        try client.start()
        let deadline = MonotonicClock.now() + 10
        while !client.isConnected, MonotonicClock.now() < deadline { usleep(10_000) }
        guard client.isConnected else {
            client.stop()
            throw UsageError("cannot reach the broker at \(configuration.host):\(configuration.port) within 10 s")
        }
    }

    var isConnected: Bool { client.isConnected }
    var pendingAcknowledgements: Int { tracker.ids.withLock { $0.pending.count } }

    func publish(topic: String, payload: [UInt8], qos: MQTTQoS, retain: Bool = false) throws {
        let id = try client.publish(topic: topic, payload: payload, qos: qos, retain: retain)
        if qos != .atMostOnce {
            tracker.ids.withLock { if $0.early.remove(id) == nil { $0.pending.insert(id) } }
        }
    }

    func stop() { client.stop() }
}
