#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Exact point-in-polygon for a set of polygons with holes, in (unwrapped) lon/lat degrees.
///
/// The answer is the even-odd crossing rule per polygon (a horizontal ray towards larger
/// longitudes; an edge counts if one end is above the ray and the other is not), and "inside"
/// means inside some polygon. A polygon of at most ``scanLimit`` edges (most fences) is
/// answered by testing every edge, which costs about what a cell lookup does at that size;
/// it has no ``Cells`` at all. For larger ones, two structures make it fast:
/// - a grid of cells over the bounds, each marked outside, inside or boundary; a cell that no
///   edge touches is inside or outside as a whole, decided once at build time;
/// - latitude bands, each listing the edges whose latitude range meets it, so a point in a
///   boundary cell tests only the edges of its band (the same test as testing every edge,
///   since an edge outside the band cannot straddle the point's latitude).
///
/// Memory: the vertices are the fence's own ring arrays (``Rings``), shared copy-on-write with
/// the ``Fence``; a ring gets a copy of its own only when unwrapping moved one of its
/// longitudes (a fence near the antimeridian). Vertices are numbered through the rings one after
/// another and an edge is named by the number of its first vertex, so a band lists 2-byte
/// numbers (4 bytes beyond 65,536) rather than copies of its edges, and cells take 2 bits each.
/// The bands list at most eight entries per edge for any polygon (fewer bands when many edges
/// are long, see ``Bands/init(_:minY:height:)``), and the cells are at most about four per
/// edge, so the memory is linear in the vertices.
/// The crossing arithmetic is done at query time from the two vertices (x = longitude,
/// y = latitude), exactly as it was written when bands held copies of the edges (so the answers
/// are bit for bit the same).
struct PolygonLocator: Sendable {
    /// Edges grouped by latitude band.
    struct Bands: Sendable {
        let minY: Double
        let count: Int
        let scale: Double
        /// Band `k` lists `edges[start[k] ..< start[k + 1]]`.
        let start: CompactIndices
        /// The number (see ``Rings``) of each listed edge's first vertex, ascending within a band.
        let edges: CompactIndices

        /// At most this many entries per edge are listed, whatever the polygon.
        static let entriesPerEdge = 8

        /// Bands over `edges`: the first vertex's number and the latitudes of both ends of each
        /// non-horizontal edge, in ascending vertex order.
        ///
        /// One band per two edges (at most 65,536), unless the edges would then be listed more
        /// than ``entriesPerEdge`` times each on average (long edges spanning many bands, as in a
        /// sawtooth of tall teeth, would make the lists quadratic): then fewer bands, so memory
        /// stays linear in the edges. The entries are about `edges + bands * L`, where L is the
        /// edges' summed height over the polygon's; at the limit a band lists at most
        /// `entriesPerEdge / (entriesPerEdge - 1)` times the edges it would have listed with
        /// all the bands, since the long edges that forced it are listed in every band anyway.
        init(_ edges: [(first: Int32, a: Double, b: Double)], minY: Double, height: Double) {
            var bands = Swift.max(1, Swift.min(1 << 16, edges.count / 2))
            let limit = Bands.entriesPerEdge * edges.count
            var total = Bands.entryCount(edges, bands: bands, minY: minY, height: height)
            while total > limit, bands > 1 {
                // Aim just under the limit; shrink by at least 1/16 so that this ends quickly.
                let perBand = Double(total - edges.count) / Double(bands)
                let aim = Int(Double(limit - edges.count) / perBand)
                bands = Swift.max(1, Swift.min(aim, bands - Swift.max(1, bands / 16)))
                total = Bands.entryCount(edges, bands: bands, minY: minY, height: height)
            }
            self.minY = minY
            count = bands
            let scale = Double(bands) / height
            self.scale = scale
            let last = bands - 1
            func band(_ y: Double) -> Int { Swift.min(last, Swift.max(0, Int((y - minY) * scale))) }
            func range(_ e: (first: Int32, a: Double, b: Double)) -> ClosedRange<Int> {
                band(Swift.min(e.a, e.b))...band(Swift.max(e.a, e.b))
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
                    placed[fill[k]] = Int(e.first)
                    fill[k] += 1
                }
            }
            start = CompactIndices(counts)
            self.edges = CompactIndices(placed)
        }

