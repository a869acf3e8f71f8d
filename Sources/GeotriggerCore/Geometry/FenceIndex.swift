/// An immutable spatial index over fence bounds, queried by a point and a radius in metres;
/// a Sendable snapshot to share between actors.
///
/// Each entry is a box plus a reach in metres (the largest buffer and exit margin any trigger
/// gives that fence). ``query(_:radius:_:)`` reports every entry whose box, grown by
/// reach + radius with ``GeoBounds/expanded(by:)``, holds the point (and possibly a few
/// more near it, which the caller's exact test drops).
///
/// It is an R-tree bulk-loaded by Sort-Tile-Recursive packing at every level, stored in flat
/// arrays (four `Float`s per box, rounded outward, so a box holds at least what its `Double`
/// bounds hold; children as index ranges), so a query allocates nothing. At a million fences
/// the lower levels do not fit in the CPU's caches, and a query's time is the cache lines it
/// reads: half-size boxes, and no child ranges kept for the leaves, are what keep it short.
/// Boxes crossing the antimeridian (``GeoBounds/crossesAntimeridian``) work: a query near ±180
/// also looks 360 degrees to either side.
public struct FenceIndex: Sendable {
    /// Children per node.
    static let fanout = 8
    /// Extra latitude (degrees) for which each entry's longitude margin is already wide enough.
    static let latitudeSlack = 1.0

    /// Boxes of every level, leaves first, as (minLat, minLon, -maxLat, -maxLon) each rounded
    /// down to a `Float` (so the box grows): a box meets the window (north, east, -south,
    /// -west) when it is <= that in all four lanes.
    let boxes: [SIMD4<Float>]
    /// For node `i` (a box after the `count` leaf entries): its children's range in `boxes`,
    /// at 2(i - count) and 2(i - count) + 1.
    let children: [Int32]
    /// For the leaf entries (the first `count` boxes): the entry's number as given.
    let ids: [Int32]
    /// Range of the top level's nodes.
    let rootRange: Range<Int>
    /// West and east limits of all boxes.
    let westmost: Double, eastmost: Double
    let maxReach: Double
    let maxHeight: Double

    /// The number of entries.
    public let count: Int

    /// Approximate bytes held by the index's arrays.
    public var byteCount: Int {
        boxes.count * MemoryLayout<SIMD4<Float>>.stride + (children.count + ids.count) * 4
    }

