/// What the `features` query shows of the fences (README "Runtime fences and queries"): which
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
    /// matched past those. With a box the spatial indexes find them (the watched fences' and the
    /// unwatched ones'), not a scan of every fence.
    public func fenceNumbers(meeting box: GeoBounds?, layers: Set<String>?, limit: Int, offset: Int = 0) -> (numbers: [Int], more: Bool) {
        func inLayers(_ f: Int) -> Bool { layers.map { $0.contains(fences[f].fence.layer) } ?? true }
        guard let box else {
            var numbers: [Int] = []
            var skipped = 0
            for f in fences.indices where inLayers(f) {
                guard skipped >= offset else {
                    skipped += 1
                    continue
                }
                guard numbers.count < limit else { return (numbers, true) }
                numbers.append(f)
            }
            return (numbers, false)
        }
        var found: [Int] = []
        func consider(_ f: Int) {
            guard inLayers(f) else { return }
            let bounds = fences[f].bounds
            let grown = largestBuffer(ofFence: f).map { bounds.expanded(by: $0) } ?? bounds
            if grown.meets(box) { found.append(f) }
        }
        index.query(box, consider)
        unwatchedIndex.query(box, consider)
        found.sort()
        let after = found.dropFirst(offset)
        return after.count > limit ? (Array(after.prefix(limit)), true) : (Array(after), false)
    }
}
