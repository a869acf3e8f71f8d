/// Straight 3D segments in a fence's ``LocalFrame`` with a uniform east/north grid, for the
/// nearest-segment search (bounded or not).
///
/// A segment is listed in every cell its east/north box meets. The search visits rings of
/// cells outwards from the query point and stops once the east/north distance to every cell
/// not yet visited exceeds the best chord found (or the caller's limit): looking straight down
/// only shortens distances, so that bound is safe and the answer is the exact minimum chord.
struct SegmentGrid: Sendable {
    /// Start (x, y, z = east, north, up), delta to the end, and 1 / |delta|^2 (0 for a point).
    /// Plain doubles: a SIMD3<Double> would take 32 bytes.
    struct Segment: Sendable {
        var x: Double, y: Double, z: Double
        var dx: Double, dy: Double, dz: Double
        var inverseLengthSquared: Double
    }

    let segments: [Segment]
    let minE: Double, minN: Double, maxE: Double, maxN: Double
    let cellSize: Double
    let columns: Int, rows: Int
    let cellStart: [Int32]
    let cellItems: [Int32]

    /// `pieces[i]` = (start, end) in the local frame.
    init(_ pieces: [(SIMD3<Double>, SIMD3<Double>)]) {
        segments = pieces.map { a, b in
            let d = b - a
            let l2 = (d * d).sum()
            return Segment(x: a.x, y: a.y, z: a.z, dx: d.x, dy: d.y, dz: d.z, inverseLengthSquared: l2 > 0 ? 1 / l2 : 0)
        }
        var lo = SIMD2<Double>(repeating: .infinity), hi = SIMD2<Double>(repeating: -.infinity)
        for (a, b) in pieces {
            lo = pointwiseMin(lo, pointwiseMin(SIMD2(a.x, a.y), SIMD2(b.x, b.y)))
            hi = pointwiseMax(hi, pointwiseMax(SIMD2(a.x, a.y), SIMD2(b.x, b.y)))
        }
        if pieces.isEmpty { lo = .zero; hi = .zero }
        minE = lo.x
        minN = lo.y
        maxE = hi.x
        maxN = hi.y
        let width = hi.x - lo.x, height = hi.y - lo.y
        let target = Double(Swift.max(1, Swift.min(1 << 20, 2 * pieces.count)))
        let size = Swift.max(1.0, (Swift.max(width * height, 1) / target).squareRoot(), Swift.max(width, height) / 2048)
        cellSize = size
        let cols = Swift.max(1, Int((width / size).rounded(.up)))
        let rowCount = Swift.max(1, Int((height / size).rounded(.up)))
        columns = cols
        rows = rowCount
        func column(_ e: Double) -> Int { Swift.min(cols - 1, Swift.max(0, Int((e - lo.x) / size))) }
        func row(_ n: Double) -> Int { Swift.min(rowCount - 1, Swift.max(0, Int((n - lo.y) / size))) }
        var counts = [Int32](repeating: 0, count: cols * rowCount + 1)
        func forEachCell(_ a: SIMD3<Double>, _ b: SIMD3<Double>, _ body: (Int) -> Void) {
            for r in row(Swift.min(a.y, b.y))...row(Swift.max(a.y, b.y)) {
                for c in column(Swift.min(a.x, b.x))...column(Swift.max(a.x, b.x)) { body(r * cols + c) }
            }
        }
        for (a, b) in pieces { forEachCell(a, b) { counts[$0 + 1] += 1 } }
        for k in 0..<(cols * rowCount) { counts[k + 1] += counts[k] }
        var fill = counts
        var items = [Int32](repeating: 0, count: Int(counts[cols * rowCount]))
        for (i, (a, b)) in pieces.enumerated() {
            forEachCell(a, b) { cell in
                items[Int(fill[cell])] = Int32(i)
                fill[cell] += 1
            }
        }
        cellStart = counts
        cellItems = items
    }

    /// Approximate bytes held by the arrays.
    var byteCount: Int {
        segments.count * MemoryLayout<Segment>.stride + (cellStart.count + cellItems.count) * 4
    }

    /// The smallest squared chord from `p` to a segment, if some chord is at most
    /// `limitSquared`^0.5; nil if every segment is farther than that.
    func nearestChordSquared(to p: SIMD3<Double>, limitSquared: Double) -> Double? {
        guard !segments.isEmpty else { return nil }
        let fx = Swift.min(Swift.max((p.x - minE) / cellSize, -1e9), 1e9)
        let fy = Swift.min(Swift.max((p.y - minN) / cellSize, -1e9), 1e9)
        let ux = Int(fx.rounded(.down)), uy = Int(fy.rounded(.down))
        let bx = Swift.min(columns - 1, Swift.max(0, ux)), by = Swift.min(rows - 1, Swift.max(0, uy))
        let insideGrid = ux == bx && uy == by
        let gapE = Swift.max(0, minE - p.x, p.x - maxE), gapN = Swift.max(0, minN - p.y, p.y - maxN)
        let gridDistance = (gapE * gapE + gapN * gapN).squareRoot()
        let lastRing = Swift.max(bx, columns - 1 - bx, by, rows - 1 - by)
        var best = limitSquared
        var found = false
        segments.withUnsafeBufferPointer { segments in
            cellItems.withUnsafeBufferPointer { items in
                cellStart.withUnsafeBufferPointer { start in
                    func visit(_ c: Int, _ r: Int) {
                        let cell = r * columns + c
                        for k in Int(start[cell])..<Int(start[cell + 1]) {
                            let s = segments[Int(items[k])]
                            let wx = p.x - s.x, wy = p.y - s.y, wz = p.z - s.z
                            let t = Swift.min(
                                1, Swift.max(0, (wx * s.dx + wy * s.dy + wz * s.dz) * s.inverseLengthSquared))
                            let vx = wx - t * s.dx, vy = wy - t * s.dy, vz = wz - t * s.dz
                            let d2 = vx * vx + vy * vy + vz * vz
                            if d2 <= best {
                                best = d2
                                found = true
                            }
                        }
                    }
                    for ring in 0...lastRing {
                        // East/north distance from p to every cell at ring >= `ring`.
                        var bound: Double
                        if ring == 0 {
                            bound = gridDistance
                        } else if insideGrid {
                            let left = minE + Double(bx - ring + 1) * cellSize
                            let right = minE + Double(bx + ring) * cellSize
                            let bottom = minN + Double(by - ring + 1) * cellSize
                            let top = minN + Double(by + ring) * cellSize
                            bound = Swift.min(p.x - left, right - p.x, p.y - bottom, top - p.y)
                        } else {
                            bound = Swift.max(Double(ring - 1) * cellSize, gridDistance)
                        }
                        if bound > 0, bound * bound > best { break }
                        if ring == 0 {
                            visit(bx, by)
                            continue
                        }
                        let c0 = bx - ring, c1 = bx + ring, r0 = by - ring, r1 = by + ring
                        let cLow = Swift.max(0, c0), cHigh = Swift.min(columns - 1, c1)
                        if r0 >= 0 { for c in cLow...cHigh { visit(c, r0) } }
                        if r1 < rows { for c in cLow...cHigh { visit(c, r1) } }
                        let rLow = Swift.max(0, r0 + 1), rHigh = Swift.min(rows - 1, r1 - 1)
                        if rLow <= rHigh {
                            if c0 >= 0 { for r in rLow...rHigh { visit(c0, r) } }
                            if c1 < columns { for r in rLow...rHigh { visit(c1, r) } }
                        }
                    }
                }
            }
        }
        return found ? best : nil
    }
}
