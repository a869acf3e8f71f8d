import FoundationEssentials
import GeotriggerCore

/// `geotrigger replay TRACK`: the engine offline over a recorded track.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let summary = "run a recorded track through the triggers offline; print events, draw an SVG"
    static let help = """
        Usage: geotrigger replay TRACK [--config FILE] [--fences DIR] [--json] [--svg OUT]
                                 [--device ID] [--speed M/S] [--start TIME] [--format F]
                                 [--trip FILE]... [--no-trip]

        Runs TRACK through the same engine as `serve`, with the monitors' clock driven by the
        track's fix times (so the result is the same every time), and prints the events:
        one line each, or with --json one event per line in exactly the MQTT event schema.
        After the last fix the clock runs on for one hour, so that holds (enterAfter,
        exitAfter), dwell and staleAfter decided by silence still show. Events outside their
        trigger's schedule (judged by the fix-time clock, as `serve` judges them) are left out
        and counted in the summary on standard error. Control characters in fence names,
        messages and device ids are printed as escapes (\\u{1b}, in JSON \\u001b).

        TRACK: GPX 1.0 or 1.1 (tracks with times, as GPS devices and apps export them), TCX
        (Garmin Training Center activities), KML gx:Track (Google), GeoJSON LineString (times
        from properties.coordTimes), an OwnTracks recorder file, an NMEA log, or JSON lines of
        {device, lat, lon, time, accuracy}.

        GPX: every track (trk) is a device named after the track, its segments one after the
        other; a name that is no valid device id is made into one, and standard error says so
        (Garmin's "ACTIVE LOG #2" is device "ACTIVE LOG 2": '+', '#', control characters,
        empty levels and a leading '$' are dropped). A track without any time (a track saved
        on a Garmin) is skipped, or walked with --speed; points without a time in a timed
        track are skipped. Waypoints, and routes in a file with tracks, are ignored;
        extensions other than speed and course are not read. Standard error says what was
        ignored or skipped, by track and count (replay: skipped track 2 "Saved" (line 40):
        none of its 57 points has a time (--speed walks it)). Several devices are merged by
        fix time. TCX and KML are read the same way: a TCX activity (its laps one after the
        other) has no name, so its device is "replay"; trackpoints without a position are
        skipped, courses beside activities ignored. Each KML gx:Track is a track named after
        its Placemark; LineStrings beside tracks and Point placemarks are ignored.

        A bad record is an error naming its line, except in NMEA logs: sentences without a
        fix, with a wrong or no checksum, or with fields that cannot be read are skipped, and
        standard error says how many, one line per reason
        (replay: skipped 2 NMEA sentences: no fix).

        Options:
          --config FILE   fences folder, triggers and gateway id of this config
          --fences DIR    the fences folder (default: gateway.fences, else fences)
          --json          one event per line, as published on PREFIX/events/TRIGGER/DEVICE
          --svg OUT       also draw the fences (with buffers), the track and every event to OUT
          --device ID     one device id for every point of the file (default: each track's
                          name, else the file's own device ids, else "replay")
          --speed M/S     walk the tracks without times at this speed (from their vertices)
          --start TIME    the first fix time of such a walk (default: a second after the
                          file's last fix, else 2026-01-01T00:00:00Z)
          --format F      the track format when the file name and content do not tell
                          (geojson, gpx, tcx, kml, owntracks, nmea, jsonl)
          --trip FILE     follow the trip of this trip file (repeat for several trips);
                          default: the trip file beside TRACK, if there is one
          --no-trip       follow no trip, not even the one beside TRACK

        Trips: a trip file holds the JSON a dispatcher publishes on PREFIX/trips/TRIP_ID
        ({"device", "route", "corridor", "to", "by", "offRouteAfter", "speedLimit"}, see
        docs/trips.md) plus "id", the trip id (default: the file's name without .trip.json).
        TRACK's own trip file is found beside it: the track's name with .trip.json for its
        extension (routes/van-run.jsonl: routes/van-run.trip.json), unless --trip or --no-trip
        is given. Each trip is followed from the first fix by the same rules as in `serve`, and
        its events (tripStarted, offRoute, backOnRoute, late, arrived, missed) are printed
        among the fence events, their trigger "trips"; standard error says where each trip
        ended. A route or `to` given as {"layer", "fence"} is looked up in the fences loaded
        here; a GeoJSON LineString route is taken as it is. `by` is read on the replay's
        clock, the fix times: a trip not arrived when the fix times pass `by` is missed then.

        Tune hysteresis by replaying a jittery track with different triggers (enterAfter,
        exitAfter, exitMargin, accuracyMode) and comparing the events and pictures.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(
            arguments, valued: ["config", "fences", "svg", "device", "speed", "format", "start"], repeated: ["trip"],
            flags: ["json", "no-trip"])
        guard args.positionals.count == 1 else { throw UsageError("expected one TRACK file") }
        let file = args.positionals[0]
        let setup: GatewaySetup
        do {
            setup = try GatewaySetup.load(configFile: args["config"], fencesOverride: args["fences"])
        } catch {
            for problem in error.problems { printError(problem) }
            return ExitStatus.usage
        }
        guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("\(file): cannot read the track file") }
        var format: TrackFormat?
        if let name = args["format"] {
            guard let f = TrackFormat(name: name) else { throw UsageError("--format: unknown track format '\(name)'") }
            format = f
        }
        let speed = try args.number("speed")
        var start: Double?
        if let startText = args["start"] {
            guard let time = ISO8601Time.parse(startText) ?? Double(startText) else {
                throw UsageError("--start expects an ISO-8601 time or epoch seconds, got '\(startText)'")
            }
            start = time
        }
        if let device = args["device"], let problem = DeviceID.problem(with: device) {
            throw UsageError("--device '\(Logger.escaped(device))': \(problem)")
        }
        let updates: [LocationUpdate]
        do {
            let track = try TrackReader.read([UInt8](data), file: file, format: format)
            for line in track.skipSummary { printError("replay: skipped " + line) }
            let plan = try track.replayPlan(file: file, device: args["device"], speed: speed, start: start)
            for note in plan.notes { printError(Logger.escaped("replay: " + note)) }
            updates = plan.updates
        } catch {
            throw UsageError(Logger.escaped(error.description))  // it may quote the file's text
        }
        for device in Set(updates.map(\.device)) {
            if let problem = DeviceID.problem(with: device) {
                throw UsageError("\(file): device id '\(Logger.escaped(device))': \(problem)")
            }
        }
        let trips = try tripFiles(args, track: file, setup: setup, updates: updates)
        let run = ReplayRun(
            updates: updates, snapshot: setup.snapshot, maxAccuracy: setup.config.input.maxAccuracy, trips: trips.map(\.request))
        let emission = TripEmission(gatewayID: setup.config.gateway.id, prefix: setup.config.output.prefix, qos: setup.config.output.qos)
        for entry in run.entries {
            switch entry {
            case .fence(let decision): print(fenceLine(decision, gateway: setup.config.gateway.id, json: args.has("json")))
            case .trip(let decision): print(tripLine(decision, emission: emission, json: args.has("json")))
            }
        }
        let drops = run.dropped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        printError("replay: \(updates.count) updates (\(run.accepted) accepted\(drops.isEmpty ? "" : ", " + drops.joined(separator: ", "))), \(run.decisions.count) events"
            + (run.tripDecisions.isEmpty ? "" : " and \(run.tripDecisions.count) trip events")
            + (run.outsideSchedule > 0 ? " (\(run.outsideSchedule) outside their schedule, not shown)" : ""))
        for trip in run.trips { printError(Logger.escaped(tripSummary(trip))) }
        if let out = args["svg"] {
            let svg = ReplaySVG().render(
                updates: updates, decisions: run.decisions, snapshot: setup.snapshot, trips: run.trips, tripDecisions: run.tripDecisions)
            guard FileManager.default.createFile(atPath: out, contents: Data(svg.utf8)) else {
                throw UsageError("--svg \(out): cannot write the file")
            }
        }
        return ExitStatus.ok
    }

    /// The trips to follow: each `--trip FILE`, else the trip file beside `track` (unless
    /// `--no-trip`), read against the fences loaded; each trip's device must have fixes.
    static func tripFiles(_ args: Arguments, track: String, setup: GatewaySetup, updates: [LocationUpdate]) throws -> [TripFile] {
        if args.has("no-trip") {
            guard args.all("trip").isEmpty else { throw UsageError("--no-trip and --trip do not go together") }
            return []
        }
        var paths = args.all("trip")
        if paths.isEmpty, let beside = TripFile.beside(track) { paths = [beside] }
        let devices = Set(updates.map(\.device))
        var trips: [TripFile] = []
        for path in paths {
            let trip = try TripFile.read(
                path, snapshot: setup.snapshot, maxVertices: setup.config.fences.maxVertices, created: updates.first?.time ?? 0)
            if let other = trips.first(where: { $0.id == trip.id }) {
                throw UsageError("\(path): trip id \"\(trip.id)\" is also the id of \(other.file); give each trip its own \"id\"")
            }
            guard devices.contains(trip.request.device) else {
                throw UsageError(Logger.escaped(
                    "\(path): \"device\": \"\(trip.request.device)\" has no fix in \(track) (its devices: "
                        + devices.sorted().map { "\"\($0)\"" }.joined(separator: ", ") + "); expected one of them (or --device), or --no-trip"))
            }
            printError(Logger.escaped("replay: trip \(trip.id) from \(path): device \(trip.request.device), route of \(Int(trip.request.plan.route.length.rounded())) m"))
            trips.append(trip)
        }
        return trips
    }

    /// One fence event: with `json`, exactly as `serve` publishes it (emitted at its decision's
    /// clock reading); else one line.
    static func fenceLine(_ decision: ReplayRun.Decision, gateway: String, json: Bool) -> String {
        let n = decision.notification
        if json { return ControlCharacters.escapedJSON(n.eventJSON(gateway: gateway, emitted: decision.decidedAt).serialized()) }
        var line = "\(ISO8601Time.format(n.position.time))  \(n.type.rawValue.padding(toLength: 5))\(n.device)  "
            + "\(n.layer)/\(n.fenceID)" + (n.fenceName.map { " (\($0))" } ?? "") + "  trigger \(n.trigger)"
        if n.inferred { line += "  inferred" }
        if let reason = n.reason, reason != .moved { line += "  reason \(reason.rawValue)" }
        if let dwell = n.dwellSeconds { line += "  after \(Int(dwell.rounded())) s" }
        if let speed = n.speed, let limit = n.speedLimit {
            line += "  \((speed * 10).rounded() / 10) m/s, limit \((limit * 10).rounded() / 10) m/s"
        }
        if let message = n.message?.message { line += "  \"\(message)\"" }
        return Logger.escaped(line)
    }

    /// One trip event: with `json`, exactly as `serve` publishes it on `PREFIX/events/trips/DEVICE`
    /// (emitted at its fix time); else one line like a fence event's, the trip in place of the fence.
    static func tripLine(_ decision: ReplayRun.TripDecision, emission: TripEmission, json: Bool) -> String {
        let event = decision.event, run = decision.trip
        if json { return ControlCharacters.escapedJSON(emission.eventJSON(event, of: run, emitted: decision.decidedAt).serialized()) }
        let f = event.figures
        var figures = "along \(Int(f.along.rounded())) m, \(Int(f.remaining.rounded())) m to go"
        if let offBy = f.offBy { figures += ", \(Int(offBy.rounded())) m off" }
        if let eta = f.eta, eta.isFinite { figures += ", ETA \(ISO8601Time.format(eta.rounded()))" }
        let line = "\(ISO8601Time.format(event.time))  \(event.kind.rawValue.padding(toLength: 5))\(run.device)  trip \(run.id)  "
            + "trigger \(TripEmission.trigger)  \(figures)  \"\(TripEmission.message(event, of: run))\""
        return Logger.escaped(line)
    }

    /// Where a trip stood at the end of the replay, for standard error.
    static func tripSummary(_ run: TripRun) -> String {
        let p = run.progress
        var line = "replay: trip \(run.id): \(p.state.rawValue), along \(Int(p.along.rounded())) of \(Int(p.plan.route.length.rounded())) m"
        if let by = p.plan.by { line += ", by \(ISO8601Time.format(by))" }
        if let time = p.lastTime { line += ", last fix \(ISO8601Time.format(time))" } else { line += ", no fix of \(run.device)" }
        return line
    }
}
