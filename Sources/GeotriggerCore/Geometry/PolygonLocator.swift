#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Exact point-in-polygon for a set of polygons with holes, in (unwrapped) lon/lat degrees.
///
/// The answer is the even-odd crossing rule per polygon (a horizontal ray towards larger
/// longitudes; an edge counts if one end is above the ray and the other is not), and "inside"
/// means inside some polygon. Two structures make it fast:
/// - a grid of cells over the bounds, each marked outside, inside or boundary; a cell that no
///   edge touches is inside or outside as a whole, decided once at build time;
/// - latitude bands, each listing the edges whose latitude range meets it, so a point in a
///   boundary cell tests only the edges of its band (the same test as testing every edge,
///   since an edge outside the band cannot straddle the point's latitude).
///
/// Memory: every vertex is kept once, in ring order (`vertices`); an edge is named by the index
/// of its first vertex, so a band lists 2-byte indices (4 bytes beyond 65,536) rather than
/// copies of its edges, and cells take 2 bits each. The crossing arithmetic is done at query
/// time from the two vertices, exactly as it was written when bands held copies of the edges
/// (so the answers are bit for bit the same).
struct PolygonLocator: Sendable {
    /// Edges grouped by latitude band.
    struct Bands: Sendable {
        let minY: Double
        let count: Int
        let scale: Double
        /// Band `k` lists `edges[start[k] ..< start[k + 1]]`.
        let start: CompactIndices
        /// Index (into the locator's vertices) of each listed edge's first vertex.
        let edges: CompactIndices

        /// Bands over `edges` (first-vertex indices of the non-horizontal edges of `vertices`).
        init(_ edges: [Int32], vertices: [SIMD2<Double>], minY: Double, height: Double) {
            let bands = Swift.max(1, Swift.min(1 << 16, edges.count / 2))
            self.minY = minY
            count = bands
            let scale = Double(bands) / height
            self.scale = scale
            func band(_ y: Double) -> Int { Swift.min(bands - 1, Swift.max(0, Int((y - minY) * scale))) }
            func range(_ e: Int32) -> ClosedRange<Int> {
                let a = vertices[Int(e)].y, b = vertices[Int(e) + 1].y
                return band(Swift.min(a, b))...band(Swift.max(a, b))
            }
            var counts = [Int](repeating: 0, count: bands + 1)
            for e in edges {
                for k in range(e) { counts[k + 1] += 1 }
            }
            for k in 0..<bands { counts[k + 1] += counts[k] }
            var fill = counts
            var placed = [Int](repeating: 0, count: counts[bands])
            for e in edges {
                for k in range(e) {
                    placed[fill[k]] = Int(e)
                    fill[k] += 1
                }
            }
            start = CompactIndices(counts)
            self.edges = CompactIndices(placed)
        }

        /// The band holding latitude `y` (clamped to the bands).
        @inline(__always)
        func band(_ y: Double) -> Int { Swift.min(count - 1, Swift.max(0, Int((y - minY) * scale))) }
    }

    enum CellState: UInt8 { case outside, inside, boundary }

    let minX: Double, minY: Double, maxX: Double, maxY: Double
    let columns: Int, rows: Int
    let cellScaleX: Double, cellScaleY: Double
    /// The cells' states, four to a byte (cell `i` in bits `2 * (i % 4)` of byte `i / 4`).
    let cells: [UInt8]
    let bands: Bands
    /// Every ring's vertices, rings one after another (each ring closed: its last vertex repeats
    /// its first). Edge `i` runs from `vertices[i]` to `vertices[i + 1]`; the bands never list
    /// an index whose next vertex starts another ring.
    let vertices: [SIMD2<Double>]
    /// `owners[i]` is the polygon of the ring holding vertex `i`, mod 64; empty when all rings
    /// belong to polygon 0 (a plain Polygon), which is the common case.
    let owners: [UInt8]

