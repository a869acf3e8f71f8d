/// Finds where the rings of one polygon intersect themselves or each other, in lon/lat (edges
/// are straight there, RFC 7946).
///
/// Edges are bucketed in a uniform grid (about one cell per edge, each edge entered only in
/// the cells it passes through), so only edges sharing a cell are compared: near-linear on
/// real rings such as the NYC taxi zones' 7,814-vertex polygons, where all pairs would be 30 M tests.
///
/// Within one ring, any contact between edges that are not neighbours is reported (a crossing
/// or a ring touching itself). Between two rings (exterior and hole, or two holes), a crossing
/// or a shared stretch of boundary is reported; touching at a single point is allowed, as in OGC.
enum RingIntersectionFinder {
    /// Where two edges meet: the rings (indexes into the polygon's rings), the positions the edges
    /// start at (indexes into each ring), and about where they meet.
    struct Intersection: Equatable {
        var ringA: Int
        var positionA: Int
        var ringB: Int
        var positionB: Int
        var point: Coordinate
    }

    struct Edge {
        var ring: Int32
        /// Index of the edge's first position in the original ring.
        var position: Int32
        /// The edge's number among its ring's non-degenerate edges, and how many the ring has.
        var ordinal: Int32
        var ringEdges: Int32
        var ax: Double, ay: Double, bx: Double, by: Double
    }

    /// Rings of at most this many positions in all are checked pair by pair, edges on the
    /// stack: for the small polygons most fence files hold, quicker than building the grid.
    static let pairwiseLimit = 32

    /// The first intersection found among `rings` (closed rings, each with >= 4 positions), or nil.
    static func find(in rings: [[Coordinate]]) -> Intersection? {
        var positions = 0
        for ring in rings { positions += ring.count }
        if positions <= pairwiseLimit { return findPairwise(in: rings, positions: positions) }
        return findInGrid(in: rings)
    }

    /// As ``find(in:)``, every pair of edges compared (the same pairs in the same order as the
    /// grid compares those sharing a cell, so the same intersection is reported).
    static func findPairwise(in rings: [[Coordinate]], positions: Int) -> Intersection? {
        withUnsafeTemporaryAllocation(of: Edge.self, capacity: positions) { edges in
            var count = 0
            for (r, ring) in rings.enumerated() {
                let first = count
                var ordinal: Int32 = 0
                for i in 0..<(ring.count - 1) where ring[i] != ring[i + 1] {
                    edges.initializeElement(
                        at: count,
                        to: Edge(
                            ring: Int32(r), position: Int32(i), ordinal: ordinal, ringEdges: 0,
                            ax: ring[i].lon, ay: ring[i].lat, bx: ring[i + 1].lon, by: ring[i + 1].lat))
                    count += 1
                    ordinal += 1
                }
                for k in first..<count { edges[k].ringEdges = ordinal }
            }
            var best: Intersection?
            if count >= 2 {
                for i in 0..<(count - 1) {
                    let a = edges[i]
                    for j in (i + 1)..<count {
                        if let hit = intersection(a, edges[j]), best == nil || isEarlier(hit, than: best!) { best = hit }
                    }
                }
            }
            _ = edges.prefix(count).deinitialize()
            return best
        }
    }