    /// Builds the index over `bounds[i]` with reach `reach[i]`; entry `i` is reported as
    /// `ids[i]`, or as `i` without `ids`.
    public init(bounds: [GeoBounds], reach: [Double], ids given: [Int32]? = nil) {
        precondition(bounds.count == reach.count, "FenceIndex: one reach per box")
        precondition(given.map { $0.count == bounds.count } ?? true, "FenceIndex: one id per box")
        count = bounds.count
        var maxReach = 0.0, maxHeight = 0.0
        // Leaf boxes: grown by reach in latitude exactly and in longitude with the margin
        // needed `latitudeSlack` degrees farther from the equator (see query).
        var items: [(box: SIMD4<Double>, payload: SIMD2<Int32>)] = []
        items.reserveCapacity(bounds.count)
        for (i, (b, r)) in zip(bounds, reach).enumerated() {
            let reach = r.isFinite ? Swift.max(0, r) : 0
            maxReach = Swift.max(maxReach, reach)
            maxHeight = Swift.max(maxHeight, b.maxLat - b.minLat)
            let dLat = Earth.degreesLatitude(metres: reach) * (1 + 1e-12)
            let lat = Swift.min(89.99, b.extremeLatitude + dLat + FenceIndex.latitudeSlack)
            let dLon = reach > 0 ? Earth.degreesLongitude(metres: reach, atLatitude: lat) * (1 + 1e-12) : 0
            var minLon = b.minLon, maxLon = b.maxLon
            while minLon >= 180 {
                minLon -= 360
                maxLon -= 360
            }
            while minLon < -180 {
                minLon += 360
                maxLon += 360
            }
            items.append(
                (SIMD4(b.minLat - dLat, minLon - dLon, b.maxLat + dLat, maxLon + dLon), SIMD2(given?[i] ?? Int32(i), 0)))
        }
        self.maxReach = maxReach
        self.maxHeight = maxHeight

        var boxes: [SIMD4<Float>] = []
        var children: [Int32] = []
        var ids: [Int32] = []
        var levelStart = 0
        var level = items
        var isLeafLevel = true
        var west = Double.infinity, east = -Double.infinity
        while !level.isEmpty {
            level = FenceIndex.strOrder(level)
            levelStart = boxes.count
            for item in level {
                boxes.append(FenceIndex.roundedDown(item.box * SIMD4(1, 1, -1, -1)))
                if isLeafLevel {
                    ids.append(item.payload.x)
                    west = Swift.min(west, item.box.y)
                    east = Swift.max(east, item.box.w)
                } else {
                    children += [item.payload.x, item.payload.y]
                }
            }
            isLeafLevel = false
            if level.count == 1 { break }
            // Group consecutive items into parents.
            var parents: [(box: SIMD4<Double>, payload: SIMD2<Int32>)] = []
            var start = 0
            while start < level.count {
                let end = Swift.min(start + FenceIndex.fanout, level.count)
                var box = level[start].box
                for item in level[(start + 1)..<end] {
                    box = SIMD4(
                        Swift.min(box.x, item.box.x), Swift.min(box.y, item.box.y),
                        Swift.max(box.z, item.box.z), Swift.max(box.w, item.box.w))
                }
                parents.append((box, SIMD2(Int32(levelStart + start), Int32(levelStart + end))))
                start = end
            }
            level = parents
        }
        self.boxes = boxes
        self.children = children
        self.ids = ids
        rootRange = levelStart..<boxes.count
        westmost = west
        eastmost = east
    }

    /// Sort-Tile-Recursive order: vertical slices by centre longitude, each sorted by centre latitude.
    /// The sorts move each item's centre and position (16 bytes) rather than the item (48) and
    /// compare centres worked out once; they are the same stable sorts, so the order is too.
    static func strOrder(_ items: [(box: SIMD4<Double>, payload: SIMD2<Int32>)]) -> [(
        box: SIMD4<Double>, payload: SIMD2<Int32>
    )] {
        guard items.count > fanout else { return items }
        let pages = (items.count + fanout - 1) / fanout
        let slices = Int(Double(pages).squareRoot().rounded(.up))
        let perSlice = slices * fanout
        var byLon = items.indices.map { Centre(key: items[$0].box.y + items[$0].box.w, item: Int32($0)) }
        byLon.sort { $0.key < $1.key }
        var out: [(box: SIMD4<Double>, payload: SIMD2<Int32>)] = []
        out.reserveCapacity(items.count)
        var slice: [Centre] = []
        slice.reserveCapacity(perSlice)
        var start = 0
        while start < byLon.count {
            let end = Swift.min(start + perSlice, byLon.count)
            slice.removeAll(keepingCapacity: true)
            for centre in byLon[start..<end] {
                let box = items[Int(centre.item)].box
                slice.append(Centre(key: box.x + box.z, item: centre.item))
            }
            slice.sort { $0.key < $1.key }
            for centre in slice { out.append(items[Int(centre.item)]) }
            start = end
        }
        return out
    }

    /// An item's centre (longitude or latitude, doubled) and its position, for ``strOrder(_:)``.
    struct Centre {
        var key: Double
        var item: Int32
    }