    /// `rings[i]` is a closed ring of (x = unwrapped lon, y = lat) belonging to polygon `polygon[i]`.
    init(rings: [[SIMD2<Double>]], polygon: [Int]) {
        var lo = SIMD2<Double>(repeating: .infinity), hi = SIMD2<Double>(repeating: -.infinity)
        let total = rings.reduce(0) { $0 + $1.count }
        var vertices: [SIMD2<Double>] = []
        vertices.reserveCapacity(total)
        let singlePolygon = polygon.allSatisfy { $0 & 63 == 0 }
        var owners: [UInt8] = []
        if !singlePolygon { owners.reserveCapacity(total) }
        var edges: [Int32] = []
        for (ring, owner) in zip(rings, polygon) {
            let first = vertices.count
            vertices.append(contentsOf: ring)
            if !singlePolygon { owners.append(contentsOf: repeatElement(UInt8(owner & 63), count: ring.count)) }
            for (k, (a, b)) in zip(ring, ring.dropFirst()).enumerated() {
                lo = pointwiseMin(lo, pointwiseMin(a, b))
                hi = pointwiseMax(hi, pointwiseMax(a, b))
                guard a.y != b.y else { continue }  // horizontal edges never straddle a ray
                edges.append(Int32(first + k))
            }
        }
        self.vertices = vertices
        self.owners = owners
        if lo.x > hi.x { lo = .zero; hi = .zero }
        minX = lo.x
        minY = lo.y
        maxX = hi.x
        maxY = hi.y
        let height = Swift.max(maxY - minY, 1e-12), width = Swift.max(maxX - minX, 1e-12)
        let bands = Bands(edges, vertices: vertices, minY: lo.y, height: height)
        self.bands = bands

        // Cells: about four per edge, roughly square in metres.
        let aspect = width * Swift.max(0.05, cos((minY + maxY) / 2 * .pi / 180)) / height
        let target = Double(Swift.max(4, Swift.min(1 << 20, 4 * edges.count)))
        let cols = Swift.max(1, Swift.min(2048, Int((target * aspect).squareRoot().rounded())))
        let rowCount = Swift.max(1, Swift.min(2048, Int((target / Double(cols)).rounded())))
        let scaleX = Double(cols) / width, scaleY = Double(rowCount) / height
        columns = cols
        rows = rowCount
        cellScaleX = scaleX
        cellScaleY = scaleY
        var state = [CellState](repeating: .outside, count: cols * rowCount)
        let cellW = width / Double(cols), cellH = height / Double(rowCount)
        let epsX = cellW * 1e-6, epsY = cellH * 1e-6
        func column(_ x: Double) -> Int { Swift.min(cols - 1, Swift.max(0, Int((x - lo.x) * scaleX))) }
        func row(_ y: Double) -> Int { Swift.min(rowCount - 1, Swift.max(0, Int((y - lo.y) * scaleY))) }
        // Mark every cell an edge (horizontal ones too) may touch, with a small margin.
        for ring in rings {
            for (a, b) in zip(ring, ring.dropFirst()) {
                let bottom = Swift.min(a.y, b.y), top = Swift.max(a.y, b.y)
                for r in row(bottom - epsY)...row(top + epsY) {
                    // The edge's longitude range within this row (clamped to the edge).
                    let y0 = Swift.min(Swift.max(lo.y + Double(r) * cellH - epsY, bottom), top)
                    let y1 = Swift.min(Swift.max(lo.y + Double(r + 1) * cellH + epsY, bottom), top)
                    var x0 = Swift.min(a.x, b.x), x1 = Swift.max(a.x, b.x)
                    if top - bottom > 0 {
                        let s = (b.x - a.x) / (b.y - a.y)
                        let xa = a.x + (y0 - a.y) * s, xb = a.x + (y1 - a.y) * s
                        x0 = Swift.max(x0, Swift.min(xa, xb))
                        x1 = Swift.min(x1, Swift.max(xa, xb))
                    }
                    for c in column(x0 - epsX)...column(x1 + epsX) { state[r * cols + c] = .boundary }
                }
            }
        }
        // Decide the untouched cells by their centres.
        for r in 0..<rowCount {
            for c in 0..<cols where state[r * cols + c] != .boundary {
                let x = lo.x + (Double(c) + 0.5) * cellW, y = lo.y + (Double(r) + 0.5) * cellH
                let inside = PolygonLocator.crossingTest(x: x, y: y, bands: bands, vertices: vertices, owners: owners)
                state[r * cols + c] = inside ? .inside : .outside
            }
        }
        var packed = [UInt8](repeating: 0, count: (state.count + 3) / 4)
        for (i, s) in state.enumerated() { packed[i >> 2] |= s.rawValue << UInt8((i & 3) * 2) }
        cells = packed
    }

