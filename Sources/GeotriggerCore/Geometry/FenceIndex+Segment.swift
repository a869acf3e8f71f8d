extension FenceIndex {
    /// Calls `body` with the number of every entry whose box (grown by its reach) the straight
    /// lon/lat segment from `a` to `b` (the shorter way round in longitude) meets: the fences a
    /// device moving along it may have passed through (and possibly a few more near it, which
    /// the caller's exact test drops). Each entry is reported once. Allocates nothing.
    ///
    /// The tree is walked only into nodes whose box the segment itself meets (not just its
    /// bounding box), so a long jump costs what the boxes along it need. When `cache` (the
    /// device's ``NearbyCache`` from its last point query) holds a window that contains the
    /// whole segment, its few entries are tested instead of the tree.
    public func query(segmentFrom a: Coordinate, to b: Coordinate, cache: NearbyCache, _ body: (Int) -> Void) {
        guard count > 0, a.lat.isFinite, a.lon.isFinite, b.lat.isFinite, b.lon.isFinite else { return }
        var x0 = a.lon
        while x0 >= 180 { x0 -= 360 }
        while x0 < -180 { x0 += 360 }
        var dx = b.lon - a.lon
        while dx > 180 { dx -= 360 }
        while dx < -180 { dx += 360 }
        let segment = Segment(x0: x0, y0: a.lat, dx: dx, dy: b.lat - a.lat)
        // Longitude shifts under which the segment can meet a box: 0, then 360 and -360 near ±180.
        func active(_ shift: Double) -> Bool { segment.west + shift <= eastmost && segment.east + shift >= westmost }
        let active0 = active(0), active360 = active(360), activeMinus360 = active(-360)
        guard active0 || active360 || activeMinus360 else { return }
        withTree { tree in
            if active0, !active360, !activeMinus360, cache.count >= 0, all(segment.window(0).limits .<= cache.limits) {
                let q = segment.window(0)
                for k in 0..<Int(cache.count) {
                    let leaf = cache.leaf(k)
                    if tree.overlaps(leaf, q), segment.meets(tree.box(leaf), shift: 0) { body(Int(tree.ids[leaf])) }
                }
                return
            }
            if active0 { tree.search(rootRange, segment, shift: 0) { body(Int(tree.ids[$0])) } }
            // Near ±180 a box may meet the segment under two shifts: it is reported under the first.
            if active360 {
                tree.search(rootRange, segment, shift: 360) { leaf in
                    if active0, segment.meets(tree.box(leaf), shift: 0) { return }
                    body(Int(tree.ids[leaf]))
                }
            }
            if activeMinus360 {
                tree.search(rootRange, segment, shift: -360) { leaf in
                    if active0, segment.meets(tree.box(leaf), shift: 0) { return }
                    if active360, segment.meets(tree.box(leaf), shift: 360) { return }
                    body(Int(tree.ids[leaf]))
                }
            }
        }
    }

    /// A lon/lat segment: from (x0, y0) by (dx, dy) degrees (x = longitude, y = latitude).
    struct Segment {
        var x0: Double, y0: Double, dx: Double, dy: Double

        var west: Double { Swift.min(x0, x0 + dx) }
        var east: Double { Swift.max(x0, x0 + dx) }

        /// The segment's bounding box shifted by `shift` degrees of longitude, as a query window.
        func window(_ shift: Double) -> Window {
            Window(
                south: Swift.min(y0, y0 + dy), north: Swift.max(y0, y0 + dy), west: west + shift, east: east + shift)
        }

        /// True if the segment shifted by `shift` degrees of longitude meets `box` (stored as
        /// (minLat, minLon, -maxLat, -maxLon)), edges included: Liang-Barsky clipping.
        @inline(__always)
        func meets(_ box: SIMD4<Double>, shift: Double) -> Bool {
            let x = x0 + shift
            var low = 0.0, high = 1.0
            @inline(__always)
            func clip(_ p: Double, _ q: Double) -> Bool {
                // The part with p * t <= q.
                if p == 0 { return q >= 0 }
                let r = q / p
                if p < 0 {
                    if r > high { return false }
                    if r > low { low = r }
                } else {
                    if r < low { return false }
                    if r < high { high = r }
                }
                return true
            }
            return clip(-dx, x - box.y) && clip(dx, -box.w - x) && clip(-dy, y0 - box.x) && clip(dy, -box.z - y0)
        }
    }
}

extension FenceIndex.Tree {
    /// Calls `body` with the leaf position of every entry whose box the segment (shifted by
    /// `shift`) meets, descending only into nodes whose box it meets.
    func search(_ range: Range<Int>, _ segment: FenceIndex.Segment, shift: Double, _ body: (Int) -> Void) {
        let q = segment.window(shift)
        for i in range where overlaps(i, q) && segment.meets(box(i), shift: shift) {
            if i < count {
                body(i)
            } else {
                search(childRange(i), segment, shift: shift, body)
            }
        }
    }
}
