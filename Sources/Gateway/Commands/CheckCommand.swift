import GeotriggerCore

/// `geotrigger check`: validates the config, every fence layer and every trigger expression.
enum CheckCommand: Subcommand {
    static let name = "check"
    static let summary = "validate the config, every fence file and every expression: all errors listed, exit 2"
    static let help = """
        Usage: geotrigger check [--config FILE] [--fences DIR]

        Validates what `serve` would load, and prints every error found, one per line, on
        standard error, then exits 2; with no error it prints one summary line and exits 0:
          - the config file (unknown or duplicate keys, wrong types, out-of-range values):
              FILE:LINE:COLUMN: key.path: message
          - every *.geojson fence layer of the fences folder (gateway.fences, default fences):
              FILE:LINE:COLUMN: message                 (invalid JSON)
              FILE: feature N ("NAME"): message         (a defective feature)
          - every trigger (config triggers, or one per layer without a `triggers` key) with its
            layer defaults and Arcade expressions (message, filter, where); a Point or Line fence
            whose effective buffer is 0 in some trigger; schedules (time zones that
            /usr/share/zoneinfo does not have, days, HH:MM times, empty windows).

        Options:
          --config FILE    the config file (default: none, every key has its default)
          --fences DIR     check this fences folder instead of gateway.fences
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config", "fences"], flags: [])
        if let unexpected = args.positionals.first { throw UsageError("unexpected argument '\(unexpected)'") }
        let report = check(configFile: args["config"], fencesFolder: args["fences"])
        for line in report.notes { print(line) }
        for line in report.errors { printError(line) }
        if report.errors.isEmpty {
            print(report.summary)
            return ExitStatus.ok
        }
        printError(report.summary)
        return ExitStatus.usage
    }

    /// Every error of the config, fences and triggers, notes worth knowing (layers that have
    /// no file and so are runtime layers: a misspelt layer name shows here), and a summary.
    static func check(configFile: String? = nil, fencesFolder: String?) -> (errors: [String], notes: [String], summary: String) {
        do {
            // A long fence load says how far it is, on standard error.
            let setup = try GatewaySetup.load(
                configFile: configFile, fencesOverride: fencesFolder, progress: FenceLoadProgress(logger: Logger(label: "geotrigger")))
            let folder = fencesFolder ?? setup.config.resolve(setup.config.gateway.fences)
            let notes = setup.runtimeLayers.map {
                "note: layer \"\($0)\" has no file in \(folder): it is a runtime layer, its fences arrive on \(setup.config.output.prefix)/fences/\($0)/FENCE_ID"
            }
            let fileLayers = setup.layers.count - setup.runtimeLayers.count
            let fences = setup.layers.reduce(0) { $0 + $1.fenceCount }
            let triggers = Set(setup.snapshot.settings.map(\.trigger)).count
            return ([], notes, "\(folder): \(plural(fileLayers, "layer")), \(plural(fences, "fence")), \(plural(triggers, "trigger")), no errors")
        } catch {
            return (error.problems, [], "\(plural(error.problems.count, "error")) found")
        }
    }

    static func plural(_ n: Int, _ word: String) -> String { n == 1 ? "1 \(word)" : "\(n) \(word)s" }
}
