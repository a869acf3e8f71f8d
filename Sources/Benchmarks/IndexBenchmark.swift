import Gateway
import FoundationEssentials
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger bench index`: point evaluations per second against the fence index.
///
/// An evaluation is what the engine does for one position: one ``FenceIndex`` query for the
/// point, then the exact test of every candidate (inside the polygon when it has no buffer,
/// else the bounded signed distance against the buffer), giving the set of fences that
/// contain the point or hold it within their buffer.
enum IndexBenchmark {
    static let benchmark = BenchCommand.Benchmark(
        name: "index", summary: "point evaluations per second against the fence index",
        help: help, run: { try run($0) })

    static let help = """
        Usage: geotrigger bench index [--taxi FILE] [--fences N] [--vertices V] [--seconds S] [--points N]

        Point evaluations per second on one core (index query + exact test of every candidate:
        inside the polygon, or within the buffer by the bounded signed distance), index build
        time and memory, for random points over the area of:
          (a) the NYC taxi zones (263 real polygons, up to 7,814 vertices);
          (b) a synthetic city: N polygons of V vertices, 60 to 250 m across, over 40 x 40 km,
              plus N/20 buffered points and N/20 buffered lines (generated deterministically).
        Figures are per CPU second (the machine may be shared) and per wall-clock second.

        Each data set also gets its memory per fence by part (coordinates, spatial index,
        prepared containment and distance structures, PreparedFence objects, ids/names/properties,
        the benchmark's per-fence arrays as "snapshot tables", the [Fence] array as "layer
        arrays"), counted from the structures' capacities and element sizes with glibc malloc's
        block sizes, against the resident growth from reading or generating the fences through
        the index build (before and after malloc_trim); "other" is the growth not accounted for
        (negative for the city when it reuses heap the taxi zones freed).

        Options:
          --taxi FILE    taxi zones GeoJSON (default Tests/Fixtures/geometry/nyc-taxi-zones.geojson)
          --fences N     synthetic polygons (default 10000)
          --vertices V   vertices of each synthetic polygon (default 50; 3 or more): fences of
                         up to 32 edges are tested edge by edge, larger ones through cells
          --seconds S    time spent evaluating per data set (default 3)
          --points N     distinct random query points per data set (default 200000)
        Build with `swift build -c release` and run .build/release/geotrigger.
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let args = try Arguments(arguments, valued: ["taxi", "fences", "vertices", "seconds", "points"], flags: [])
        let taxiPath = args["taxi"] ?? "Tests/Fixtures/geometry/nyc-taxi-zones.geojson"
        let polygonCount = Int(try args.number("fences") ?? 10_000)
        let vertexCount = Int(try args.number("vertices") ?? 50)
        let seconds = try args.number("seconds") ?? 3
        let pointCount = Int(try args.number("points") ?? 200_000)
        guard polygonCount >= 0, seconds > 0, pointCount > 0 else {
            throw UsageError("--fences, --seconds and --points must be positive")
        }
        guard vertexCount >= 3 else { throw UsageError("--vertices must be 3 or more") }
        #if DEBUG
        print("warning: debug build; figures are far below a release build (swift build -c release)")
        #endif
        print("bench index: \(seconds) s per data set, \(pointCount) random points, one core")

        var random = SplitMix64(seed: 20_240_607)
        var rssBeforeData = ResourceUsage.residentBytes()
        let taxi: [Fence]
        do {
            taxi = try loadTaxiZones(path: taxiPath)
        } catch {
            throw UsageError("--taxi \(taxiPath): \(error)")
        }
        try measure(
            "NYC taxi zones (\(taxiPath)): \(taxi.count) fences", fences: taxi, seconds: seconds,
            pointCount: pointCount, rssBeforeData: rssBeforeData, random: &random)

        ResourceUsage.trimHeap()  // what the taxi zones freed, so that the city's growth is its own
        rssBeforeData = ResourceUsage.residentBytes()
        let city = syntheticCity(polygons: polygonCount, vertices: vertexCount, random: &random)
        try measure(
            "synthetic city: \(polygonCount) polygons (\(vertexCount) vertices) + \(polygonCount / 20) buffered points + \(polygonCount / 20) buffered lines, 40 x 40 km",
            fences: city, seconds: seconds, pointCount: pointCount, rssBeforeData: rssBeforeData, random: &random)
        print("peak RSS \(megabytes(ResourceUsage.peakResidentBytes()))")
        return ExitStatus.ok
    }

    static func measure(
        _ title: String, fences: [Fence], seconds: Double, pointCount: Int, rssBeforeData: Int, random: inout SplitMix64
    ) throws {
        print(title)
        let vertices = fences.reduce(0) { sum, fence in
            switch fence.geometry {
            case .polygons(let ps): sum + ps.reduce(0) { $0 + $1.exterior.count + $1.holes.reduce(0) { $0 + $1.count } }
            case .points(let ps): sum + ps.count
            case .lines(let ls): sum + ls.reduce(0) { $0 + $1.count }
            }
        }
        let rssBefore = ResourceUsage.residentBytes()
        var clock = ResourceUsage.now()
        let prepared = try fences.map { fence in
            do { return try PreparedFence(fence) } catch { throw UsageError("\(fence.layer): \(fence.label): \(error)") }
        }
        let prepareSeconds = ResourceUsage.now() - clock
        let buffers = fences.map { $0.buffer ?? 0 }
        clock = ResourceUsage.now()
        let index = FenceIndex(bounds: prepared.map(\.bounds), reach: buffers)
        let indexSeconds = ResourceUsage.now() - clock
        let rssAfter = ResourceUsage.residentBytes()
        let structures = prepared.reduce(0) { $0 + $1.byteCount }
        print(
            "  \(vertices) vertices; prepare fences \(format(prepareSeconds * 1000, 1)) ms, "
                + "index build \(format(indexSeconds * 1000, 2)) ms; prepared fences \(megabytes(structures)), "
                + "index \(megabytes(index.byteCount)), resident memory +\(megabytes(rssAfter - rssBefore))")
        // Where the bytes went, from reading or generating the fences through the index (after
        // the timed build, and the counting's own memory after the RSS readings).
        ResourceUsage.trimHeap()
        let rssTrimmed = ResourceUsage.residentBytes()
        var memory = FenceMemory()
        for p in prepared { memory.add(p) }
        memory.add(index)
        memory.tables += memory.counted(prepared) + memory.counted(buffers)
        memory.layers += memory.counted(fences)
        print(MemoryBreakdown.table(memory, growth: rssAfter - rssBeforeData, trimmedGrowth: rssTrimmed - rssBeforeData))

        // Random points over the fences' area.
        var area = prepared[0].bounds
        for f in prepared { area.extend(f.bounds) }
        var points: [Coordinate] = []
        points.reserveCapacity(pointCount)
        for _ in 0..<pointCount {
            points.append(
                Coordinate(
                    lat: area.minLat + random.nextUnit() * (area.maxLat - area.minLat),
                    lon: area.minLon + random.nextUnit() * (area.maxLon - area.minLon)))
        }

        var evaluations = 0, candidates = 0, matches = 0
        let cpuStart = ResourceUsage.cpuSeconds()
        let start = ResourceUsage.now()
        var elapsed = 0.0
        repeat {
            for p in points {
                var preparedPoint: PreparedPoint? = nil
                index.query(p, radius: 0) { i in
                    candidates += 1
                    let buffer = buffers[i]
                    if buffer == 0 {
                        if prepared[i].contains(p) { matches += 1 }
                    } else {
                        if preparedPoint == nil { preparedPoint = PreparedPoint(p) }
                        if prepared[i].signedDistance(to: preparedPoint!, within: buffer) <= buffer { matches += 1 }
                    }
                }
            }
            evaluations += points.count
            elapsed = ResourceUsage.now() - start
        } while elapsed < seconds
        let cpu = ResourceUsage.cpuSeconds() - cpuStart
        let perSecond = Double(evaluations) / elapsed
        let perCPUSecond = Double(evaluations) / max(cpu, 1e-9)
        print(
            "  \(grouped(Int(perCPUSecond))) evaluations per CPU second (\(format(cpu / Double(evaluations) * 1e9, 0)) ns each); "
                + "\(grouped(Int(perSecond))) per wall-clock second (\(grouped(evaluations)) in \(format(elapsed, 2)) s, "
                + "CPU \(format(cpu, 2)) s: the rest went to other processes)")
        print(
            "  per evaluation: \(format(Double(candidates) / Double(evaluations), 2)) candidates from the index, "
                + "\(format(Double(matches) / Double(evaluations), 3)) fences holding the point")
    }

    // MARK: Data

    /// Star-shaped polygons of `vertices` vertices, buffered points and buffered lines around New York.
    static func syntheticCity(polygons: Int, vertices: Int = 50, random: inout SplitMix64) -> [Fence] {
        let centre = Coordinate(lat: 40.73, lon: -73.95)
        let metresPerDegreeLat = 111_000.0
        let metresPerDegreeLon = 111_000.0 * cos(centre.lat * .pi / 180)
        func offset(_ c: Coordinate, east: Double, north: Double) -> Coordinate {
            Coordinate(lat: c.lat + north / metresPerDegreeLat, lon: c.lon + east / metresPerDegreeLon)
        }
        func anywhere() -> Coordinate {
            offset(centre, east: (random.nextUnit() - 0.5) * 40_000, north: (random.nextUnit() - 0.5) * 40_000)
        }
        var fences: [Fence] = []
        for i in 0..<polygons {
            let c = anywhere()
            let radius = 30 + random.nextUnit() * 95
            var ring: [Coordinate] = []
            for k in 0..<vertices {
                let angle = Double(k) / Double(vertices) * 2 * .pi
                let r = radius * (0.7 + 0.6 * random.nextUnit())
                ring.append(offset(c, east: r * cos(angle), north: r * sin(angle)))
            }
            ring.append(ring[0])
            fences.append(Fence(id: "p\(i)", layer: "city", geometry: .polygons([Polygon(exterior: ring)]), featureIndex: i))
        }
        for i in 0..<(polygons / 20) {
            fences.append(
                Fence(
                    id: "s\(i)", layer: "city", geometry: .points([anywhere()]), buffer: 20 + random.nextUnit() * 80,
                    featureIndex: fences.count))
        }
        for i in 0..<(polygons / 20) {
            var line = [anywhere()]
            for _ in 0..<(2 + Int(random.nextUnit() * 9)) {
                let step = 50 + random.nextUnit() * 250, angle = random.nextUnit() * 2 * .pi
                line.append(offset(line[line.count - 1], east: step * cos(angle), north: step * sin(angle)))
            }
            fences.append(
                Fence(
                    id: "l\(i)", layer: "city", geometry: .lines([line]), buffer: 10 + random.nextUnit() * 40,
                    featureIndex: fences.count))
        }
        return fences
    }

    /// The taxi zones, read with the project's fence layer parser.
    static func loadTaxiZones(path: String) throws -> [Fence] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let (layer, errors) = FenceLayerParser.parse(bytes, file: path, layer: "taxi")
        if let first = errors.first { throw UsageError("\(first)" + (errors.count > 1 ? " (and \(errors.count - 1) more)" : "")) }
        return layer.fences
    }

    // MARK: Formatting

    /// `value` with `decimals` digits after the point (FoundationEssentials has no number formats).
    static func format(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let n = Int((abs(value) * Double(scale)).rounded())
        var text = (value < 0 && n != 0 ? "-" : "") + String(n / scale)
        if decimals > 0 {
            let fraction = String(n % scale)
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }

    /// `value` with thousands separated by commas.
    static func grouped(_ value: Int) -> String {
        var digits = String(value.magnitude), text = ""
        while digits.count > 3 {
            text = "," + digits.suffix(3) + text
            digits.removeLast(3)
        }
        return (value < 0 ? "-" : "") + digits + text
    }

    static func megabytes(_ bytes: Int) -> String { format(Double(bytes) / 1_048_576, 1) + " MB" }
}
