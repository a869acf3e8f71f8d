import Testing

@testable import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// Preparing a valid polygon takes memory linear in its vertices, whatever its shape: the
/// shapes that made the old structures quadratic (long edges each listed in every band or grid
/// cell they span, long edges cut into thousands of chord pieces) are prepared here with their
/// entry counts asserted, and containment checked against brute force. Serialized, so that the
/// peak RSS printed is this suite's own (as far as the other suites running beside it allow).
@Suite(.serialized) struct GeometryMemoryTests {
    /// A "tall sawtooth": `vertices` positions, long thin teeth each spanning (almost) the whole
    /// latitude range, over a thin base. Valid: the ring does not cross itself.
    static func sawtooth(vertices: Int, lon: Double, lat: Double, width: Double, height: Double) -> [Coordinate] {
        let teeth = vertices - 3  // the zigzag, then two base corners and the closing position
        var ring: [Coordinate] = []
        ring.reserveCapacity(vertices)
        for k in 0..<teeth {
            ring.append(Coordinate(lat: k % 2 == 0 ? lat : lat + height, lon: lon + width * Double(k) / Double(teeth - 1)))
        }
        ring.append(Coordinate(lat: lat - height / 100, lon: lon + width))
        ring.append(Coordinate(lat: lat - height / 100, lon: lon))
        ring.append(ring[0])
        return ring
    }

    /// A star of `vertices` positions whose spikes reach `outer` degrees from the centre from
    /// `inner`: every other edge is long (cut into many chord pieces at the 5 mm tolerance).
    static func spikyStar(vertices: Int, lon: Double, lat: Double, inner: Double, outer: Double) -> [Coordinate] {
        let count = vertices - 1
        var ring: [Coordinate] = []
        ring.reserveCapacity(vertices)
        for k in 0..<count {
            let angle = Double(k) / Double(count) * 2 * .pi
            let r = k % 2 == 0 ? inner : outer
            ring.append(Coordinate(lat: lat + r * sin(angle), lon: lon + r * cos(angle)))
        }
        ring.append(ring[0])
        return ring
    }

