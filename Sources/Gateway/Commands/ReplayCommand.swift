import FoundationEssentials
import GeotriggerCore

/// `geotrigger replay TRACK`: the engine offline over a recorded track.
enum ReplayCommand: Subcommand {
    static let name = "replay"
    static let summary = "run a recorded track through the triggers offline; print events, draw an SVG"
    static let help = """
        Usage: geotrigger replay TRACK [--config FILE] [--fences DIR] [--json] [--svg OUT]
                                 [--device ID] [--speed M/S] [--format F]

        Runs TRACK through the same engine as `serve`, with the monitors' clock driven by the
        track's fix times (so the result is the same every time), and prints the events:
        one line each, or with --json one event per line in exactly the MQTT event schema.
        After the last fix the clock runs on for one hour, so that holds (enterAfter,
        exitAfter), dwell and staleAfter decided by silence still show. Events outside their
        trigger's schedule (judged by the fix-time clock, as `serve` judges them) are left out
        and counted in the summary on standard error. Control characters in fence names,
        messages and device ids are printed as escapes (\\u{1b}, in JSON \\u001b).

        TRACK: GPX (with times), GeoJSON LineString (times from properties.coordTimes), an
        OwnTracks recorder file, an NMEA log, or JSON lines of {device, lat, lon, time, accuracy}.
        A bad record in them is an error naming its line, except in NMEA logs: sentences
        without a fix, with a wrong or no checksum, or with fields that cannot be read are
        skipped, and standard error says how many, one line per reason
        (replay: skipped 2 NMEA sentences: no fix).

        Options:
          --config FILE   fences folder, triggers and gateway id of this config
          --fences DIR    the fences folder (default: gateway.fences, else fences)
          --json          one event per line, as published on PREFIX/events/TRIGGER/DEVICE
          --svg OUT       also draw the fences (with buffers), the track and every event to OUT
          --device ID     the device id of points that carry none (default: replay)
          --speed M/S     walk a track without times at this speed (from its vertices)
          --start TIME    the first fix time of such a walk (default 2026-01-01T00:00:00Z)
          --format F      the track format when the file name and content do not tell
                          (geojson, gpx, owntracks, nmea, jsonl)

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
        let startText = args["start"] ?? "2026-01-01T00:00:00Z"
        guard let start = ISO8601Time.parse(startText) ?? Double(startText) else {
            throw UsageError("--start expects an ISO-8601 time or epoch seconds, got '\(startText)'")
        }
        let updates: [LocationUpdate]
        do {
            let track = try TrackReader.read([UInt8](data), file: file, format: format)
            for line in track.skipSummary { printError("replay: skipped " + line) }
            updates = try track.replayUpdates(file: file, defaultDevice: args["device"] ?? "replay", speed: speed, start: start)
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
