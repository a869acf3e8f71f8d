import FoundationEssentials
import GeotriggerCore

/// `geotrigger replay TRACK`: the engine offline over a recorded track.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let summary = "run a recorded track through the triggers offline; print events, draw an SVG"
    static let help = """
        Usage: geotrigger replay TRACK [--config FILE] [--fences DIR] [--json] [--svg OUT]
                                 [--device ID] [--speed M/S] [--start TIME] [--format F]

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

        Tune hysteresis by replaying a jittery track with different triggers (enterAfter,
        exitAfter, exitMargin, accuracyMode) and comparing the events and pictures.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config", "fences", "svg", "device", "speed", "format", "start"], flags: ["json"])
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
        let run = ReplayRun(updates: updates, snapshot: setup.snapshot, maxAccuracy: setup.config.input.maxAccuracy)
        for decision in run.decisions {
            let n = decision.notification
            if args.has("json") {
                print(ControlCharacters.escapedJSON(n.eventJSON(gateway: setup.config.gateway.id, emitted: decision.decidedAt).serialized()))
            } else {
                var line = "\(ISO8601Time.format(n.position.time))  \(n.type.rawValue.padding(toLength: 5))\(n.device)  "
                    + "\(n.layer)/\(n.fenceID)" + (n.fenceName.map { " (\($0))" } ?? "") + "  trigger \(n.trigger)"
                if n.inferred { line += "  inferred" }
                if let reason = n.reason, reason != .moved { line += "  reason \(reason.rawValue)" }
                if let dwell = n.dwellSeconds { line += "  after \(Int(dwell.rounded())) s" }
                if let speed = n.speed, let limit = n.speedLimit {
                    line += "  \((speed * 10).rounded() / 10) m/s, limit \((limit * 10).rounded() / 10) m/s"
                }
                if let message = n.message?.message { line += "  \"\(message)\"" }
                print(Logger.escaped(line))
            }
        }
        let drops = run.dropped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
        printError("replay: \(updates.count) updates (\(run.accepted) accepted\(drops.isEmpty ? "" : ", " + drops.joined(separator: ", "))), \(run.decisions.count) events"
            + (run.outsideSchedule > 0 ? " (\(run.outsideSchedule) outside their schedule, not shown)" : ""))
        if let out = args["svg"] {
            let svg = ReplaySVG().render(updates: updates, decisions: run.decisions, snapshot: setup.snapshot)
            guard FileManager.default.createFile(atPath: out, contents: Data(svg.utf8)) else {
                throw UsageError("--svg \(out): cannot write the file")
            }
        }
        return ExitStatus.ok
    }
}