    /// Calls `body` with the number of every entry whose box, grown by its reach plus `radius`
    /// metres, holds `point` (see the type's notes). Allocates nothing.
    public func query(_ point: Coordinate, radius: Double, _ body: (Int) -> Void) {
        guard count > 0, let span = span(point, radius: radius) else { return }
        withTree { tree in
            // Near ±180 the point is also looked for 360 degrees east and west; an entry found
            // through an earlier window is not reported again.
            if span.active0 { tree.search(rootRange, span.window(0), body) }
            if span.active360 { tree.search(rootRange, span.window(360), span.active0 ? span.window(0) : nil, nil, body) }
            if span.activeMinus360 {
                tree.search(
                    rootRange, span.window(-360), span.active0 ? span.window(0) : nil,
                    span.active360 ? span.window(360) : nil, body)
            }
        }
    }

    /// Calls `body` once with the number of every entry whose box, grown by its reach, meets
    /// `window` (a box that may cross the antimeridian as ``GeoBounds`` does), and possibly a few
    /// more near it, which the caller's exact test drops. The window is also looked for 360
    /// degrees east and west, as a point near ±180 is.
    public func query(_ window: GeoBounds, _ body: (Int) -> Void) {
        guard count > 0, window.minLat <= window.maxLat, window.minLon <= window.maxLon else { return }
        func shifted(_ shift: Double) -> Window {
            Window(south: window.minLat, north: window.maxLat, west: window.minLon + shift, east: window.maxLon + shift)
        }
        func active(_ shift: Double) -> Bool { window.minLon + shift <= eastmost && window.maxLon + shift >= westmost }
        let plain = shifted(0), east = shifted(360), west = shifted(-360)
        let active0 = active(0), active360 = active(360), activeMinus360 = active(-360)
        withTree { tree in
            if active0 { tree.search(rootRange, plain, body) }
            if active360 { tree.search(rootRange, east, active0 ? plain : nil, nil, body) }
            if activeMinus360 { tree.search(rootRange, west, active0 ? plain : nil, active360 ? east : nil, body) }
        }
    }

    /// What the tree search around one device's recent positions found, so that its next
    /// queries nearby need none (``query(_:radius:cache:_:)``). Valid for one index only: start
    /// a new one (`NearbyCache()`) for another.
    public struct NearbyCache: Sendable {
        // Plain fields, not SIMD vectors, whose 16-byte alignment would make every monitor 16
        // bytes bigger.
        /// The searched window as (north, east, -south, -west), rounded inward to `Float`.
        var window: (Float, Float, Float, Float) = (-.infinity, -.infinity, -.infinity, -.infinity)
        /// Leaf positions of the entries that meet it, in search order (`count` of them): room
        /// for ``capacity``, 8. Among fences 150 m apart a window holds about 4; with room for
        /// fewer, half the updates would search the tree, which at a million fences is out of
        /// the CPU's caches (docs/performance.md, "A million fences").
        var leaves: (Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32) = (0, 0, 0, 0, 0, 0, 0, 0)
        /// How many `leaves` count; `dense`: more than fit, so no tree search is saved in this
        /// window (but none is repeated to find that out); `empty`: nothing cached.
        var count: Int8 = NearbyCache.empty
        /// The window took the narrow margin (``cacheMargins``): the next search starts there
        /// rather than searching the wide window again first, until a narrow window holds at
        /// most a quarter of the places (the device has left the dense part).
        var narrow = false
        static let empty: Int8 = -1
        static let dense: Int8 = -2
        static let capacity = 8

        public init() {}

        var limits: SIMD4<Double> { SIMD4(Double(window.0), Double(window.1), Double(window.2), Double(window.3)) }

        func leaf(_ k: Int) -> Int {
            withUnsafeBytes(of: leaves) { Int($0.load(fromByteOffset: k * MemoryLayout<Int32>.stride, as: Int32.self)) }
        }

        /// Keeps one more leaf, or marks the window dense when all places are taken.
        mutating func append(_ leaf: Int) {
            guard Int(count) < NearbyCache.capacity else {
                count = NearbyCache.dense
                return
            }
            let k = Int(count)
            withUnsafeMutableBytes(of: &leaves) {
                $0.storeBytes(of: Int32(leaf), toByteOffset: k * MemoryLayout<Int32>.stride, as: Int32.self)
            }
            count += 1
        }
    }