    /// As ``find(in:)``, with the edges bucketed in a grid.
    static func findInGrid(in rings: [[Coordinate]]) -> Intersection? {
        var edges: [Edge] = []
        for (r, ring) in rings.enumerated() {
            let first = edges.count
            var ordinal: Int32 = 0
            for i in 0..<(ring.count - 1) where ring[i] != ring[i + 1] {
                edges.append(
                    Edge(
                        ring: Int32(r), position: Int32(i), ordinal: ordinal, ringEdges: 0,
                        ax: ring[i].lon, ay: ring[i].lat, bx: ring[i + 1].lon, by: ring[i + 1].lat))
                ordinal += 1
            }
            for k in first..<edges.count { edges[k].ringEdges = ordinal }
        }
        guard edges.count >= 2 else { return nil }

        var minX = Double.infinity, minY = Double.infinity, maxX = -Double.infinity, maxY = -Double.infinity
        for e in edges {
            minX = min(minX, e.ax, e.bx); maxX = max(maxX, e.ax, e.bx)
            minY = min(minY, e.ay, e.by); maxY = max(maxY, e.ay, e.by)
        }
        let width = max(maxX - minX, 1e-12), height = max(maxY - minY, 1e-12)
        let cellTarget = Double(min(edges.count, 1 << 20))
        let columns = max(1, min(Int((cellTarget * width / height).squareRoot()), 1 << 12))
        let rows = max(1, min(Int(cellTarget / Double(columns)), 1 << 12))
        let cellWidth = width / Double(columns), cellHeight = height / Double(rows)
        func column(_ x: Double) -> Int { min(columns - 1, max(0, Int((x - minX) / cellWidth))) }
        func row(_ y: Double) -> Int { min(rows - 1, max(0, Int((y - minY) / cellHeight))) }

        // (cell, edge) pairs for every cell an edge passes through, column by column.
        var entries: [(cell: Int32, edge: Int32)] = []
        entries.reserveCapacity(edges.count * 3)
        for (k, e) in edges.enumerated() {
            let c0 = column(min(e.ax, e.bx)), c1 = column(max(e.ax, e.bx))
            for c in c0...c1 {
                var yLow = min(e.ay, e.by), yHigh = max(e.ay, e.by)
                if c0 != c1 {
                    // The part of the edge within this column's x range.
                    let x0 = max(minX + Double(c) * cellWidth, min(e.ax, e.bx))
                    let x1 = min(minX + Double(c + 1) * cellWidth, max(e.ax, e.bx))
                    let y0 = e.ay + (x0 - e.ax) / (e.bx - e.ax) * (e.by - e.ay)
                    let y1 = e.ay + (x1 - e.ax) / (e.bx - e.ax) * (e.by - e.ay)
                    yLow = max(yLow, min(y0, y1)); yHigh = min(yHigh, max(y0, y1))
                    if yLow > yHigh { swap(&yLow, &yHigh) }
                }
                // Edges lying on a cell boundary go into both cells.
                let r0 = row(yLow - cellHeight * 1e-6), r1 = row(yHigh + cellHeight * 1e-6)
                for r in r0...r1 { entries.append((cell: Int32(r * columns + c), edge: Int32(k))) }
            }
        }
        entries.sort { $0.cell != $1.cell ? $0.cell < $1.cell : $0.edge < $1.edge }

        var best: Intersection?
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, entries[end].cell == entries[start].cell { end += 1 }
            if end - start >= 2 {
                for i in start..<(end - 1) {
                    let a = edges[Int(entries[i].edge)]
                    for j in (i + 1)..<end {
                        let b = edges[Int(entries[j].edge)]
                        if let hit = intersection(a, b), best == nil || isEarlier(hit, than: best!) { best = hit }
                    }
                }
            }
            start = end
        }
        return best
    }

    /// Orders intersections by ring and position, so the report does not depend on the grid.
    static func isEarlier(_ x: Intersection, than y: Intersection) -> Bool {
        (x.ringA, x.positionA, x.ringB, x.positionB) < (y.ringA, y.positionA, y.ringB, y.positionB)
    }

    static func areNeighbours(_ a: Edge, _ b: Edge) -> Bool {
        guard a.ring == b.ring else { return false }
        let d = abs(a.ordinal - b.ordinal)
        return d == 0 || d == 1 || d == a.ringEdges - 1
    }

    static func orientation(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ cx: Double, _ cy: Double) -> Double {
        (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    }

    /// True if c, known to be collinear with segment ab, lies within its bounding box.
    static func within(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ cx: Double, _ cy: Double) -> Bool {
        cx >= min(ax, bx) && cx <= max(ax, bx) && cy >= min(ay, by) && cy <= max(ay, by)
    }

    /// The contact between edges `a` and `b` that makes the polygon invalid, if any.
    static func intersection(_ a: Edge, _ b: Edge) -> Intersection? {
        if areNeighbours(a, b) { return nil }
        let (first, second) = (a.ring, a.position) < (b.ring, b.position) ? (a, b) : (b, a)
        func hit(_ x: Double, _ y: Double) -> Intersection {
            Intersection(
                ringA: Int(first.ring), positionA: Int(first.position), ringB: Int(second.ring),
                positionB: Int(second.position), point: Coordinate(lat: y, lon: x))
        }
        let d1 = orientation(b.ax, b.ay, b.bx, b.by, a.ax, a.ay)
        let d2 = orientation(b.ax, b.ay, b.bx, b.by, a.bx, a.by)
        let d3 = orientation(a.ax, a.ay, a.bx, a.by, b.ax, b.ay)
        let d4 = orientation(a.ax, a.ay, a.bx, a.by, b.bx, b.by)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) {
            let t = d1 / (d1 - d2)
            return hit(a.ax + t * (a.bx - a.ax), a.ay + t * (a.by - a.ay))
        }
        if d1 == 0 && d2 == 0 && d3 == 0 && d4 == 0 {
            // Collinear: an overlap of positive length is invalid in any case.
            let useX = abs(a.bx - a.ax) >= abs(a.by - a.ay)
            let (a0, a1) = useX ? (min(a.ax, a.bx), max(a.ax, a.bx)) : (min(a.ay, a.by), max(a.ay, a.by))
            let (b0, b1) = useX ? (min(b.ax, b.bx), max(b.ax, b.bx)) : (min(b.ay, b.by), max(b.ay, b.by))
            let low = max(a0, b0), high = min(a1, b1)
            if low < high {
                let t = useX ? (low - a.ax) / (a.bx - a.ax) : (low - a.ay) / (a.by - a.ay)
                return hit(a.ax + t * (a.bx - a.ax), a.ay + t * (a.by - a.ay))
            }
            if low > high || a.ring != b.ring { return nil }
        }
        // Touching at one point: only an error within one ring.
        guard a.ring == b.ring else { return nil }
        if d1 == 0 && within(b.ax, b.ay, b.bx, b.by, a.ax, a.ay) { return hit(a.ax, a.ay) }
        if d2 == 0 && within(b.ax, b.ay, b.bx, b.by, a.bx, a.by) { return hit(a.bx, a.by) }
        if d3 == 0 && within(a.ax, a.ay, a.bx, a.by, b.ax, b.ay) { return hit(b.ax, b.ay) }
        if d4 == 0 && within(a.ax, a.ay, a.bx, a.by, b.bx, b.by) { return hit(b.bx, b.by) }
        return nil
    }
}
