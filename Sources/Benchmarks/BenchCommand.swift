import Gateway
/// `geotrigger bench NAME`: the benchmark programs (run them from a release build).
package enum BenchCommand: Subcommand {
    package static let name = "bench"
    package static let forwardsHelp = true
    package static let summary = "run a benchmark (release builds): " + benchmarks.map(\.name).joined(separator: ", ")

    /// One benchmark: each lives in `Sources/Benchmarks/NAMEBenchmark.swift`.
    struct Benchmark: Sendable {
        var name: String
        var summary: String
        var help: String
        var run: @Sendable ([String]) async throws -> Int32
    }

    /// Every benchmark, in the order `--help` lists them.
    static let benchmarks: [Benchmark] = [
        IndexBenchmark.benchmark, EngineBenchmark.benchmark, LoadBenchmark.benchmark, StoreBenchmark.benchmark,
        EndToEndBenchmark.benchmark, ScaleBenchmark.benchmark, EnduranceBenchmark.benchmark,
    ]

    package static var help: String {
        var text = """
            Usage: geotrigger bench NAME [OPTIONS]    (geotrigger bench NAME --help for each)

            Benchmarks report throughput, latency percentiles and peak RSS. Build with
            `swift build -c release` and run .build/release/geotrigger: debug builds are far slower.

            Benchmarks:

            """
        for b in benchmarks { text += "  " + b.name.padding(toLength: 10) + b.summary + "\n" }
        return text
    }

    package static func run(_ arguments: [String]) async throws -> Int32 {
        guard let first = arguments.first else { throw UsageError("name a benchmark") }
        guard let benchmark = benchmarks.first(where: { $0.name == first }) else {
            throw UsageError("unknown benchmark '\(first)'")
        }
        if arguments.dropFirst().contains("--help") {
            print(benchmark.help)
            return ExitStatus.ok
        }
        return try await benchmark.run(Array(arguments.dropFirst()))
    }
}