    /// How far beyond a query's window a cached search reaches, in metres: 100 m, or where
    /// more entries than a cache holds meet that (dense fences: building footprints, parking
    /// bays), 15 m, which a parked or walking device still stays within for a while.
    static let cacheMargins = [100.0, 15.0]

    /// As ``query(_:radius:_:)``, with the same entries in the same order, but a device's
    /// queries within a margin (``cacheMargins``) of a window searched before go through the
    /// few entries kept in `cache` instead of the tree. Queries that wrap around ±180 are not cached.
    public func query(_ point: Coordinate, radius: Double, cache: inout NearbyCache, _ body: (Int) -> Void) {
        guard count > 0, let span = span(point, radius: radius) else { return }
        guard !span.active360, !span.activeMinus360 else {
            cache = NearbyCache()
            return query(point, radius: radius, body)
        }
        guard span.active0 else { return }
        let q = span.window(0)
        withTree { tree in
            if cache.count == NearbyCache.empty || !all(q.limits .<= cache.limits) {
                let margins = FenceIndex.cacheMargins
                for m in (cache.narrow ? margins.count - 1 : 0)..<margins.count {
                    let dLat = Earth.degreesLatitude(metres: margins[m])
                    let dLon = Earth.degreesLongitude(metres: margins[m], atLatitude: Swift.min(89.99, abs(point.lat)))
                    let wide = Window(limits: q.limits + SIMD4(dLat, dLon, dLat, dLon))
                    var found = NearbyCache()
                    let inward = FenceIndex.roundedDown(wide.limits)
                    found.window = (inward[0], inward[1], inward[2], inward[3])
                    found.count = 0
                    // Stops at the first entry that does not fit: the window is dense.
                    tree.searchLeaves(rootRange, wide) { leaf in
                        found.append(leaf)
                        return found.count >= 0
                    }
                    found.narrow = m > 0 && (found.count < 0 || Int(found.count) > NearbyCache.capacity / 4)
                    cache = found
                    if found.count != NearbyCache.dense { break }
                }
            }
            if cache.count == NearbyCache.dense {
                tree.search(rootRange, q, body)
                return
            }
            for k in 0..<Int(cache.count) {
                let leaf = cache.leaf(k)
                if tree.overlaps(leaf, q) { body(Int(tree.ids[leaf])) }
            }
        }
    }

    /// `limits` in `Float`, each rounded down: a window (north, east, -south, -west) inside the
    /// given one, or a box (minLat, minLon, -maxLat, -maxLon) around it.
    static func roundedDown(_ limits: SIMD4<Double>) -> SIMD4<Float> {
        var rounded = SIMD4<Float>(limits)
        for lane in 0..<4 where Double(rounded[lane]) > limits[lane] { rounded[lane] = rounded[lane].nextDown }
        return rounded
    }

    /// The query windows for `point` and `radius`: latitudes, the point's longitude in
    /// [-180, 180), the half width in longitude, and which of the three shifts can meet a box.
    private struct Span {
        var south: Double, north: Double, lon: Double, halfWidth: Double
        var active0: Bool, active360: Bool, activeMinus360: Bool

        func window(_ shift: Double) -> Window {
            Window(south: south, north: north, west: lon + shift - halfWidth, east: lon + shift + halfWidth)
        }
    }

