extension TripRoute {
    /// Where a position lies relative to the route (``TripRoute/project(_:from:until:corridor:)``).
    public struct Projection: Sendable, Equatable {
        /// Metres along the route of the point found.
        public var along: Double
        /// Metres from the position to that point.
        public var offBy: Double
        /// The point is within the corridor: the device is on the route there. When false,
        /// `along` and `offBy` name the nearest point of the part searched, which a follower
        /// does not move to.
        public var isWithin: Bool

        public init(along: Double, offBy: Double, isWithin: Bool) {
            self.along = along
            self.offBy = offBy
            self.isWithin = isWithin
        }
    }

    /// How far (metres) the route must lead away from a position, past the nearest point found
    /// so far, before the forward search stops there: a U-turn nearer than this to the device
    /// may be taken for the device's own pass (its `along` then runs ahead by at most twice this).
    public static let turnMargin = 10.0

    /// The device at `c`, last known `from` metres along the route, followed forward (docs/trips.md
    /// "Following the route").
    ///
    /// The search walks the route's chords forward from `from` to `until` metres along, and
    /// takes the first stretch of the route within `corridor` metres of `c`: the point of that
    /// stretch nearest to `c`, stopping once the route leads more than ``turnMargin`` metres
    /// farther away than that point, or out of the corridor. So a route that loops, doubles
    /// back or runs a street twice is followed in order, and a device back from a detour
    /// rejoins at the first forward point within the corridor. When that point is `from`
    /// itself (the device is level with or behind it, as a stopped device's jitter puts it),
    /// the search also walks back at most `corridor` metres to the nearest point there, so
    /// jitter along the road neither ratchets `along` forward nor reads as leaving the route.
    ///
    /// Cost: on the route, the chords from `from` to a little past the device. Otherwise one
    /// sphere test per block of ``blockSize`` chords up to `until` (a block out of the corridor
    /// is passed over whole), and for the nearest point two more per block and the chords of the
    /// few blocks near it. Start with `from` 0 and `until` infinite for a device's first fix: the
    /// first stretch of the whole route near it.
    ///
    /// When no stretch is within the corridor the result is the nearest point of the route
    /// between `from - corridor` and `until`, with `isWithin` false.
    public func project(_ c: Coordinate, from: Double, until: Double, corridor: Double) -> Projection {
        var visited = 0
        return project(c, from: from, until: until, corridor: corridor, visited: &visited)
    }

    /// ``project(_:from:until:corridor:)``, counting in `visited` the chords and blocks it measured.
    func project(_ c: Coordinate, from: Double, until: Double, corridor: Double, visited: inout Int) -> Projection {
        let p = frame.local(lat: c.lat, lon: c.lon)
        let start = Swift.min(Swift.max(from.isFinite ? from : 0, 0), length)
        let limit = Swift.max(start, until.isNaN ? start : until)
        let corridor = Swift.max(0, corridor)
        let corridorSquared = corridor * corridor
        let margin = TripRoute.turnMargin

        // The chord holding `start` and where on it.
        let k0 = chord(at: start)
        let t0 = fraction(of: start, on: k0)

        // Forward: the first stretch within the corridor, and its point nearest to `c`.
        var best: Hit? = nil
        var k = k0
        while k < chordCount, alongs[k] <= limit {
            if k > k0 {
                if k % TripRoute.blockSize == 0 {
                    visited += 1
                    if gap(p, block: k / TripRoute.blockSize) > corridor {
                        // Every chord of the block is out of the corridor.
                        if best != nil { break }
                        k += TripRoute.blockSize
                        continue
                    }
                }
                if let found = best, leadsAway(p, at: k, from: found, corridorSquared: corridorSquared, margin: margin) { break }
            }
            let high = alongs[k + 1] > limit ? fraction(of: limit, on: k) : 1
            visited += 1
            let hit = closest(p, chord: k, low: k == k0 ? t0 : 0, high: high)
            if hit.distanceSquared <= corridorSquared, hit.isNearer(than: best) {
                best = hit
            }
            k += 1
        }

        // Level with or behind `start`: the nearest point at most a corridor back, walking back
        // while the route comes nearer.
        let floor = Swift.max(0, start - corridor)
        if best == nil || (best!.chord == k0 && best!.t <= t0) {
            var back: Hit? = nil
            var k = k0
            while k >= 0, alongs[k + 1] >= floor {
                if k < k0, let found = back,
                    leadsAway(p, at: k + 1, from: found, corridorSquared: corridorSquared, margin: margin)
                {
                    break
                }
                let low = alongs[k] < floor ? fraction(of: floor, on: k) : 0
                visited += 1
                let hit = closest(p, chord: k, low: low, high: k == k0 ? t0 : 1)
                if hit.distanceSquared <= corridorSquared, hit.isNearer(than: back) {
                    back = hit
                }
                if alongs[k] < floor { break }
                k -= 1
            }
            if let back, back.isNearer(than: best) { best = back }
        }

        let found = best ?? nearest(p, from: floor, until: Swift.min(limit, length), visited: &visited)
        return Projection(
            along: found.along, offBy: Earth.arcLength(chord: found.distanceSquared.squareRoot(), radius: radius),
            isWithin: best != nil)
    }

