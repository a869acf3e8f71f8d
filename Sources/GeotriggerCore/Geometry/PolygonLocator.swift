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
struct PolygonLocator: Sendable {
    /// One edge in a band: lower end (`x0`, `lo`), `hi` the upper latitude, `slope` dx/dy.
    struct BandEdge: Sendable {
        var lo: Double
        var hi: Double
        var x0: Double
        var slope: Double
        /// The polygon's bit: the ring parity is kept per polygon (polygon number mod 64).
        var bit: UInt64
    }

    /// Edges grouped by latitude band.
    struct Bands: Sendable {
        let minY: Double
        let count: Int
        let scale: Double
        let start: [Int32]
        let edges: [BandEdge]

        init(_ edges: [BandEdge], minY: Double, height: Double) {
            let bands = Swift.max(1, Swift.min(1 << 16, edges.count / 2))
            self.minY = minY
            count = bands
            let scale = Double(bands) / height
            self.scale = scale
            func band(_ y: Double) -> Int { Swift.min(bands - 1, Swift.max(0, Int((y - minY) * scale))) }
            var counts = [Int32](repeating: 0, count: bands + 1)
            for e in edges {
                for k in band(e.lo)...band(e.hi) { counts[k + 1] += 1 }
            }
            for k in 0..<bands { counts[k + 1] += counts[k] }
            var fill = counts
            var placed = [BandEdge](
                repeating: BandEdge(lo: 0, hi: 0, x0: 0, slope: 0, bit: 0), count: Int(counts[bands]))
            for e in edges {
                for k in band(e.lo)...band(e.hi) {
                    placed[Int(fill[k])] = e
                    fill[k] += 1
                }
            }
            start = counts
            self.edges = placed
        }

        /// The crossing test over the edges of (x, y)'s latitude band.
        func crossingTest(x: Double, y: Double) -> Bool {
            let band = Swift.min(count - 1, Swift.max(0, Int((y - minY) * scale)))
            var parity: UInt64 = 0
            let first = Int(start[band]), end = Int(start[band + 1])
            edges.withUnsafeBufferPointer { edges in
                for i in first..<end {
                    let e = edges[i]
                    if y >= e.lo, y < e.hi, x < e.x0 + (y - e.lo) * e.slope { parity ^= e.bit }
                }
            }
            return parity != 0
        }
    }

    enum CellState: UInt8 { case outside, inside, boundary }

    let minX: Double, minY: Double, maxX: Double, maxY: Double
    let columns: Int, rows: Int
    let cellScaleX: Double, cellScaleY: Double
    let cells: [CellState]
    let bands: Bands

    /// `rings[i]` is a closed ring of (x = unwrapped lon, y = lat) belonging to polygon `polygon[i]`.
    init(rings: [[SIMD2<Double>]], polygon: [Int]) {
        var lo = SIMD2<Double>(repeating: .infinity), hi = SIMD2<Double>(repeating: -.infinity)
        var edges: [BandEdge] = []
        for (ring, owner) in zip(rings, polygon) {
            for (a, b) in zip(ring, ring.dropFirst()) {
                lo = pointwiseMin(lo, pointwiseMin(a, b))
                hi = pointwiseMax(hi, pointwiseMax(a, b))
                guard a.y != b.y else { continue }  // horizontal edges never straddle a ray
                let (p, q) = a.y < b.y ? (a, b) : (b, a)
                edges.append(
                    BandEdge(
                        lo: p.y, hi: q.y, x0: p.x, slope: (q.x - p.x) / (q.y - p.y), bit: 1 << UInt64(owner & 63)))
            }
        }
        if lo.x > hi.x { lo = .zero; hi = .zero }
        minX = lo.x
        minY = lo.y
        maxX = hi.x
        maxY = hi.y
        let height = Swift.max(maxY - minY, 1e-12), width = Swift.max(maxX - minX, 1e-12)
        let bands = Bands(edges, minY: lo.y, height: height)
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
                state[r * cols + c] = bands.crossingTest(x: x, y: y) ? .inside : .outside
            }
        }
        cells = state
    }

    /// Approximate bytes held by the arrays.
    var byteCount: Int {
        cells.count + bands.start.count * 4 + bands.edges.count * MemoryLayout<BandEdge>.stride
    }

    /// True if (x, y) is inside some polygon (not in one of its holes).
    @inline(__always)
    func contains(x: Double, y: Double) -> Bool {
        guard y >= minY, y <= maxY, x >= minX, x <= maxX else { return false }
        let c = Swift.min(columns - 1, Int((x - minX) * cellScaleX))
        let r = Swift.min(rows - 1, Int((y - minY) * cellScaleY))
        switch cells[r * columns + c] {
        case .outside: return false
        case .inside: return true
        case .boundary: return bands.crossingTest(x: x, y: y)
        }
    }
}