    /// The process's peak resident set (VmHWM) in MiB, from /proc/self/status; nil if unreadable.
    static func peakRSSMiB() -> Double? {
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("VmHWM:") {
                let digits = text.filter(\.isNumber)
                return Double(digits).map { $0 / 1024 }
            }
        }
        return nil
    }

    static func seconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Parses `ring` as a one-feature layer (so the ring checks accept it), prepares it once
    /// more (timed) and returns the prepared fence.
    static func prepare(_ ring: [Coordinate], id: String) throws -> (fence: PreparedFence, seconds: Double) {
        let positions = ring.map { "[\($0.lon),\($0.lat)]" }.joined(separator: ",")
        let text = #"{"type":"FeatureCollection","features":[{"type":"Feature","id":"\#(id)","properties":{},"#
            + #""geometry":{"type":"Polygon","coordinates":[[\#(positions)]]}}]}"#
        let (layer, errors) = FenceLayerParser.parse(Array(text.utf8), file: "\(id).geojson", layer: id)
        #expect(errors.isEmpty, "\(errors)")
        let fence = try #require(layer.fences.first)
        let start = seconds()
        let prepared = try PreparedFence(fence)
        return (prepared, seconds() - start)
    }

    /// Containment against brute force for random points over the fence's box and points on
    /// and near its vertices (exact: the same half-open rule and arithmetic).
    static func checkContainment(_ fence: PreparedFence, seed: UInt64, count: Int, vertexStride: Int) -> Int {
        var random = SeededRandom(seed: seed)
        let polygons = GeometryBruteForceTests.polygonEdges(fence)
        var inside = 0, wrong = 0
        for p in GeometryBruteForceTests.points(fence, random: &random, count: count, vertexStride: vertexStride) {
            let expected = GeometryBruteForceTests.bruteContains(fence, polygons, p)
            if expected { inside += 1 }
            if fence.contains(p) != expected {
                wrong += 1
                if wrong <= 5 { Issue.record("\(fence.fence.id) \(p): contains \(!expected), brute force \(expected)") }
            }
            if (fence.signedDistance(to: p) < 0) != expected { wrong += 1 }
        }
        #expect(wrong == 0, "\(fence.fence.id): \(wrong) wrong answers")
        return inside
    }

    @Test func tallSawtoothOf30000VerticesIsLinear() throws {
        let ring = Self.sawtooth(vertices: 30_000, lon: 8.50, lat: 47.30, width: 0.3, height: 0.02)
        let before = Self.peakRSSMiB()
        let (fence, seconds) = try Self.prepare(ring, id: "sawtooth")
        let after = Self.peakRSSMiB()
        let edges = ring.count - 1
        let entries = fence.locator.bands.edges.count
        let gridEntries = fence.grid.cellItems.count, pieces = fence.grid.points.count - 1
        print(
            "sawtooth of \(ring.count) vertices: prepared in \(seconds) s; band entries \(entries) (\(fence.locator.bands.count) bands, "
                + "\(Double(entries) / Double(edges)) per edge), grid entries \(gridEntries) for \(pieces) chord pieces; "
                + "\(fence.byteCount) bytes; peak RSS (VmHWM) before \(before ?? -1) MiB, after \(after ?? -1) MiB")
        // With one band per two edges every tooth would be listed ~15,000 times (3.6 GB).
        #expect(entries <= PolygonLocator.Bands.entriesPerEdge * edges)
        #expect(gridEntries <= SegmentGrid.entriesPerSegment * pieces)
        #expect(fence.byteCount < 1024 * edges)
        let inside = Self.checkContainment(fence, seed: 30, count: 1500, vertexStride: 97)
        #expect(inside > 300)
    }

    @Test func starOfLongSpikesIsLinear() throws {
        // 5,000 spikes of ~1,100 km: at 5 mm each would be cut into ~2,048 chord pieces.
        let ring = Self.spikyStar(vertices: 10_001, lon: 20, lat: 10, inner: 0.05, outer: 10)
        let (fence, seconds) = try Self.prepare(ring, id: "spikes")
        let edges = ring.count - 1
        let pieces = fence.grid.points.count - 1
        print(
            "star of \(ring.count) vertices: prepared in \(seconds) s; \(pieces) chord pieces, grid entries \(fence.grid.cellItems.count), "
                + "band entries \(fence.locator.bands.edges.count); \(fence.byteCount) bytes; peak RSS (VmHWM) \(Self.peakRSSMiB() ?? -1) MiB")
        #expect(pieces <= Swift.max(PreparedFence.chordBudgetBase, PreparedFence.chordBudgetPerEdge * edges))
        #expect(fence.grid.cellItems.count <= SegmentGrid.entriesPerSegment * pieces)
        #expect(fence.locator.bands.edges.count <= PolygonLocator.Bands.entriesPerEdge * edges)
        let inside = Self.checkContainment(fence, seed: 31, count: 400, vertexStride: 401)
        #expect(inside > 20)
    }

    @Test func ordinaryFencesKeepTheirBands() throws {
        // A round fence: one band per two edges, as before (the limit does not bite).
        var ring: [Coordinate] = []
        for k in 0..<2000 {
            let angle = Double(k) / 2000 * 2 * .pi
            ring.append(Coordinate(lat: 48.85 + 0.01 * sin(angle), lon: 2.35 + 0.015 * cos(angle)))
        }
        ring.append(ring[0])
        let fence = try PreparedFence(Fence(id: "round", layer: "test", geometry: .polygons([Polygon(exterior: ring)])))
        #expect(fence.locator.bands.count == 1000)
        #expect(fence.locator.bands.edges.count < 4 * 2000)
    }

    @Test func chordDepthFitsTheBudget() {
        #expect(PreparedFence.depth(fitting: 1 << 18, edges: 30_000) == 3)
        #expect(PreparedFence.depth(fitting: 1 << 18, edges: 4) == 16)
        #expect(PreparedFence.depth(fitting: 10, edges: 11) == 0)
    }
}
