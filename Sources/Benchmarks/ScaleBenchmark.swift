import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench scale`: the scale targets (docs/performance.md "Summary") in one command, each
/// measured by the benchmark that owns it, run as a child process of its own so that one
/// run's memory never counts in another's.
enum ScaleBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "scale", summary: "a million fences and a hundred thousand devices, against the scale targets",
        help: help, run: { try await run($0) })

    static let help = """
        Usage: geotrigger bench scale [--fences N] [--devices D] [--duration S] [--rounds R]

        The scale targets (for 1,000,000 fences and 100,000 devices) with N fences (default
        1000000) and D devices (default 100000):
          1. the fence file `bench load` writes (nine in ten polygons of 6-12 vertices, one in ten
             a buffered point; /tmp/geotrigger-bench-load-N/fences.geojson, written if missing);
          2. `geotrigger check --fences` on its folder, timed (target: under 10 s at 1M);
          3. `bench e2e --fence-folder` on it: a private mosquitto and a real `geotrigger serve`,
             the seconds to `started` (target: under 10 s), the resident memory after the load
             and after D devices drove S seconds (default 10) through it (target: under 1 GB),
             the rate with none lost;
          4. `bench engine --devices D --fences N --rounds R` (default 3): the engine's updates
             per CPU second on one thread (target: at least 1,000,000).
        Each step's own output is kept in /tmp/geotrigger-bench-scale-N/ (check.log, e2e.log,
        engine.log); the summary names each figure, its target and whether it is met.
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    /// One line of the summary.
    struct Figure {
        var name: String
        var value: String
        var target: String
        var met: Bool?
    }

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["fences", "devices", "duration", "rounds"], flags: [])
        func count(_ name: String, _ fallback: Int) throws -> Int {
            guard let value = try args.number(name) else { return fallback }
            guard value >= 1, value == value.rounded(), value < 1e9 else { throw UsageError("--\(name) expects a whole number >= 1") }
            return Int(value)
        }
        let fences = try count("fences", 1_000_000), devices = try count("devices", 100_000)
        let duration = try count("duration", 10), rounds = try count("rounds", 3)
        let folder = "/tmp/geotrigger-bench-load-\(fences)", file = folder + "/fences.geojson"
        let work = "/tmp/geotrigger-bench-scale-\(fences)"
        if access(work, F_OK) != 0, mkdir(work, 0o755) != 0 { throw UsageError("cannot create \(work)") }
        #if DEBUG
        print("warning: a debug build; build with `swift build -c release` for meaningful figures")
        #endif
        if access(file, F_OK) != 0 {
            let started = ResourceUsage.now()
            try LoadBenchmark.write(fences: fences, to: file, folder: folder)
            print("wrote \(file) in \(EngineBenchmark.ms(ResourceUsage.now() - started))")
        }
        print("bench scale: \(fences) fences (\(IndexBenchmark.megabytes(LoadBenchmark.fileSize(file)))), \(devices) devices")
        var figures: [Figure] = []

        // 2. check
        var started = ResourceUsage.now()
        let check = try child(["check", "--fences", folder], log: work + "/check.log", timeout: 1_800)
        let checkSeconds = ResourceUsage.now() - started
        figures.append(Figure(
            name: "geotrigger check --fences", value: check == 0 ? seconds(checkSeconds) : "exit \(check.map(String.init) ?? "timeout")",
            target: "under 10 s", met: check == 0 && checkSeconds < 10))

        // 3. serve through a real broker
        started = ResourceUsage.now()
        let e2eArguments = ["bench", "e2e", "--fence-folder", folder, "--devices", "\(devices)", "--duration", "\(duration)", "--skip-raw", "--json"]
        guard try child(e2eArguments, log: work + "/e2e.log", timeout: 3_600) == 0,
              case .object(let summary)? = lastJSONLine(work + "/e2e.log"), case .object(let gateway)? = summary["gateway"]
        else { throw UsageError("bench e2e failed; its output is in \(work)/e2e.log") }
        func number(_ key: String) -> Double { gateway[key]?.numberValue ?? .nan }
        let startup = number("startupSeconds"), idle = number("idleRSSMB"), end = number("endRSSMB"), peak = number("peakRSSMB")
        let memoryLimit = 1024.0
        figures.append(Figure(name: "serve: loaded and started", value: seconds(startup), target: "under 10 s", met: startup < 10))
        figures.append(Figure(name: "serve: RSS after the load", value: megabytes(idle), target: "under \(megabytes(memoryLimit))", met: idle < memoryLimit))
        figures.append(Figure(name: "serve: RSS after \(devices) devices drove \(duration) s", value: megabytes(end) + " (peak " + megabytes(peak) + ")",
                              target: "under \(megabytes(memoryLimit))", met: end < memoryLimit))
        let lost = number("lost"), rate = number("rate")
        figures.append(Figure(name: "serve: updates per second, none lost", value: "\(Int(rate.isFinite ? rate : 0)) (\(Int(lost.isFinite ? lost : -1)) lost)",
                              target: "none lost", met: lost == 0))
        print("e2e took \(seconds(ResourceUsage.now() - started))")

        // 4. the engine alone
        guard try child(["bench", "engine", "--devices", "\(devices)", "--fences", "\(fences)", "--rounds", "\(rounds)"], log: work + "/engine.log", timeout: 3_600) == 0,
              let engineRate = firstRate(work + "/engine.log")
        else { throw UsageError("bench engine failed; its output is in \(work)/engine.log") }
        figures.append(Figure(name: "engine: updates per CPU second", value: "\(engineRate)", target: "at least 1000000", met: engineRate >= 1_000_000))

        print("")
        for f in figures {
            let verdict = f.met.map { $0 ? "met" : "NOT met" } ?? ""
            print(f.name.padding(toLength: 44) + f.value.padding(toLength: 26) + f.target.padding(toLength: 18) + verdict)
        }
        print("(outputs in \(work); the targets are those of 1,000,000 fences and 100,000 devices)")
        return ExitStatus.ok
    }

    /// Runs this executable with `arguments`, its output into `log` (a new one); its exit status, nil when
    /// it ran past `timeout` seconds (then it is stopped).
    static func child(_ arguments: [String], log: String, timeout: Double) throws -> Int32? {
        // The child appends to its log: a log of an earlier run would be read instead.
        unlink(log)
        let process = try ChildProcess(ChildProcess.currentExecutable(), arguments, logPath: log)
        if let status = process.wait(timeout: timeout) { return status }
        _ = process.stop()
        return nil
    }

    /// The last line of `file` that is a JSON object.
    static func lastJSONLine(_ file: String) -> JSONValue? {
        guard let text = ChildProcess.read(file) else { return nil }
        for line in text.split(separator: "\n").reversed() where line.hasPrefix("{") {
            if let value = try? JSONReader.parseValue(Array(line.utf8), file: file, dialect: .json) { return value }
        }
        return nil
    }

    /// The first "N updates per CPU second" of `bench engine`'s output (its drive without
    /// crossings).
    static func firstRate(_ file: String) -> Int? {
        guard let text = ChildProcess.read(file) else { return nil }
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            for i in words.indices.dropFirst() where words[i...].starts(with: ["updates", "per", "CPU", "second"]) {
                if let rate = Int(words[i - 1]) { return rate }
            }
        }
        return nil
    }

    static func seconds(_ value: Double) -> String { IndexBenchmark.format(value, 2) + " s" }
    static func megabytes(_ value: Double) -> String { IndexBenchmark.format(value, 0) + " MB" }
}
