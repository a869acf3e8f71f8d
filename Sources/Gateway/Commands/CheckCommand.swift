import GeotriggerCore

/// `geotrigger check`: validates every fence layer (and, later, the config and its expressions).
enum CheckCommand: Subcommand {
    static let name = "check"
    static let summary = "validate every fence file in the fences folder: all errors listed, exit 2"
    static let help = """
        Usage: geotrigger check [--fences DIR] [--config FILE]

        Validates every *.geojson fence layer in the fences folder (default: fences, relative to
        the current directory) and prints every error found, one per line, on standard error:
          FILE:LINE:COLUMN: message                 (invalid JSON)
          FILE: feature N ("NAME"): message         (a defective feature)
        Then exits 2. With no error it prints one summary line and exits 0.

        Each layer is also checked as the trigger used when there is no config file (one trigger
        per layer, named after it, with the layer's "geotrigger" defaults): a Point or Line fence
        needs an effective buffer > 0.

        Options:
          --fences DIR     the fences folder to check (default: fences)
          --config FILE    the config file (not supported yet: exits 2)
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config", "fences"], flags: [])
        if let unexpected = args.positionals.first { throw UsageError("unexpected argument '\(unexpected)'") }
        if let config = args["config"] {
            throw UsageError(
                "config files are not supported yet (--config \(config)); run without --config to check the fences folder")
        }
        let report = check(fencesFolder: args["fences"] ?? "fences")
        for line in report.errors { printError(line) }
        if report.errors.isEmpty {
            print(report.summary)
            return ExitStatus.ok
        }
        printError(report.summary)
        return ExitStatus.usage
    }

    /// Every error of the fences folder, in file order, and a one-line summary.
    static func check(fencesFolder: String) -> (errors: [String], summary: String) {
        let (layers, loadErrors) = FenceFolder.load(fencesFolder)
        var errors = loadErrors
        for layer in layers { errors += layer.defaultTriggerErrors() }
        // Keep each file's errors together, files in name order (load order).
        let order = Dictionary(layers.enumerated().map { ($1.file, $0) }, uniquingKeysWith: { a, _ in a })
        let sorted = errors.enumerated().sorted { x, y in
            let fx = order[x.element.file] ?? -1, fy = order[y.element.file] ?? -1
            return fx != fy ? fx < fy : x.offset < y.offset
        }.map(\.element.description)
        let fences = layers.reduce(0) { $0 + $1.fences.count }
        let summary: String
        if sorted.isEmpty {
            summary = "\(fencesFolder): \(plural(layers.count, "layer")), \(plural(fences, "fence")), no errors"
        } else {
            let files = Set(errors.map(\.file)).count
            summary = "\(fencesFolder): \(plural(sorted.count, "error")) in \(plural(files, "file"))"
        }
        return (sorted, summary)
    }

    static func plural(_ n: Int, _ word: String) -> String { n == 1 ? "1 \(word)" : "\(n) \(word)s" }
}