    /// Approximate bytes held by the arrays.
    var byteCount: Int {
        cells.count + bands.start.byteCount + bands.edges.byteCount
            + vertices.count * MemoryLayout<SIMD2<Double>>.stride + owners.count
    }

    /// True if (x, y) is inside some polygon (not in one of its holes).
    @inline(__always)
    func contains(x: Double, y: Double) -> Bool {
        guard y >= minY, y <= maxY, x >= minX, x <= maxX else { return false }
        let c = Swift.min(columns - 1, Int((x - minX) * cellScaleX))
        let r = Swift.min(rows - 1, Int((y - minY) * cellScaleY))
        let i = r * columns + c
        switch (cells[i >> 2] >> UInt8((i & 3) * 2)) & 3 {
        case CellState.outside.rawValue: return false
        case CellState.inside.rawValue: return true
        default: return crossingTest(x: x, y: y)
        }
    }

    /// The crossing test over the edges of (x, y)'s latitude band.
    ///
    /// For an edge with lower end `p` and upper end `q` it counts `lo <= y < hi` and
    /// `x < p.x + (y - p.y) * slope` with `slope = (q.x - p.x) / (q.y - p.y)`: the same
    /// operations in the same order as when each band held a copy of (lo, hi, x0, slope).
    @inline(__always)
    func crossingTest(x: Double, y: Double) -> Bool {
        PolygonLocator.crossingTest(x: x, y: y, bands: bands, vertices: vertices, owners: owners)
    }

    static func crossingTest(
        x: Double, y: Double, bands: Bands, vertices: [SIMD2<Double>], owners: [UInt8]
    ) -> Bool {
        let band = bands.band(y)
        let listed = bands.start[band]..<bands.start[band + 1]
        switch bands.edges.storage {
        case .narrow(let edges): return parity(edges, listed, x: x, y: y, vertices: vertices, owners: owners) != 0
        case .wide(let edges): return parity(edges, listed, x: x, y: y, vertices: vertices, owners: owners) != 0
        }
    }

    /// The crossing parities (one bit per polygon) of `edges[listed]`.
    @inline(__always)
    static func parity<Index: FixedWidthInteger>(
        _ edges: [Index], _ listed: Range<Int>, x: Double, y: Double, vertices: [SIMD2<Double>], owners: [UInt8]
    ) -> UInt64 {
        var parity: UInt64 = 0
        vertices.withUnsafeBufferPointer { vertices in
            edges.withUnsafeBufferPointer { edges in
                if owners.isEmpty {
                    for i in listed {
                        let k = Int(edges[i])
                        if PolygonLocator.crosses(vertices[k], vertices[k + 1], x: x, y: y) { parity ^= 1 }
                    }
                } else {
                    owners.withUnsafeBufferPointer { owners in
                        for i in listed {
                            let k = Int(edges[i])
                            if PolygonLocator.crosses(vertices[k], vertices[k + 1], x: x, y: y) {
                                parity ^= 1 << UInt64(owners[k])
                            }
                        }
                    }
                }
            }
        }
        return parity
    }

    /// True if the ray from (x, y) towards larger x crosses the (non-horizontal) edge a-b.
    @inline(__always)
    static func crosses(_ a: SIMD2<Double>, _ b: SIMD2<Double>, x: Double, y: Double) -> Bool {
        let (p, q) = a.y < b.y ? (a, b) : (b, a)
        guard y >= p.y, y < q.y else { return false }
        return x < p.x + (y - p.y) * ((q.x - p.x) / (q.y - p.y))
    }
}
