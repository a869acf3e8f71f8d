/// The fences nearest to a point in one trigger: what a phone that can monitor only a few
/// regions (OwnTracks waypoints) is given, refreshed as it moves.
extension EngineSnapshot {
    /// The first search radius, metres: most devices have `count` fences within it in a city.
    static let nearestFirstRadius = 1_000.0
    /// A radius that reaches every point of the Earth (half the longest meridian or equator
    /// path is under 20,040 km).
    static let nearestWholeEarth = 20_040_000.0

    /// The `count` fences nearest to `point` among those trigger `trigger` (its name) watches
    /// (kept by its `where`), nearest first (ties: lower fence number first); fewer when the
    /// trigger watches fewer, none for an unknown trigger or a point that is not finite.
    ///
    /// The distance is to the fence grown by its effective buffer in that trigger (see
    /// ``NearFence``). A fence is in one layer, and a trigger has one watch per layer, so it
    /// has at most one buffer per trigger.
    ///
    /// Exact, through the spatial index: the fences within a radius (1 km first) are measured,
    /// those farther than the radius with a bounded query that costs little; when at least
    /// `count` of the trigger's fences lie within it, no fence outside can be nearer, so those
    /// are the answer. Otherwise the radius doubles, up to the whole Earth. The search stops
    /// early once the index has shown every fence the trigger watches (counted per watch when
    /// the snapshot is built), so a trigger with fewer than `count` fences costs no wider
    /// searches than reach them all. Nothing is cached: the snapshot is shared and immutable.
    public func nearestFences(to point: Coordinate, trigger: String, count: Int) -> [NearFence] {
        nearestFences(to: point, watches: watches.indices.filter { watches[$0].settings.trigger == trigger }.map { Int32($0) }, count: count)
    }

    /// ``nearestFences(to:trigger:count:)`` among the fences the watches numbered `watchNumbers`
    /// keep (some of one trigger's watches, such as those whose `devices` take a given phone).
    /// A fence kept by two of them (of two triggers) counts once, with the buffer of the
    /// lower-numbered watch.
    func nearestFences(to point: Coordinate, watches watchNumbers: [Int32], count: Int) -> [NearFence] {
        guard count > 0, point.lat.isFinite, point.lon.isFinite else { return [] }
        var ours = [Bool](repeating: false, count: watches.count)
        // The fences of the chosen watches; more than there are when a fence has two of them,
        // which only makes the search widen further before it stops.
        var total = 0
        for w in watchNumbers.map({ Int($0) }) where watches.indices.contains(w) && !ours[w] {
            ours[w] = true
            total += watchFenceCounts[w]
        }
        guard total > 0 else { return [] }

        /// The buffer of fence `f` in the trigger, nil if the trigger does not keep it.
        func buffer(_ f: Int) -> Double? {
            let start = Int(fenceWatchStart[f]), end = Int(fenceWatchStart[f + 1])
            for i in start..<end where ours[Int(fenceWatches[i].watch)] { return fenceWatches[i].buffer }
            return nil
        }

        let p = PreparedPoint(point)
        var radius = EngineSnapshot.nearestFirstRadius
        var found: [NearFence] = []
        while true {
            found.removeAll(keepingCapacity: true)
            var seen = 0, within = 0
            // The index reports every fence whose buffered distance is at most `radius` (its
            // reach covers the largest buffer any trigger gives the fence), and some farther.
            index.query(point, radius: radius) { f in
                guard let b = buffer(f) else { return }
                seen += 1
                let near = NearFence(fence: f, buffer: b, distance: signedDistance(ofFence: f, to: p, exactWithin: radius + b) - b)
                if near.distance <= radius { within += 1 }
                found.append(near)
            }
            if within >= count {
                // Every fence not among those within the radius is farther than it.
                found.removeAll { $0.distance > radius }
                break
            }
            if seen >= total || radius >= EngineSnapshot.nearestWholeEarth {
                // All there is: those beyond the radius were only bounded; measure them in full.
                for i in found.indices where found[i].distance > radius {
                    found[i].distance = fences[found[i].fence].signedDistance(to: p, within: .infinity) - found[i].buffer
                }
                break
            }
            radius = Swift.min(2 * radius, EngineSnapshot.nearestWholeEarth)
        }
        found.sort(by: NearFence.nearerFirst)
        return found.count <= count ? found : Array(found.prefix(count))
    }
}

/// The `near` query's search: the watched fences nearest to a point, within a radius.
extension EngineSnapshot {
    /// The `count` watched fences (of any trigger) nearest to `point` within `radius` metres,
    /// nearest first (ties: lower fence number first), and whether more fences lie within it.
    ///
    /// The distance is to the fence grown by the largest buffer any trigger gives it (so the
    /// smallest of the distances ``locate(_:accuracy:within:at:)`` gives it, one per trigger).
    /// As ``nearestFences(to:trigger:count:)``, through the index with a radius that starts at
    /// 1 km and doubles up to `radius`, stopping as soon as more than `count` fences lie within
    /// it: the time goes with the fences near the point, not with every fence within `radius`
    /// (100 km can hold all of a gateway's).
    public func nearestWatchedFences(to point: Coordinate, within radius: Double, count: Int) -> (fences: [NearFence], more: Bool) {
        guard count > 0, radius > 0, point.lat.isFinite, point.lon.isFinite else { return ([], false) }
        let p = PreparedPoint(point)
        var r = Swift.min(EngineSnapshot.nearestFirstRadius, radius)
        var found: [NearFence] = []
        while true {
            found.removeAll(keepingCapacity: true)
            index.query(point, radius: r) { f in
                guard let b = largestBuffer(ofFence: f) else { return }
                let d = signedDistance(ofFence: f, to: p, exactWithin: r + b) - b
                if d <= r { found.append(NearFence(fence: f, buffer: b, distance: d)) }
            }
            // More than `count` within r: every fence farther than r is farther than those.
            if found.count > count || r >= radius { break }
            r = Swift.min(2 * r, radius)
        }
        found.sort(by: NearFence.nearerFirst)
        guard found.count > count else { return (found, false) }
        return (Array(found.prefix(count)), true)
    }
}

extension EngineSnapshot {
    /// Fence `f`'s signed distance from `p` for the nearest-fence searches: exact when within
    /// `limit` of its edge (beyond it outside, only known to be beyond), and deeper inside a
    /// polygon measured in full.
    fileprivate func signedDistance(ofFence f: Int, to p: PreparedPoint, exactWithin limit: Double) -> Double {
        let s = fences[f].signedDistance(to: p, within: limit)
        return s < -limit ? fences[f].signedDistance(to: p, within: .infinity) : s
    }
}