    /// The point of the route between `low` and `high` metres along nearest to `p`, in two
    /// passes over the blocks in between: the first bounds the nearest distance (no point of a
    /// block is farther than its centre plus its radius), the second measures the chords of the
    /// blocks that may hold a nearer point than that.
    func nearest(_ p: SIMD3<Double>, from low: Double, until high: Double, visited: inout Int) -> Hit {
        let first = chord(at: low), last = chord(at: high)
        let firstBlock = first / TripRoute.blockSize, lastBlock = last / TripRoute.blockSize
        var nearest = closest(
            p, chord: first, low: fraction(of: low, on: first), high: first == last ? fraction(of: high, on: last) : 1)
        visited += 1
        var bound = nearest.distanceSquared.squareRoot()
        // Only blocks whose every point lies between `low` and `high`.
        for b in firstBlock...lastBlock where b * TripRoute.blockSize > first && (b + 1) * TripRoute.blockSize <= last {
            visited += 1
            let d = p - blockCentres[b]
            bound = Swift.min(bound, (d * d).sum().squareRoot() + blockRadii[b])
        }
        for b in firstBlock...lastBlock {
            visited += 1
            if gap(p, block: b) > Swift.min(bound, nearest.distanceSquared.squareRoot()) { continue }
            for k in Swift.max(first, b * TripRoute.blockSize)...Swift.min(last, (b + 1) * TripRoute.blockSize - 1) {
                visited += 1
                let hit = closest(
                    p, chord: k, low: k == first ? fraction(of: low, on: k) : 0, high: k == last ? fraction(of: high, on: k) : 1)
                if hit.distanceSquared < nearest.distanceSquared { nearest = hit }
            }
        }
        return nearest
    }

    /// The east/north/up distance from `p` to block `b`'s sphere: no chord of the block is nearer.
    @inline(__always)
    func gap(_ p: SIMD3<Double>, block b: Int) -> Double {
        let d = p - blockCentres[b]
        return (d * d).sum().squareRoot() - blockRadii[b]
    }

    /// The route at point `k` has led away from `c` since `found`: out of the corridor, or more
    /// than ``turnMargin`` farther than `found`.
    @inline(__always)
    func leadsAway(_ p: SIMD3<Double>, at k: Int, from found: Hit, corridorSquared: Double, margin: Double) -> Bool {
        let d = p - points[k]
        let v2 = (d * d).sum()
        let bound = found.distanceSquared.squareRoot() + margin
        return v2 > corridorSquared || v2 > bound * bound
    }

    /// A point of a chord and its squared chord distance from the position searched for.
    struct Hit {
        var distanceSquared: Double
        var along: Double
        var chord: Int
        var t: Double

        /// Nearer than `other` (or there is none) by more than ``TripRoute/tieTolerance``: a
        /// later pass as near as an earlier one (a street run twice) does not take its place.
        @inline(__always)
        func isNearer(than other: Hit?) -> Bool {
            guard let other else { return true }
            return distanceSquared.squareRoot() < other.distanceSquared.squareRoot() - TripRoute.tieTolerance
        }
    }

    /// Metres by which a point must be nearer than the one found first to replace it.
    static let tieTolerance = 0.001

    /// The chord holding `along`: the last whose first point is at or before it.
    func chord(at along: Double) -> Int {
        var low = 0
        var high = chordCount - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if alongs[mid] <= along { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// Where `along` falls on chord `k`, 0...1.
    @inline(__always)
    func fraction(of along: Double, on k: Int) -> Double {
        let span = alongs[k + 1] - alongs[k]
        return span > 0 ? Swift.min(1, Swift.max(0, (along - alongs[k]) / span)) : 0
    }

    /// The point of chord `k` between `low` and `high` (0...1) nearest to `p`.
    @inline(__always)
    func closest(_ p: SIMD3<Double>, chord k: Int, low: Double, high: Double) -> Hit {
        let a = points[k], b = points[k + 1]
        let ab = b - a
        let lengthSquared = (ab * ab).sum()
        var t = lengthSquared > 0 ? ((p - a) * ab).sum() / lengthSquared : 0
        t = Swift.min(Swift.max(t, low), Swift.max(low, high))
        let q = a + t * ab
        let d = p - q
        return Hit(distanceSquared: (d * d).sum(), along: alongs[k] + t * (alongs[k + 1] - alongs[k]), chord: k, t: t)
    }
}
