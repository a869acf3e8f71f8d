import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench load`: where the seconds of loading one large fence layer file go.
///
/// The file holds `bench engine`'s fences as one layer (nine in ten polygons of 6-12
/// vertices, one in ten a point with `properties.buffer` 15, each with an id and a name,
/// positions to 7 decimals). Each
/// run loads it twice: once as `serve` does (``FenceFolder/load(_:maxVertices:)``, then the
/// snapshot with no `triggers` key: one trigger for the layer), timed as a whole, and once step
/// by step (``FenceLoadProfile``): the file read, the JSON parse, reading features into fences
/// (and of that the ring checks), the duplicate-id check, preparing the fences, the snapshot.
/// Times are medians over the runs; the memory per fence is from the first run.
enum LoadBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "load", summary: "where the seconds of loading a large fence file go",
        help: help, run: { try run($0) })

    static let help = """
        Usage: geotrigger bench load [--fences N] [--file FILE] [--runs N]

        Loads one fence layer file of N fences (default 1000000) --runs times (default 3):
          (a) as serve does: the fences folder read in chunks, each feature parsed, checked and
              prepared, then the engine snapshot (no triggers key: one trigger for the layer);
          (b) step by step, each with its own clock: the file read into memory (warm page
              cache), finding and parsing each feature's JSON, reading it into a fence (of
              which the ring checks, timed again after the run), the duplicate-id check,
              preparing the fences (locator, chord pieces, grid), and the snapshot.
        After each (a), a runtime fence is added and removed as the gateway does it (the
        snapshot rebuilt with one more layer of one fence, reusing the live snapshot), timed.
        Prints the median of each time and, from the first run of (a), the memory per fence
        by part (see `geotrigger bench engine --help`).

        The file is `bench engine`'s fences as one layer: nine in ten polygons of 6-12
        vertices 20-60 m across on a 150 m grid, one in ten a point with properties.buffer 15,
        each with an id and properties.name, positions to 7 decimals. It is written to FILE (default
        /tmp/geotrigger-bench-load-N/fences.geojson) unless FILE exists; FILE is kept, so
        `geotrigger check --fences DIR` (or a profiler) can load it again.

        Options:
          --fences N   fences in the generated file (default 1000000)
          --file FILE  the fence file (a folder of its own: (a) loads every file of the folder)
          --runs N     loads of each kind (default 3)
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let args = try Arguments(arguments, valued: ["fences", "file", "runs"], flags: [])
        let fenceCount = Int(try args.number("fences") ?? 1_000_000)
        let runs = Int(try args.number("runs") ?? 3)
        guard fenceCount >= 1, runs >= 1 else { throw UsageError("--fences and --runs must be at least 1") }
        let file = args["file"] ?? "/tmp/geotrigger-bench-load-\(fenceCount)/fences.geojson"
        guard let slash = file.lastIndex(of: "/") else { throw UsageError("--file: give a path with a folder") }
        let folder = String(file[..<slash])
        #if DEBUG
        print("warning: a debug build; build with `swift build -c release` for meaningful figures")
        #endif
        if access(file, F_OK) != 0 {
            let started = ResourceUsage.now()
            try write(fences: fenceCount, to: file, folder: folder)
            print("wrote \(file) in \(EngineBenchmark.ms(ResourceUsage.now() - started))")
        }
        let size = fileSize(file)
        print("bench load: \(file), \(IndexBenchmark.megabytes(size)), \(runs) runs")

        var serveLoad: [Double] = [], serveSnapshot: [Double] = []
        var runtimeAdd: [Double] = [], runtimeRemove: [Double] = []
        var read: [Double] = [], parse: [Double] = [], feature: [Double] = [], validation: [Double] = []
        var ids: [Double] = [], prepare: [Double] = [], snapshotTimes: [Double] = []
        var fences = 0
        for run in 0..<runs {
            // (a) As serve loads it.
            do {
                ResourceUsage.trimHeap()
                let rssBefore = ResourceUsage.residentBytes()
                var t = ResourceUsage.now()
                let (layers, errors) = FenceFolder.load(folder)
                serveLoad.append(ResourceUsage.now() - t)
                guard errors.isEmpty else { throw UsageError("\(folder): \(errors[0])") }
                t = ResourceUsage.now()
                let snapshot = try EngineSnapshot(layers: layers, configTriggers: nil, zones: SystemTimeZones.source)
                serveSnapshot.append(ResourceUsage.now() - t)
                fences = snapshot.fences.count
                if run == 0 {
                    let rssAfter = ResourceUsage.residentBytes()
                    ResourceUsage.trimHeap()
                    let rssTrimmed = ResourceUsage.residentBytes()
                    var memory = FenceMemory()
                    memory.add(snapshot)
                    memory.addArrays(of: layers)
                    print("as serve holds them (layers and snapshot):")
                    print(MemoryBreakdown.table(memory, growth: rssAfter - rssBefore, trimmedGrowth: rssTrimmed - rssBefore))
                }
                // A runtime fence added and removed, as the gateway rebuilds for each
                // (RuntimeFenceBook: the file layers plus a runtime layer, reusing the live snapshot).
                let runtime = FenceLayer(name: "runtime", fences: [runtimeFence(near: layers)])
                t = ResourceUsage.now()
                let added = try EngineSnapshot(
                    layers: layers + [runtime], configTriggers: nil, reusing: snapshot, zones: SystemTimeZones.source)
                runtimeAdd.append(ResourceUsage.now() - t)
                t = ResourceUsage.now()
                let removed = try EngineSnapshot(
                    layers: layers, configTriggers: nil, reusing: added, zones: SystemTimeZones.source)
                runtimeRemove.append(ResourceUsage.now() - t)
                withExtendedLifetime(removed) {}
            }
            ResourceUsage.trimHeap()
            // (b) Step by step.
            do {
                var t = ResourceUsage.now()
                let bytes = try readWhole(file)
                read.append(ResourceUsage.now() - t)
                let (layer, errors, profile) = FenceLoadProfile.run(bytes, file: file, layer: "fences", clock: ResourceUsage.now)
                guard let layer, errors == 0 else { throw UsageError("\(file): not a plain fence file, or \(errors) errors") }
                parse.append(profile.parse)
                feature.append(profile.read)
                validation.append(profile.validation)
                ids.append(profile.ids)
                prepare.append(profile.prepare)
                t = ResourceUsage.now()
                let snapshot = try EngineSnapshot(layers: [layer], configTriggers: nil, zones: SystemTimeZones.source)
                snapshotTimes.append(ResourceUsage.now() - t)
                withExtendedLifetime(snapshot) {}
            }
            ResourceUsage.trimHeap()
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func s(_ values: [Double]) -> String { IndexBenchmark.format(median(values), 2) + " s" }
        func line(_ label: String, _ values: [Double]) {
            print("    " + label.padding(toLength: 64) + s(values).leftPadded(to: 9) + "   (" + values.map { IndexBenchmark.format($0, 2) }.joined(separator: ", ") + ")")
        }
        print("\(IndexBenchmark.grouped(fences)) fences; medians of \(runs) runs (each run's figure in brackets):")
        print("  as serve loads it:")
        line("fence folder read, parsed, checked, prepared (FenceFolder.load)", serveLoad)
        line("engine snapshot", serveSnapshot)
        line("total", zip(serveLoad, serveSnapshot).map { $0 + $1 })
        line("one runtime fence added: snapshot rebuilt reusing the live one", runtimeAdd)
        line("and removed again: snapshot rebuilt reusing that one", runtimeRemove)
        print("  step by step:")
        line("file read into memory (64 KB preads, warm page cache)", read)
        line("find each feature and parse its JSON", parse)
        line("feature value to Fence, checks included (FeatureReader)", feature)
        line("  of which ring checks (intersections, area), timed again", validation)
        line("duplicate-id check", ids)
        line("PreparedFence (locator, chord pieces, grid)", prepare)
        line("engine snapshot (fence keys, watches, index)", snapshotTimes)
        print("peak RSS \(IndexBenchmark.megabytes(ResourceUsage.peakResidentBytes()))")
        return ExitStatus.ok
    }

    /// A 20 m square beside the first fence of `layers`, as a runtime fence (one layer of its own).
    static func runtimeFence(near layers: [FenceLayer]) -> Fence {
        let c = layers.first { !$0.prepared.isEmpty }?.prepared[0].bounds
        let lat = c?.maxLat ?? 0, lon = c?.maxLon ?? 0, d = 0.0002
        let ring = [
            Coordinate(lat: lat, lon: lon), Coordinate(lat: lat, lon: lon + d), Coordinate(lat: lat + d, lon: lon + d),
            Coordinate(lat: lat + d, lon: lon), Coordinate(lat: lat, lon: lon),
        ]
        return Fence(id: "runtime-1", layer: "runtime", geometry: .polygons([Polygon(exterior: ring)]), featureIndex: 1)
    }

    // MARK: The file

    /// Writes `bench engine`'s `fences` fences as one FeatureCollection.
    static func write(fences fenceCount: Int, to file: String, folder: String) throws {
        if access(folder, F_OK) != 0, mkdir(folder, 0o755) != 0 { throw UsageError("cannot create \(folder)") }
        guard let out = fopen(file, "w") else { throw UsageError("cannot write \(file)") }
        defer { fclose(out) }
        var random = SplitMix64(seed: 2026)
        let (layers, _) = EngineBenchmark.layers(fenceCount: fenceCount, random: &random)
        let sites = layers[0].fences, stops = layers[1].fences
        var text = "{\"type\":\"FeatureCollection\",\"features\":[\n"
        var nextSite = 0, nextStop = 0
        // Seven decimals (about 1 cm), as fence files usually carry.
        func position(_ c: Coordinate) -> String { "[\((c.lon * 1e7).rounded() / 1e7),\((c.lat * 1e7).rounded() / 1e7)]" }
        for n in 0..<fenceCount {
            let fence: Fence
            var properties = ""
            if n % 10 == 9 {
                fence = stops[nextStop]
                nextStop += 1
                properties = ",\"buffer\":15"
            } else {
                fence = sites[nextSite]
                nextSite += 1
            }
            let geometry: String
            switch fence.geometry {
            case .points(let points):
                geometry = "{\"type\":\"Point\",\"coordinates\":\(position(points[0]))}"
            case .polygons(let polygons):
                geometry = "{\"type\":\"Polygon\",\"coordinates\":[[" + polygons[0].exterior.map(position).joined(separator: ",") + "]]}"
            case .lines:
                throw UsageError("bench engine made a line")
            }
            text += (n == 0 ? "" : ",\n") + "{\"type\":\"Feature\",\"id\":\"\(fence.id)\",\"properties\":{\"name\":\"\(fence.name ?? "")\"\(properties)},\"geometry\":\(geometry)}"
            if text.utf8.count > 1 << 20 {
                fputs(text, out)
                text = ""
            }
        }
        text += "\n]}\n"
        fputs(text, out)
        guard ferror(out) == 0 else { throw UsageError("cannot write \(file)") }
    }

    static func fileSize(_ file: String) -> Int {
        var info = stat()
        return stat(file, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The whole file, read in 64 KB preads as the fence folder reads it.
    static func readWhole(_ file: String) throws -> [UInt8] {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("cannot read \(file)") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: fileSize(file))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + offset, Swift.min(1 << 16, buffer.count - offset), off_t(offset))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw UsageError("cannot read \(file)") }
            offset += n
        }
        return bytes
    }
}