    private func span(_ point: Coordinate, radius: Double) -> Span? {
        guard point.lat.isFinite, point.lon.isFinite else { return nil }
        let r = radius.isFinite ? Swift.max(0, radius) : 1e9
        let dLat = Earth.degreesLatitude(metres: r) * (1 + 1e-12)
        // The longitude margin for `r` is taken where degrees are shortest for any entry that can
        // match: an entry's farthest latitude is within its height and both margins of the point.
        let farLat = Swift.min(
            89.99, abs(point.lat) + maxHeight + 2 * Earth.degreesLatitude(metres: maxReach + r) + 1e-9)
        let lonMetres = dLat <= FenceIndex.latitudeSlack ? r : r + maxReach
        let w = lonMetres > 0 ? Earth.degreesLongitude(metres: lonMetres, atLatitude: farLat) * (1 + 1e-12) : 0
        var lon = point.lon
        while lon >= 180 { lon -= 360 }
        while lon < -180 { lon += 360 }
        return Span(
            south: point.lat - dLat, north: point.lat + dLat, lon: lon, halfWidth: w,
            active0: lon - w <= eastmost && lon + w >= westmost,
            active360: lon + 360 - w <= eastmost && lon + 360 + w >= westmost,
            activeMinus360: lon - 360 - w <= eastmost && lon - 360 + w >= westmost)
    }

    /// Runs `body` with the flat arrays.
    func withTree(_ body: (Tree) -> Void) {
        boxes.withUnsafeBufferPointer { boxes in
            children.withUnsafeBufferPointer { children in
                ids.withUnsafeBufferPointer { ids in
                    body(Tree(boxes: boxes.baseAddress!, children: children.baseAddress!, ids: ids.baseAddress!, count: count))
                }
            }
        }
    }

    /// A query rectangle in degrees, as (north, east, -south, -west).
    struct Window {
        var limits: SIMD4<Double>
        init(south: Double, north: Double, west: Double, east: Double) {
            limits = SIMD4(north, east, -south, -west)
        }
        init(limits: SIMD4<Double>) { self.limits = limits }
    }

    /// The flat arrays during one query (no captures, so the recursion allocates nothing).
    struct Tree {
        let boxes: UnsafePointer<SIMD4<Float>>
        let children: UnsafePointer<Int32>
        let ids: UnsafePointer<Int32>
        let count: Int

        /// Box `i` as stored, widened to `Double`.
        @inline(__always)
        func box(_ i: Int) -> SIMD4<Double> { SIMD4<Double>(boxes[i]) }

        @inline(__always)
        func overlaps(_ i: Int, _ q: Window) -> Bool {
            all(box(i) .<= q.limits)
        }

        /// The range in `boxes` of node `i`'s children.
        @inline(__always)
        func childRange(_ i: Int) -> Range<Int> {
            Int(children[2 * (i - count)])..<Int(children[2 * (i - count) + 1])
        }

        /// Calls `body` with the number of every entry that meets `q`.
        func search(_ range: Range<Int>, _ q: Window, _ body: (Int) -> Void) {
            for i in range where overlaps(i, q) {
                if i < count {
                    body(Int(ids[i]))
                } else {
                    search(childRange(i), q, body)
                }
            }
        }

        /// As ``search(_:_:_:)``, with each entry's position among the leaves (for the cache,
        /// which tests the leaf's box again). Kept apart so that neither pays for the other.
        /// `body` returns false to stop the search, and then so does this.
        @discardableResult
        func searchLeaves(_ range: Range<Int>, _ q: Window, _ body: (Int) -> Bool) -> Bool {
            for i in range where overlaps(i, q) {
                if i < count {
                    guard body(i) else { return false }
                } else {
                    guard searchLeaves(childRange(i), q, body) else { return false }
                }
            }
            return true
        }

        /// As above, leaving out entries already reported through the `earlier` windows.
        func search(_ range: Range<Int>, _ q: Window, _ earlier: Window?, _ earliest: Window?, _ body: (Int) -> Void) {
            for i in range where overlaps(i, q) {
                if i < count {
                    if let earlier, overlaps(i, earlier) { continue }
                    if let earliest, overlaps(i, earliest) { continue }
                    body(Int(ids[i]))
                } else {
                    search(childRange(i), q, earlier, earliest, body)
                }
            }
        }
    }
}
