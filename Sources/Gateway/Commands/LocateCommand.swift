import GeotriggerCore

/// `geotrigger locate LAT LON`: which fences contain or are near a point, per trigger.
enum LocateCommand: Subcommand {
    static let name = "locate"
    static let summary = "which fences contain or are near a point (per trigger)"
    static let help = """
        Usage: geotrigger locate LAT LON [--accuracy M] [--json] [--fences DIR] [--config FILE]

        Lists every fence whose buffered boundary is within 100 m of the point (or within the
        accuracy radius, if larger), for every trigger watching it, nearest first: whether the
        point is inside by that trigger's geometry rule (its effective buffer, accuracyMode and
        spatialRelationship) and the signed distance in metres to the buffered boundary
        (negative inside), and whether the trigger's schedule includes the present moment
        (SCHEDULE: yes, or no when its events would not be published now; a trigger without
        schedule is always yes). LAT and LON are WGS84 degrees; negative values are fine.

        Control characters in fence names are printed as escapes (\\u{1b}, in JSON \\u001b).

        The triggers are the config's (without a config file, or without a `triggers` key:
        one per fence layer, named after it, with the layer's "geotrigger" defaults).

        Options:
          --accuracy M     the point's horizontal accuracy in metres (68 % radius)
          --json           print one JSON array of {"trigger", "layer", "fence", "name",
                           "inside", "distance", "inSchedule"}
          --fences DIR     the fences folder (default: gateway.fences, else fences)
          --config FILE    the config file: its fences folder and triggers
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config", "fences", "accuracy"], flags: ["json"])
        guard args.positionals.count == 2 else {
            throw UsageError(args.positionals.count < 2 ? "expected LAT LON" : "unexpected argument '\(args.positionals[2])'")
        }
        guard let lat = Double(args.positionals[0]), lat.isFinite, abs(lat) <= 90 else {
            throw UsageError("LAT must be a latitude in degrees (-90...90), got '\(args.positionals[0])'")
        }
        guard let lon = Double(args.positionals[1]), lon.isFinite, abs(lon) <= 180 else {
            throw UsageError("LON must be a longitude in degrees (-180...180), got '\(args.positionals[1])'")
        }
        let accuracy = try args.number("accuracy")
        if let accuracy, accuracy < 0 { throw UsageError("--accuracy must be 0 or more metres") }
        let snapshot: EngineSnapshot
        do {
            snapshot = try GatewaySetup.load(configFile: args["config"], fencesOverride: args["fences"]).snapshot
        } catch {
            for problem in error.problems { printError(problem) }
            return ExitStatus.usage
        }
        let results = snapshot.locate(Coordinate(lat: lat, lon: lon), accuracy: accuracy, at: WallClock.now())
        if args.has("json") {
            print(ControlCharacters.escapedJSON(JSONValue.array(results.map(\.json)).serialized()))
        } else {
            print(table(results, lat: lat, lon: lon, within: max(100, accuracy ?? 0)))
        }
        return ExitStatus.ok
    }

    /// The text output: one row per (trigger, fence), or a line saying there is none.
    static func table(_ results: [LocateResult], lat: Double, lon: Double, within: Double) -> String {
        guard !results.isEmpty else {
            return "no fence within \(LocateCommand.metres(within)) of \(lat), \(lon)"
        }
        let header = ["TRIGGER", "LAYER", "FENCE", "NAME", "INSIDE", "SCHEDULE", "DISTANCE"]
        // Names come from fence files: escaped before the columns are measured.
        let rows = results.map {
            [$0.trigger, $0.layer, $0.fence, $0.name ?? "-", $0.inside ? "yes" : "no", $0.inSchedule == false ? "no" : "yes",
             metres($0.distance)].map { Logger.escaped($0) }
        }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (i, cell) in cells.enumerated() {
                if i == cells.count - 1 {
                    text += String(repeating: " ", count: widths[i] - cell.count) + cell  // numbers right-aligned
                } else {
                    text += cell + String(repeating: " ", count: widths[i] - cell.count + 2)
                }
            }
            return text
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }

    /// `12.3 m`, `-4.0 m`.
    static func metres(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10) m"
    }
}
