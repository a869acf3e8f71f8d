/// Straight 3D segments in a fence's ``LocalFrame``, for the nearest-segment search (bounded
/// or not): scanned one by one for a fence of a few segments, else through a uniform
/// east/north grid of cells.
///
/// The segments come as paths: consecutive points of a path are joined, so a point shared by
/// two segments is stored once and a segment is named by the index of its first point. A
/// segment is listed in every cell its east/north box meets; the last point of a path starts
/// no segment and is never listed.
///
/// One path of at most ``scanLimit`` segments (a small polygon's ring, a point, a short line)
/// has no cells (``cells`` is nil): the search measures every segment, which costs about what
/// a cell lookup does at that size and saves the cells' arrays and their building.
///
/// With cells, the search visits rings of cells outwards from the query point and stops once
/// the east/north distance to every cell not yet visited exceeds the best chord found (or the
/// caller's limit): looking straight down only shortens distances, so that bound is safe and
/// the answer is the exact minimum chord to the stored segments.
///
/// Points are stored as 32-bit floats, as offsets from the centre of the segments' box, to
/// halve their memory. The rounding moves a point by at most 2^-24 of its offset per axis:
/// under 1.5 mm for a fence 50 km across (25 km from the centre), 3 cm at 1,000 km. Cells are
/// built from the rounded points, so the search is exact for the points as stored.
struct SegmentGrid: Sendable {
    /// A stored point: offset (east, north, up) in metres from ``origin``; 12 bytes.
    struct Point: Sendable {
        var x: Float, y: Float, z: Float

        @inline(__always)
        var double: SIMD3<Double> { SIMD3(Double(x), Double(y), Double(z)) }
    }

    /// The grid of cells over the points of a fence with more than a few segments (a class, so
    /// that a fence without one holds a nil reference rather than its fields).
    final class Cells: Sendable {
        /// Box of the stored points, relative to ``SegmentGrid/origin``.
        let minE: Double, minN: Double, maxE: Double, maxN: Double
        let cellSize: Double
        let columns: Int, rows: Int
        /// Cell `c` lists `cellItems[cellStart[c] ..< cellStart[c + 1]]`.
        let cellStart: CompactIndices
        /// First-point indices of the segments listed in each cell.
        let cellItems: CompactIndices

        init(
            minE: Double, minN: Double, maxE: Double, maxN: Double, cellSize: Double, columns: Int, rows: Int,
            cellStart: CompactIndices, cellItems: CompactIndices
        ) {
            self.minE = minE
            self.minN = minN
            self.maxE = maxE
            self.maxN = maxN
            self.cellSize = cellSize
            self.columns = columns
            self.rows = rows
            self.cellStart = cellStart
            self.cellItems = cellItems
        }
    }

    /// One path of at most this many segments is scanned without cells: the limit of
    /// ``PolygonLocator/scanLimit``, measured for both.
    static let scanLimit = PolygonLocator.scanLimit

    /// Local-frame position of the point stored as (0, 0, 0), as three doubles (24 bytes; a
    /// `SIMD3<Double>` field takes 32).
    let originX: Double, originY: Double, originZ: Double
    let points: [Point]
    /// The cells; nil when every segment is scanned (one path of at most ``scanLimit``).
    let cells: Cells?

    /// Local-frame position of the point stored as (0, 0, 0).
    @inline(__always)
    var origin: SIMD3<Double> { SIMD3(originX, originY, originZ) }

    /// The cells' entries (empty without cells).
    var cellItems: CompactIndices { cells?.cellItems ?? CompactIndices([]) }