        /// How many entries `bands` bands over `edges` would list (each edge once per band it meets).
        static func entryCount(_ edges: [(first: Int32, a: Double, b: Double)], bands: Int, minY: Double, height: Double) -> Int {
            let scale = Double(bands) / height
            let last = bands - 1
            func band(_ y: Double) -> Int { Swift.min(last, Swift.max(0, Int((y - minY) * scale))) }
            var total = 0
            for e in edges { total += band(Swift.max(e.a, e.b)) - band(Swift.min(e.a, e.b)) + 1 }
            return total
        }

        /// The band holding latitude `y` (clamped to the bands).
        @inline(__always)
        func band(_ y: Double) -> Int { Swift.min(count - 1, Swift.max(0, Int((y - minY) * scale))) }
    }

    /// The rings' vertices, numbered through the rings one after another: vertex `n` of ring `r`
    /// has the number `starts[r] + n`.
    struct Rings: Sendable {
        /// Ring 0, the only ring of most fences (read without a second hop); empty for no rings.
        /// Every ring is closed (its last vertex repeats its first), with longitudes unwrapped,
        /// and is the fence's own array unless unwrapping changed one of its longitudes.
        let first: [Coordinate]
        /// The tables of a fence of several rings; nil when there is at most one (numbers are
        /// then indices into ``first``). A class, so that the common fence holds one nil
        /// reference rather than three empty arrays.
        let extra: Several?
        /// How many vertices are held in copies made by unwrapping (not shared with the fence).
        private let copied: Int32

        /// Every ring of a fence of several rings, numbered through.
        final class Several: Sendable {
            /// Every ring (ring 0 too).
            let rings: [[Coordinate]]
            /// `starts[r]` is the number of ring `r`'s first vertex, `starts[ring count]` the
            /// number of vertices.
            let starts: [Int]
            /// `owners[r]` is the polygon of ring `r`, mod 64; empty when every ring belongs to
            /// polygon 0 (a plain Polygon with holes).
            let owners: [UInt8]

            init(rings: [[Coordinate]], starts: [Int], owners: [UInt8]) {
                self.rings = rings
                self.starts = starts
                self.owners = owners
            }

            /// The ring holding vertex number `n` (`0 <= n < starts.last`).
            @inline(__always)
            func ring(holding n: Int) -> Int {
                starts.withUnsafeBufferPointer { starts in
                    var low = 0, high = starts.count - 1  // starts[low] <= n < starts[high]
                    while high - low > 1 {
                        let middle = (low + high) >> 1
                        if starts[middle] <= n { low = middle } else { high = middle }
                    }
                    return low
                }
            }
        }

        /// Every ring (ring 0 too) when there are several; empty when there is at most one.
        var several: [[Coordinate]] { extra?.rings ?? [] }
        /// ``Several/starts``; empty when there is at most one ring.
        var starts: [Int] { extra?.starts ?? [] }
        /// ``Several/owners``; empty when every ring belongs to polygon 0 (the common case).
        var owners: [UInt8] { extra?.owners ?? [] }
        /// How many vertices are held in copies made by unwrapping (not shared with the fence).
        var copiedCount: Int { Int(copied) }

        /// `rings` (closed, ring `i` of polygon `polygon[i]`) with longitudes unwrapped into
        /// `westLimit ..< westLimit + 360`; a ring unwrapping leaves unchanged is kept as it is.
        init(_ rings: [[Coordinate]], polygon: [Int], westLimit: Double) {
            var copied = 0
            let vertices = rings.map { ring in
                let moved = ring.contains {
                    PreparedFence.unwrap($0.lon, westLimit: westLimit).bitPattern != $0.lon.bitPattern
                }
                guard moved else { return ring }
                copied += ring.count
                return ring.map { Coordinate(lat: $0.lat, lon: PreparedFence.unwrap($0.lon, westLimit: westLimit)) }
            }
            self.copied = Int32(clamping: copied)
            first = vertices.first ?? []
            if rings.count > 1 {
                var starts = [0]
                starts.reserveCapacity(rings.count + 1)
                for ring in rings { starts.append(starts[starts.count - 1] + ring.count) }
                let owners = polygon.allSatisfy { $0 & 63 == 0 } ? [] : polygon.map { UInt8($0 & 63) }
                extra = Several(rings: vertices, starts: starts, owners: owners)
            } else {
                extra = nil
            }
        }

        /// Every ring (for building).
        var all: [[Coordinate]] { extra?.rings ?? (first.isEmpty ? [] : [first]) }

        /// Bytes held beyond what the fence holds: the copied vertices and the tables.
        var byteCount: Int {
            copiedCount * MemoryLayout<Coordinate>.stride + several.count * MemoryLayout<[Coordinate]>.stride
                + starts.count * MemoryLayout<Int>.stride + owners.count
        }
    }

    enum CellState: UInt8 { case outside, inside, boundary }

    /// The cells and bands of a polygon of more than ``scanLimit`` edges (a class, so that a
    /// small fence holds a nil reference rather than their fields).
    final class Cells: Sendable {
        let columns: Int, rows: Int
        let cellScaleX: Double, cellScaleY: Double
        /// The cells' states, four to a byte (cell `i` in bits `2 * (i % 4)` of byte `i / 4`).
        let cells: [UInt8]
        let bands: Bands

        init(columns: Int, rows: Int, cellScaleX: Double, cellScaleY: Double, cells: [UInt8], bands: Bands) {
            self.columns = columns
            self.rows = rows
            self.cellScaleX = cellScaleX
            self.cellScaleY = cellScaleY
            self.cells = cells
            self.bands = bands
        }
    }

    /// Rings of at most this many edges in all are answered by testing every edge, without
    /// cells or bands.
    /// Measured with `geotrigger bench index --vertices V` (containment of random points in
    /// 10,000 polygons, buffered distances to points and lines): at 12 to 32 edges the scan
    /// answered 5-20 % more points per CPU second than the cells, and at 64 about as many; 32
    /// leaves a margin for the distance scan, which the engine runs for polygons too.
    static let scanLimit = 32

    /// The box of the rings (of the whole fence for points and lines, which have none).
    let minX: Double, minY: Double, maxX: Double, maxY: Double
    /// Cells and bands; nil when every edge is tested (at most ``scanLimit`` edges).
    let grid: Cells?
    /// The vertices; the bands never list an edge whose first vertex ends its ring. Last, so
    /// that the struct ends 4 bytes short of a multiple of 8 and a small field of the
    /// ``PreparedFence`` holding it fits there.
    let rings: Rings

    /// The latitude bands (one empty band without ``grid``).
    var bands: Bands { grid?.bands ?? Bands([], minY: minY, height: 1) }

    /// `rings[i]` is a closed ring of (lat, lon) belonging to polygon `polygon[i]`; longitudes
    /// are unwrapped into `westLimit ..< westLimit + 360` (x = unwrapped lon, y = lat). `box`
    /// is the box of every position of the fence with longitudes so unwrapped (for a polygon,
    /// the box of its rings).
    init(rings fenceRings: [[Coordinate]], polygon: [Int], westLimit: Double, box: GeoBounds) {
        let rings = Rings(fenceRings, polygon: polygon, westLimit: westLimit)
        let all = rings.all
        var lo = SIMD2(box.minLon, box.minLat), hi = SIMD2(box.maxLon, box.maxLat)
        var edgeCount = 0
        for ring in all { edgeCount += Swift.max(0, ring.count - 1) }
        self.rings = rings
        if !(lo.x <= hi.x) { lo = .zero; hi = .zero }
        minX = lo.x
        minY = lo.y
        maxX = hi.x
        maxY = hi.y
        guard edgeCount > PolygonLocator.scanLimit else {
            grid = nil
            return
        }
        var edges: [(first: Int32, a: Double, b: Double)] = []
        edges.reserveCapacity(edgeCount)
        var first = 0
        for ring in all {
            for (k, (c, d)) in zip(ring, ring.dropFirst()).enumerated() where c.lat != d.lat {
                // Horizontal edges never straddle a ray: they are not listed.
                edges.append((Int32(first + k), c.lat, d.lat))
            }
            first += ring.count
        }
        let height = Swift.max(maxY - minY, 1e-12), width = Swift.max(maxX - minX, 1e-12)
        let bands = Bands(edges, minY: lo.y, height: height)

        // Cells: about four per edge, roughly square in metres.
        let aspect = width * Swift.max(0.05, cos((minY + maxY) / 2 * .pi / 180)) / height
        let target = Double(Swift.max(4, Swift.min(1 << 20, 4 * edges.count)))
        let cols = Swift.max(1, Swift.min(2048, Int((target * aspect).squareRoot().rounded())))
        let rowCount = Swift.max(1, Swift.min(2048, Int((target / Double(cols)).rounded())))
        let scaleX = Double(cols) / width, scaleY = Double(rowCount) / height
        var state = [CellState](repeating: .outside, count: cols * rowCount)
        let cellW = width / Double(cols), cellH = height / Double(rowCount)
        let epsX = cellW * 1e-6, epsY = cellH * 1e-6
        func column(_ x: Double) -> Int { Swift.min(cols - 1, Swift.max(0, Int((x - lo.x) * scaleX))) }
        func row(_ y: Double) -> Int { Swift.min(rowCount - 1, Swift.max(0, Int((y - lo.y) * scaleY))) }
        // Mark every cell an edge (horizontal ones too) may touch, with a small margin.
        for ring in all {
            for (c, d) in zip(ring, ring.dropFirst()) {
                let a = SIMD2(c.lon, c.lat), b = SIMD2(d.lon, d.lat)
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
                let inside = PolygonLocator.crossingTest(x: x, y: y, bands: bands, rings: rings)
                state[r * cols + c] = inside ? .inside : .outside
            }
        }
        var packed = [UInt8](repeating: 0, count: (state.count + 3) / 4)
        for (i, s) in state.enumerated() { packed[i >> 2] |= s.rawValue << UInt8((i & 3) * 2) }
        grid = Cells(columns: cols, rows: rowCount, cellScaleX: scaleX, cellScaleY: scaleY, cells: packed, bands: bands)
    }

    /// Approximate bytes held beyond the fence's own arrays (vertices only where copied).
    var byteCount: Int {
        (grid.map { $0.cells.count + $0.bands.start.byteCount + $0.bands.edges.byteCount } ?? 0) + rings.byteCount
    }

    /// True if (x, y) is inside some polygon (not in one of its holes).
    @inline(__always)
    func contains(x: Double, y: Double) -> Bool {
        guard y >= minY, y <= maxY, x >= minX, x <= maxX else { return false }
        guard let grid else { return scannedCrossingTest(x: x, y: y) }
        let c = Swift.min(grid.columns - 1, Int((x - minX) * grid.cellScaleX))
        let r = Swift.min(grid.rows - 1, Int((y - minY) * grid.cellScaleY))
        let i = r * grid.columns + c
        switch (grid.cells[i >> 2] >> UInt8((i & 3) * 2)) & 3 {
        case CellState.outside.rawValue: return false
        case CellState.inside.rawValue: return true
        default: return PolygonLocator.crossingTest(x: x, y: y, bands: grid.bands, rings: rings)
        }
    }

    /// The crossing test over every edge of every ring (for a locator without cells).
    @inline(__always)
    func scannedCrossingTest(x: Double, y: Double) -> Bool {
        func odd(_ ring: [Coordinate]) -> Bool {
            ring.withUnsafeBufferPointer { vertices in
                var odd = false
                var k = 1
                while k < vertices.count {
                    if PolygonLocator.crosses(vertices[k - 1], vertices[k], x: x, y: y) { odd.toggle() }
                    k += 1
                }
                return odd
            }
        }
        guard let several = rings.extra else { return odd(rings.first) }
        var parity: UInt64 = 0
        for (r, ring) in several.rings.enumerated() where odd(ring) {
            parity ^= several.owners.isEmpty ? 1 : 1 << UInt64(several.owners[r])
        }
        return parity != 0
    }

    /// The crossing test over the edges of (x, y)'s latitude band.
    ///
    /// For an edge with lower end `p` and upper end `q` it counts `lo <= y < hi` and
    /// `x < p.x + (y - p.y) * slope` with `slope = (q.x - p.x) / (q.y - p.y)`: the same
    /// operations in the same order as when each band held a copy of (lo, hi, x0, slope).
    static func crossingTest(x: Double, y: Double, bands: Bands, rings: Rings) -> Bool {
        let band = bands.band(y)
        let listed = bands.start[band]..<bands.start[band + 1]
        guard !listed.isEmpty else { return false }
        switch bands.edges.storage {
        case .narrow(let edges): return parity(edges, listed, x: x, y: y, rings: rings) != 0
        case .wide(let edges): return parity(edges, listed, x: x, y: y, rings: rings) != 0
        }
    }

    /// The crossing parities (one bit per polygon) of `edges[listed]` (not empty).
    ///
    /// One ring: an edge's number is its index in the ring. Several: the listed numbers ascend,
    /// so they come in runs per ring; each run looks its ring up once (a binary search over the
    /// ring starts) and indexes that ring directly.
    @inline(__always)
    static func parity<Index: FixedWidthInteger>(
        _ edges: [Index], _ listed: Range<Int>, x: Double, y: Double, rings: Rings
    ) -> UInt64 {
        var parity: UInt64 = 0
        edges.withUnsafeBufferPointer { edges in
            guard let several = rings.extra else {
                rings.first.withUnsafeBufferPointer { vertices in
                    for i in listed {
                        let k = Int(edges[i])
                        if PolygonLocator.crosses(vertices[k], vertices[k + 1], x: x, y: y) { parity ^= 1 }
                    }
                }
                return
            }
            var i = listed.lowerBound
            var n = Int(edges[i])
            while true {
                let r = several.ring(holding: n)
                let base = several.starts[r], end = several.starts[r + 1]
                var odd: UInt64 = 0
                let more: Bool = several.rings[r].withUnsafeBufferPointer { vertices in
                    while true {
                        let k = n - base
                        if PolygonLocator.crosses(vertices[k], vertices[k + 1], x: x, y: y) { odd ^= 1 }
                        i += 1
                        guard i < listed.upperBound else { return false }
                        n = Int(edges[i])
                        guard n >= base, n < end else { return true }
                    }
                }
                parity ^= several.owners.isEmpty ? odd : odd << UInt64(several.owners[r])
                if !more { break }
            }
        }
        return parity
    }

    /// True if the ray from (x, y) towards larger x crosses the (non-horizontal) edge a-b, with
    /// x = longitude and y = latitude.
    @inline(__always)
    static func crosses(_ a: Coordinate, _ b: Coordinate, x: Double, y: Double) -> Bool {
        let (p, q) = a.lat < b.lat ? (a, b) : (b, a)
        guard y >= p.lat, y < q.lat else { return false }
        return x < p.lon + (y - p.lat) * ((q.lon - p.lon) / (q.lat - p.lat))
    }
}
