/// What the `features` query shows of the fences (docs/control-plane.md "Queries"): which
/// fences meet a box, and per fence the triggers watching it and its largest buffer.
extension EngineSnapshot {
    /// The largest effective buffer (metres) the triggers watching fence `f` (a position in
    /// ``fences``) give it; nil when no trigger watches it.
    public func largestBuffer(ofFence f: Int) -> Double? {
        var largest: Double?
        forEachWatch(ofFence: f) { _, _, buffer in largest = max(largest ?? buffer, buffer) }
        return largest
    }

    /// The names of the triggers watching fence `f` (a position in ``fences``), in
    /// configuration order.
    public func triggerNames(watchingFence f: Int) -> [String] {
        var names: [String] = []
        forEachWatch(ofFence: f) { _, w, _ in names.append(watches[w].settings.trigger) }
        return names
    }

    /// The positions in ``fences`` of layer `name`'s fences, in file order (fences are numbered
    /// in layer order, so a layer's fences are one run: found without looking at the others);
    /// empty for a layer this snapshot does not have.
    public func fenceNumbers(ofLayer name: String) -> Range<Int> {
        // A layer name is unique among the layers of a snapshot (the fences query relies on it).
        guard let l = fenceNumbers.layerNames.firstIndex(of: name) else { return 0..<0 }
        return fenceNumbers.fences(ofLayer: l)
    }

    /// The positions in ``fences`` (so in layer then file order) of the fences of `layers` (every
    /// layer when nil) whose bounding box, grown by their ``largestBuffer(ofFence:)``, meets `box`
    /// (anywhere when nil): the first `limit` after skipping `offset` of them, and whether more
    /// matched past those. ``fencePage(meeting:layers:limit:offset:)`` with its cost left out.
    public func fenceNumbers(meeting box: GeoBounds?, layers: Set<String>?, limit: Int, offset: Int = 0) -> (numbers: [Int], more: Bool) {
        let page = fencePage(meeting: box, layers: layers, limit: limit, offset: offset)
        return (page.numbers, page.more)
    }

    /// One page of the `features` query's fences (``fenceNumbers(meeting:layers:limit:offset:)``)
    /// and what it cost: `examined`, the fences looked at to find it.
    ///
    /// Without a box, or with one that covers the whole world (every fence meets it), a page is
    /// cut from the layers' runs of fence numbers by arithmetic: it looks at the `limit` fences
    /// it returns (and one more, for `more`), whatever `offset` is and however many fences
    /// there are. With a box the spatial indexes find the fences that meet it (the watched
    /// fences' and the unwatched ones'), not a scan of every fence, and those are sorted.
    public func fencePage(meeting box: GeoBounds?, layers: Set<String>?, limit: Int, offset: Int = 0) -> (numbers: [Int], more: Bool, examined: Int) {
        guard let box, !box.coversTheWorld else { return pageOfRuns(layers: layers, limit: limit, offset: offset) }
        func inLayers(_ f: Int) -> Bool { layers.map { $0.contains(fences[f].fence.layer) } ?? true }
        var found: [Int] = []
        var examined = 0
        func consider(_ f: Int) {
            examined += 1
            guard inLayers(f) else { return }
            let bounds = fences[f].bounds
            let grown = largestBuffer(ofFence: f).map { bounds.expanded(by: $0) } ?? bounds
            if grown.meets(box) { found.append(f) }
        }
        index.query(box, consider)
        unwatchedIndex.query(box, consider)
        found.sort()
        let after = found.dropFirst(offset)
        return after.count > limit ? (Array(after.prefix(limit)), true, examined) : (Array(after), false, examined)
    }

    /// The page of every fence of `layers` (all when nil), in layer then file order: each layer
    /// is one run of fence numbers, so `offset` is skipped by arithmetic over the runs.
    private func pageOfRuns(layers: Set<String>?, limit: Int, offset: Int) -> (numbers: [Int], more: Bool, examined: Int) {
        var runs: [Range<Int>] = []
        if let layers {
            for (l, name) in fenceNumbers.layerNames.enumerated() where layers.contains(name) {
                let run = fenceNumbers.fences(ofLayer: l).clamped(to: fences.indices)
                if !run.isEmpty { runs.append(run) }
            }
        } else if !fences.isEmpty {
            runs = [fences.indices]
        }
        var numbers: [Int] = []
        numbers.reserveCapacity(min(max(limit, 0), 10_000))
        var skip = max(offset, 0)
        for run in runs {
            guard skip < run.count else {
                skip -= run.count
                continue
            }
            let start = run.lowerBound + skip
            skip = 0
            let room = max(limit, 0) - numbers.count
            guard room > 0 else { return (numbers, true, numbers.count + 1) }
            let end = start + min(room, run.upperBound - start)
            numbers.append(contentsOf: start..<end)
            if end < run.upperBound { return (numbers, true, numbers.count + 1) }
        }
        return (numbers, false, numbers.count)
    }
}