    /// The segments joining consecutive points of every path (local-frame positions). A path of
    /// one point stands for that point: a segment of length zero.
    init(paths: [[SIMD3<Double>]]) {
        var lo = SIMD3<Double>(repeating: .infinity), hi = SIMD3<Double>(repeating: -.infinity)
        for path in paths {
            for p in path {
                lo = pointwiseMin(lo, p)
                hi = pointwiseMax(hi, p)
            }
        }
        let origin = lo.x <= hi.x ? (lo + hi) / 2 : .zero
        originX = origin.x
        originY = origin.y
        originZ = origin.z
        var points: [Point] = []
        points.reserveCapacity(paths.reduce(0) { $0 + Swift.max(2, $1.count) })
        var starts: [Int] = []
        starts.reserveCapacity(points.capacity)
        for path in paths where !path.isEmpty {
            let first = points.count
            for p in path {
                let d = p - origin
                points.append(Point(x: Float(d.x), y: Float(d.y), z: Float(d.z)))
            }
            if path.count == 1 { points.append(points[first]) }
            starts.append(contentsOf: first..<(points.count - 1))
        }
        self.points = points
        // One path: its points are its segments' ends, one after another.
        if starts.count == points.count - 1, starts.count <= SegmentGrid.scanLimit {
            cells = nil
            return
        }

        // The grid, over the points as stored.
        var low = SIMD2<Double>(repeating: .infinity), high = SIMD2<Double>(repeating: -.infinity)
        for p in points {
            let q = SIMD2(Double(p.x), Double(p.y))
            low = pointwiseMin(low, q)
            high = pointwiseMax(high, q)
        }
        if points.isEmpty { low = .zero; high = .zero }
        let width = high.x - low.x, height = high.y - low.y
        // About one cell per segment: a segment then meets ~1.7 cells on average.
        let target = Double(Swift.max(1, Swift.min(1 << 20, starts.count)))
        var size = Swift.max(1.0, (Swift.max(width * height, 1) / target).squareRoot(), Swift.max(width, height) / 2048)
        // Long segments (a sawtooth of tall teeth) would each be listed in many cells: larger
        // cells until the entries are at most `entriesPerSegment` per segment, so memory stays
        // linear. One cell (size >= width and height) lists each segment once, so this ends.
        let limit = SegmentGrid.entriesPerSegment * starts.count
        while SegmentGrid.entryCount(points: points, starts: starts, low: low, width: width, height: height, size: size) > limit {
            size *= 1.5
        }
        let cols = Swift.max(1, Int((width / size).rounded(.up)))
        let rowCount = Swift.max(1, Int((height / size).rounded(.up)))
        func column(_ e: Double) -> Int { Swift.min(cols - 1, Swift.max(0, Int((e - low.x) / size))) }
        func row(_ n: Double) -> Int { Swift.min(rowCount - 1, Swift.max(0, Int((n - low.y) / size))) }
        func forEachCell(_ k: Int, _ body: (Int) -> Void) {
            let a = points[k], b = points[k + 1]
            let ax = Double(a.x), ay = Double(a.y), bx = Double(b.x), by = Double(b.y)
            for r in row(Swift.min(ay, by))...row(Swift.max(ay, by)) {
                for c in column(Swift.min(ax, bx))...column(Swift.max(ax, bx)) { body(r * cols + c) }
            }
        }
        var counts = [Int](repeating: 0, count: cols * rowCount + 1)
        for k in starts { forEachCell(k) { counts[$0 + 1] += 1 } }
        for k in 0..<(cols * rowCount) { counts[k + 1] += counts[k] }
        var fill = counts
        var items = [Int](repeating: 0, count: counts[cols * rowCount])
        for k in starts {
            forEachCell(k) { cell in
                items[fill[cell]] = k
                fill[cell] += 1
            }
        }
        cells = Cells(
            minE: low.x, minN: low.y, maxE: high.x, maxN: high.y, cellSize: size, columns: cols, rows: rowCount,
            cellStart: CompactIndices(counts), cellItems: CompactIndices(items))
    }

    /// At most this many cell entries per segment, whatever the geometry.
    static let entriesPerSegment = 4

