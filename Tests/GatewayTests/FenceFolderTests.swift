import Foundation
import Testing
import TestSupport
@testable import Gateway
@testable import GeotriggerCore

/// `FenceFolder.load` reads each layer file in chunks through `pread`: the same layers and
/// messages as parsing each file's whole text.
@Suite struct FenceFolderTests {
    /// A layer of `count` small square polygons, a few hundred bytes each.
    static func squares(_ count: Int) -> String {
        let features = (0..<count).map { i -> String in
            let lon = -119.8 + Double(i % 100) * 0.001, lat = 34.4 + Double(i / 100) * 0.001
            let ring = [(lon, lat), (lon + 0.0005, lat), (lon + 0.0005, lat + 0.0005), (lon, lat + 0.0005), (lon, lat)]
                .map { "[\($0.0), \($0.1)]" }.joined(separator: ", ")
            return #"{"type": "Feature", "id": "f\#(i)", "properties": {"name": "Square \#(i)"}, "#
                + #""geometry": {"type": "Polygon", "coordinates": [[\#(ring)]]}}"#
        }
        return #"{"type": "FeatureCollection", "geotrigger": {"buffer": 5}, "features": [\#n"#
            + features.joined(separator: ",\n") + "\n]}\n"
    }

    /// A load that takes a while (a clock that moves half a second at each reading) logs
    /// `loading fences: ...` after a second and every 3 seconds, then `loaded fences: ...`.
    @Test func aSlowLoadLogsItsProgress() throws {
        let folder = try TemporaryDirectory(prefix: "fence-progress")
        let a = try folder.write("a.geojson", Self.squares(3000))
        let b = try folder.write("b.geojson", Self.squares(1000))
        let total = FenceFolder.fileSize(a) + FenceFolder.fileSize(b)
        var now = 0.0
        var lines: [String] = []
        let progress = FenceLoadProgress(firstAfter: 1, every: 3, clock: { now += 0.5; return now }, log: { lines.append($0) })
        let (layers, errors) = FenceFolder.load(folder.path, progress: progress)
        #expect(errors.isEmpty)
        #expect(layers.map(\.fences.count) == [3000, 1000])
        #expect(lines.count >= 3, "\(lines)")
        var previous = 0
        for line in lines.dropLast() {
            let match = line.wholeMatch(of: /loading fences: (\d+) fences, ([\d.]+) MB of ([\d.]+) MB read/)
            #expect(match != nil, "\(line)")
            guard let match else { continue }
            let fences = Int(match.output.1)!
            #expect(fences > previous && fences <= 4000, "\(line)")
            previous = fences
            #expect(String(match.output.3) == FenceLoadProgress.megabytes(total).dropLast(3), "\(line)")
        }
        #expect(lines.last?.wholeMatch(of: /loaded fences: 4000 fences, [\d.]+ MB in [\d.]+ s/) != nil, "\(lines)")
    }

    /// A quick load (under a second) logs nothing.
    @Test func aQuickLoadLogsNothing() throws {
        let folder = try TemporaryDirectory(prefix: "fence-progress")
        try folder.write("a.geojson", Self.squares(3000))
        var lines: [String] = []
        let progress = FenceLoadProgress(clock: { 100 }, log: { lines.append($0) })
        let (layers, _) = FenceFolder.load(folder.path, progress: progress)
        #expect(layers.first?.fences.count == 3000)
        #expect(lines.isEmpty)
    }

    @Test func loadsLayersInChunksAsTheWholeTextWould() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fencefolder-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Larger than several chunks, so the window moves on many times.
        let big = Self.squares(3000)
        #expect(big.utf8.count > 4 * FenceFileStream.defaultChunkSize)
        try big.write(toFile: folder + "/big.geojson", atomically: true, encoding: .utf8)
        let broken = #"{"type": "FeatureCollection", "features": [{"type": "Feature",}]}"#
        try broken.write(toFile: folder + "/broken.geojson", atomically: true, encoding: .utf8)
        // A directory with a layer's name cannot be read.
        try FileManager.default.createDirectory(atPath: folder + "/dir.geojson", withIntermediateDirectories: false)

        let (layers, errors) = FenceFolder.load(folder)
        #expect(layers.map(\.name) == ["big", "broken"])
        let whole = FenceLayerParser.parse(Array(big.utf8), file: folder + "/big.geojson", layer: "big")
        #expect(whole.errors.isEmpty)
        #expect(layers.first == whole.layer)
        #expect(layers.first?.fences.count == 3000)
        #expect(layers.first?.prepared.count == 3000)
        #expect(errors.map(\.description) == [
            "\(folder)/broken.geojson:1:62: a trailing comma is not allowed in JSON (only in JSON5)",
            "\(folder)/dir.geojson: cannot read: Is a directory",
        ])
    }
}