    /// How many cell entries cells of `size` over the box at `low` would list (each segment
    /// once per cell its east/north box meets), as ``init(paths:)`` lists them.
    static func entryCount(points: [Point], starts: [Int], low: SIMD2<Double>, width: Double, height: Double, size: Double) -> Int {
        let cols = Swift.max(1, Int((width / size).rounded(.up)))
        let rowCount = Swift.max(1, Int((height / size).rounded(.up)))
        func column(_ e: Double) -> Int { Swift.min(cols - 1, Swift.max(0, Int((e - low.x) / size))) }
        func row(_ n: Double) -> Int { Swift.min(rowCount - 1, Swift.max(0, Int((n - low.y) / size))) }
        var total = 0
        for k in starts {
            let a = points[k], b = points[k + 1]
            let ax = Double(a.x), ay = Double(a.y), bx = Double(b.x), by = Double(b.y)
            let rowSpan = row(Swift.max(ay, by)) - row(Swift.min(ay, by)) + 1
            let columnSpan = column(Swift.max(ax, bx)) - column(Swift.min(ax, bx)) + 1
            total += rowSpan * columnSpan
        }
        return total
    }

    /// Approximate bytes held by the arrays.
    var byteCount: Int {
        points.count * MemoryLayout<Point>.stride + (cells.map { $0.cellStart.byteCount + $0.cellItems.byteCount } ?? 0)
    }

    /// The smallest squared chord from `p` (a local-frame position) to a segment, if some chord
    /// is at most `limitSquared`^0.5; nil if every segment is farther than that.
    func nearestChordSquared(to position: SIMD3<Double>, limitSquared: Double) -> Double? {
        guard !points.isEmpty else { return nil }
        guard let cells else { return scannedChordSquared(to: position - origin, limitSquared: limitSquared) }
        switch cells.cellItems.storage {
        case .narrow(let items): return cells.nearestChordSquared(to: position - origin, limitSquared: limitSquared, points: points, items: items)
        case .wide(let items): return cells.nearestChordSquared(to: position - origin, limitSquared: limitSquared, points: points, items: items)
        }
    }

    /// The search without cells, for `p` relative to ``origin``: every segment of the one path.
    @inline(__always)
    func scannedChordSquared(to p: SIMD3<Double>, limitSquared: Double) -> Double? {
        var best = limitSquared
        var found = false
        points.withUnsafeBufferPointer { points in
            var a = points[0].double
            for i in 1..<points.count {
                let b = points[i].double
                let d2 = SegmentGrid.chordSquared(p, a, b)
                if d2 <= best {
                    best = d2
                    found = true
                }
                a = b
            }
        }
        return found ? best : nil
    }
}

extension SegmentGrid.Cells {
    /// The search, for `p` relative to the grid's origin, with the cells' items in their stored width.
    @inline(__always)
    func nearestChordSquared<Index: FixedWidthInteger>(
        to p: SIMD3<Double>, limitSquared: Double, points: [SegmentGrid.Point], items: [Index]
    ) -> Double? {
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
        points.withUnsafeBufferPointer { points in
            items.withUnsafeBufferPointer { items in
                func visit(_ c: Int, _ r: Int) {
                    let cell = r * columns + c
                    for k in cellStart[cell]..<cellStart[cell + 1] {
                        let i = Int(items[k])
                        let d2 = SegmentGrid.chordSquared(p, points[i].double, points[i + 1].double)
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
        return found ? best : nil
    }
}

extension SegmentGrid {
    /// Squared distance from `p` to the segment a-b (a point when a == b).
    @inline(__always)
    static func chordSquared(_ p: SIMD3<Double>, _ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double {
        let wx = p.x - a.x, wy = p.y - a.y, wz = p.z - a.z
        let dx = b.x - a.x, dy = b.y - a.y, dz = b.z - a.z
        let along = wx * dx + wy * dy + wz * dz
        var vx = wx, vy = wy, vz = wz
        if along > 0 {
            let lengthSquared = dx * dx + dy * dy + dz * dz
            let t = along >= lengthSquared ? 1 : along / lengthSquared
            vx = wx - t * dx
            vy = wy - t * dy
            vz = wz - t * dz
        }
        return vx * vx + vy * vy + vz * vz
    }
}
