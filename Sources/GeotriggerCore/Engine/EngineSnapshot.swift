import Synchronization

/// Everything the monitors need to decide, compiled once and shared by every device: the
/// prepared fences, the spatial index, and for each fence the triggers that watch it with their
/// effective buffers. Immutable; a reload builds a new one and each monitor adopts it
/// (``DeviceMonitor/adopt(_:now:)``). A fence's identity across snapshots is (layer, fence id).
public final class EngineSnapshot: Sendable {
    /// Numbers each snapshot built in this process, so a holder can tell a new one from the
    /// one it saw without keeping the old one alive.
    private static let generations = Atomic<UInt64>(0)
    /// One (trigger, layer) pair: the settings that trigger applies to that layer's fences.
    struct Watch: Sendable {
        var settings: TriggerSettings
        /// The stable key of (trigger, layer), as persisted in monitor state.
        var key: UInt64
        var expressions: TriggerExpressions
        /// The watch compares accuracy circles (`useGeometryWithAccuracy`).
        var usesAccuracy: Bool
    }

    /// The numbers a watch decides with, without references (so the hot path copies no
    /// strings or arrays and does no reference counting).
    struct Rule: Sendable {
        var usesAccuracy: Bool
        var relationship: SpatialRelationship
        var exitMargin: Double
        var enterAfter: Double
        var exitAfter: Double
        var dwell: Double?
        var staleAfter: Double?
        var publishesEnter: Bool
        var publishesExit: Bool
        var baseline: Bool
        /// `crossings` is on: stays between sparse fixes up to `crossingMaxGap` apart are inferred.
        var crossings: Bool
        var crossingMaxGap: Double
        /// `speedLimit` is set: visits get a ``SpeedWatch`` (``DeviceMonitor/watchSpeeds``).
        var speedLimited: Bool

        init(_ settings: TriggerSettings) {
            usesAccuracy = settings.accuracyMode == .useGeometryWithAccuracy
            relationship = settings.spatialRelationship
            exitMargin = settings.exitMargin
            enterAfter = settings.enterAfter
            exitAfter = settings.exitAfter
            dwell = settings.dwell
            staleAfter = settings.staleAfter
            publishesEnter = settings.rule.publishesEnter
            publishesExit = settings.rule.publishesExit
            baseline = settings.initial == .baseline
            crossings = settings.crossings
            crossingMaxGap = settings.crossingMaxGap
            speedLimited = settings.speedLimit != nil
        }
    }

    /// A trigger watching a fence, with the fence's effective buffer in that trigger.
    struct FenceWatch: Sendable {
        var watch: Int32
        var buffer: Double
    }

    /// Identity of a fence across snapshots.
    struct FenceKey: Sendable, Hashable {
        var layer: String
        var id: String
    }

    /// This snapshot's number, larger than every earlier one's in this process.
    public let generation: UInt64
    /// The triggers with `phones` on (docs/phones.md).
    let phoneTriggers: [PhoneTrigger]
    /// The layers this snapshot was built from, by name (fences are in ``fences``).
    public let layerNames: [String]
    /// Every fence of every layer, prepared, in layer then file order.
    public let fences: [PreparedFence]
    /// The triggers, in configuration order.
    public let triggers: [Trigger]
    let watches: [Watch]
    /// `rules[w]` is `Rule(watches[w].settings)`.
    let rules: [Rule]
    let watchNumbers: [UInt64: Int32]
    /// Fence numbers by (layer, fence id).
    let fenceNumbers: FenceNumberTable
    /// Watches of fence `f`: `fenceWatches[fenceWatchStart[f] ..< fenceWatchStart[f + 1]]`.
    let fenceWatchStart: [Int32]
    let fenceWatches: [FenceWatch]
    /// How many fences each watch keeps (`watchFenceCounts[w]`), so that a search for a
    /// trigger's nearest fences knows when it has seen them all (``nearestFences(to:trigger:count:)``).
    let watchFenceCounts: [Int]
    /// The index of the watched fences only, reporting fence numbers.
    let index: FenceIndex
    /// The fences no watch keeps (no trigger watches their layer, or every `where` leaves them
    /// out), indexed by their bounds for queries over every fence (``fenceNumbers(meeting:layers:limit:offset:)``):
    /// it reports fence numbers too. Usually empty.
    let unwatchedIndex: FenceIndex
    /// True if some watch compares accuracy circles (the index query must then reach further).
    let anyWatchUsesAccuracy: Bool
    /// Per fence: the largest effective buffer + exit margin any watch gives it (the distance
    /// within which the monitor needs exact distances to decide).
    let fenceReach: [Double]
    /// Per fence: the device a following fence moves with (`properties.follow`), which never
    /// enters it; ``hasFollowingFences`` is false when there is none (the hot path skips the check)
    /// and the array is then empty (16 bytes per fence saved in the common snapshot).
    let fenceFollows: [String?]
    let hasFollowingFences: Bool
    /// The largest `crossingMaxGap` of the watches with `crossings` on; nil when none has it
    /// (the hot path then skips inference).
    let crossingMaxGap: Double?

    /// Builds the snapshot from fence layers and the config's `triggers` value (nil when the key
    /// is missing: one trigger per layer). Every problem is collected into one ``TriggerError``.
    /// Fences the parser prepared (``FenceLayer/prepared``) are taken as they are. `reusing`: a
    /// previous snapshot whose prepared fences are taken over where the fence is unchanged
    /// (runtime fence changes rebuild only what changed). `zones`: where `schedule.timezone`
    /// names are looked up (the gateway gives the system's tzdata).
    public convenience init(
        layers: [FenceLayer], configTriggers: JSONValue?, reusing previous: EngineSnapshot? = nil,
        zones: TimeZoneSource = .utcOnly
    ) throws(TriggerError) {
        let (triggers, issues) = Trigger.parseCollecting(configTriggers, layers: layers, zones: zones)
        do {
            try self.init(layers: layers, triggers: triggers, reusing: previous, zones: zones)
        } catch {
            throw TriggerError(issues + error.issues)
        }
        if !issues.isEmpty { throw TriggerError(issues) }
    }

    /// Builds the snapshot from fence layers and parsed triggers (`reusing`, `zones`: see above;
    /// `zones` serves the layers' defaults).
    public init(
        layers: [FenceLayer], triggers: [Trigger], reusing previous: EngineSnapshot? = nil, zones: TimeZoneSource = .utcOnly
    ) throws(TriggerError) {
        var issues: [TriggerIssue] = []
        // Layer defaults, each read once (so an error in them is reported once).
        var defaults: [String: TriggerOptions] = [:]
        for layer in layers {
            let subject = layer.file.isEmpty ? "layer \"\(layer.name)\"" : layer.file
            defaults[layer.name] = TriggerOptions.parse(layer.defaults ?? JSONObject(), handledKeys: [], zones: zones) { path, message in
                let full: [JSONPathComponent] = [.key("geotrigger")] + path
                issues.append(
                    TriggerIssue(
                        origin: .layer(name: layer.name, file: layer.file), path: full, subject: subject,
                        key: full.pathString, message: message))
            }
        }
        // Layers the previous snapshot holds unchanged (`carried[l]`: their fence numbers there):
        // their fences need no duplicate-id check, and their rows are copied below when their
        // watches are unchanged too. The leading ones keep their numbers, so the fence table
        // starts as the previous one.
        let carried: [Range<Int>?] = previous.map { EngineSnapshot.carriedLayers(layers, from: $0) } ?? layers.map { _ in nil }
        var keptLayers = 0
        if let previous {
            while keptLayers < layers.count, keptLayers < previous.layerNames.count,
                let range = carried[keptLayers], range == previous.fenceNumbers.fences(ofLayer: keptLayers)
            {
                keptLayers += 1
            }
        }
        // Fences.
        // Sized for every fence up front: a million fences would otherwise regrow (and rehash) them ~20 times.
        let fenceCount = layers.reduce(0) { $0 + $1.fenceCount }
        var fenceNumbers =
            if let previous, keptLayers > 0 {
                FenceNumberTable(capacity: fenceCount, keepingLayers: keptLayers, of: previous.fenceNumbers)
            } else {
                FenceNumberTable(capacity: fenceCount)
            }
        for (layerIndex, layer) in layers.enumerated() where layerIndex >= keptLayers {
            fenceNumbers.startLayer(layer.name)
            if let previous, let range = carried[layerIndex] {
                for n in range { fenceNumbers.append(previous.fences[n], id: previous.fences[n].fence.id) }
                continue
            }
            for fenceIndex in 0..<layer.fenceCount {
                let fence = layer.fence(at: fenceIndex)
                let key = FenceKey(layer: layer.name, id: fence.id)
                // Built only for an issue (a string per fence is a tenth of the build at a million).
                func issue(_ message: String) -> TriggerIssue {
                    TriggerIssue(
                        origin: .layer(name: layer.name, file: layer.file), path: [.key("features"), .index(fence.featureIndex)],
                        subject: (layer.file.isEmpty ? "layer \"\(layer.name)\"" : layer.file) + ": " + fence.label, key: "",
                        message: message)
                }
                if fenceNumbers[key] != nil {
                    issues.append(issue("fence id \"\(fence.id)\" is used twice in layer \"\(layer.name)\""))
                    continue
                }
                do throws(GeometryError) {
                    // Prepared once: by the parser (the layer carries it), else by a previous snapshot.
                    let p: PreparedFence
                    if let parsed = layer.preparedFence(at: fenceIndex) {
                        p = parsed
                    } else if let previous, let old = previous.fence(layer: layer.name, id: fence.id), old.fence == fence {
                        p = old
                    } else {
                        p = try PreparedFence(fence)
                    }
                    fenceNumbers.append(p, id: fence.id)
                } catch {
                    issues.append(issue(error.message))
                }
            }
        }
        let prepared = fenceNumbers.fences
        // Watches: one per (trigger, watched layer).
        var compiler = ExpressionCompiler()
        var watches: [Watch] = []
        var watchNumbers: [UInt64: Int32] = [:]
        var watchesOfLayer = [[Int32]](repeating: [], count: layers.count)
        for trigger in triggers {
            for (layerIndex, layer) in layers.enumerated() where trigger.layers?.contains(layer.name) ?? true {
                let settings = TriggerSettings(
                    trigger: trigger, layer: layer.name, layerDefaults: defaults[layer.name] ?? TriggerOptions())
                guard let expressions = compiler.expressions(settings: settings, trigger: trigger, layer: layer, issues: &issues)
                else { continue }
                let key = StableHash.watchKey(trigger: trigger.name, layer: layer.name)
                watchNumbers[key] = Int32(watches.count)
                watchesOfLayer[layerIndex].append(Int32(watches.count))
                watches.append(
                    Watch(
                        settings: settings, key: key, expressions: expressions,
                        usesAccuracy: settings.accuracyMode == .useGeometryWithAccuracy))
            }
        }
        // Per fence: the watches that keep it (after `where`) with its effective buffer.
        var fenceWatchStart: [Int32] = [0]
        var fenceWatches: [FenceWatch] = []
        var indexed: [Int32] = []
        var bounds: [GeoBounds] = []
        var unwatched: [Int32] = []
        var unwatchedBounds: [GeoBounds] = []
        var reach: [Double] = []
        var fenceReach: [Double] = []
        fenceWatchStart.reserveCapacity(prepared.count + 1)
        fenceWatches.reserveCapacity(prepared.count)
        fenceReach.reserveCapacity(prepared.count)
        indexed.reserveCapacity(prepared.count)
        bounds.reserveCapacity(prepared.count)
        reach.reserveCapacity(prepared.count)
        // The fences' `follow` devices (`properties.follow`), layer by layer.
        var follows: [String?] = []
        follows.reserveCapacity(prepared.count)
        for (layerIndex, layer) in layers.enumerated() {
            let numbers = fenceNumbers.fences(ofLayer: layerIndex)
            if let previous, let range = carried[layerIndex] {
                // An unchanged layer: the same fences follow the same devices.
                if previous.hasFollowingFences {
                    follows += previous.fenceFollows[range]
                } else {
                    follows += repeatElement(nil, count: range.count)
                }
                // And with the same watches, it keeps the same rows.
                if let watchMap = EngineSnapshot.watchMap(of: layer.name, watches: watchesOfLayer[layerIndex], in: watches, from: previous) {
                    let oldStart = previous.fenceWatchStart, oldWatches = previous.fenceWatches, oldReach = previous.fenceReach
                    let shift = numbers.lowerBound - range.lowerBound
                    for old in range {
                        let f = old + shift
                        let rows = Int(oldStart[old])..<Int(oldStart[old + 1])
                        for i in rows {
                            fenceWatches.append(FenceWatch(watch: watchMap[Int(oldWatches[i].watch)], buffer: oldWatches[i].buffer))
                        }
                        fenceWatchStart.append(Int32(fenceWatches.count))
                        let farthest = oldReach[old]
                        fenceReach.append(farthest)
                        if !rows.isEmpty {
                            indexed.append(Int32(f))
                            bounds.append(prepared[f].bounds)
                            reach.append(farthest)
                        } else {
                            unwatched.append(Int32(f))
                            unwatchedBounds.append(prepared[f].bounds)
                        }
                    }
                    continue
                }
            } else {
                for f in numbers {
                    let device: String? = if case .string(let device)? = prepared[f].fence.property("follow") { device } else { nil }
                    follows.append(device)
                }
            }
            for f in numbers {
                let fence = prepared[f]
                var farthest = 0.0
                var any = false
                for w in watchesOfLayer[layerIndex] {
                    let watch = watches[Int(w)]
                    func issue(_ message: String) -> TriggerIssue {
                        TriggerIssue(
                            origin: .layer(name: layer.name, file: layer.file),
                            path: [.key("features"), .index(fence.fence.featureIndex)],
                            subject: (layer.file.isEmpty ? "layer \"\(layer.name)\"" : layer.file) + ": " + fence.fence.label,
                            key: "", message: message)
                    }
                    let keep: Bool
                    do throws(ArcadeError) {
                        keep = try watch.expressions.keeps(fence.fence)
                    } catch {
                        issues.append(issue("trigger \"\(watch.settings.trigger)\": where: \(error.description)"))
                        continue
                    }
                    guard keep else { continue }
                    let buffer = fence.fence.buffer ?? watch.settings.buffer
                    if fence.fence.geometry.needsBuffer && !(buffer > 0) {
                        issues.append(
                            issue(
                                "\(fence.fence.geometry.kindName) needs a buffer > 0 in trigger \"\(watch.settings.trigger)\" "
                                    + "(set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"))
                        continue
                    }
                    fenceWatches.append(FenceWatch(watch: w, buffer: buffer))
                    farthest = max(farthest, buffer + watch.settings.exitMargin)
                    any = true
                }
                fenceWatchStart.append(Int32(fenceWatches.count))
                fenceReach.append(farthest)
                if any {
                    indexed.append(Int32(f))
                    bounds.append(fence.bounds)
                    reach.append(farthest)
                } else {
                    unwatched.append(Int32(f))
                    unwatchedBounds.append(fence.bounds)
                }
            }
        }
        if !issues.isEmpty { throw TriggerError(issues) }
        self.layerNames = layers.map(\.name)
        self.fences = prepared
        self.triggers = triggers
        self.watches = watches
        self.rules = watches.map { Rule($0.settings) }
        self.watchNumbers = watchNumbers
        self.fenceNumbers = fenceNumbers
        self.fenceWatchStart = fenceWatchStart
        self.fenceWatches = fenceWatches
        var watchFenceCounts = [Int](repeating: 0, count: watches.count)
        for fw in fenceWatches { watchFenceCounts[Int(fw.watch)] += 1 }
        self.watchFenceCounts = watchFenceCounts
        self.index = FenceIndex(bounds: bounds, reach: reach, ids: indexed)
        self.unwatchedIndex = FenceIndex(
            bounds: unwatchedBounds, reach: [Double](repeating: 0, count: unwatchedBounds.count), ids: unwatched)
        self.anyWatchUsesAccuracy = watches.contains { $0.usesAccuracy }
        self.fenceReach = fenceReach
        self.hasFollowingFences = follows.contains { $0 != nil }
        self.fenceFollows = hasFollowingFences ? follows : []
        self.crossingMaxGap = watches.filter(\.settings.crossings).map(\.settings.crossingMaxGap).max()
        self.phoneTriggers = PhoneTrigger.of(watches.map(\.settings))
        self.generation = Self.generations.add(1, ordering: .relaxed).newValue
    }

    /// For each of `layers`, its fence numbers in `previous` if `previous` holds it unchanged:
    /// a layer of that name with the same prepared fences in the same order (the identical
    /// objects, or equal fences where the layer carries none prepared). A name given twice is
    /// never carried (its fences need the duplicate-id check).
    static func carriedLayers(_ layers: [FenceLayer], from previous: EngineSnapshot) -> [Range<Int>?] {
        var names: [String: Int] = [:]
        for layer in layers { names[layer.name, default: 0] += 1 }
        let table = previous.fenceNumbers
        return layers.map { layer in
            guard names[layer.name] == 1, let l = table.layerNames.firstIndex(of: layer.name) else { return nil }
            let range = table.fences(ofLayer: l)
            guard range.count == layer.fenceCount else { return nil }
            for (i, n) in range.enumerated() {
                let old = previous.fences[n]
                if let parsed = layer.preparedFence(at: i) {
                    guard parsed === old else { return nil }
                } else {
                    guard old.fence == layer.fence(at: i) else { return nil }
                }
            }
            return range
        }
    }

    /// When `layer`'s watches (`numbers` in `watches`, in order) have the settings `previous`'s
    /// watches of it had: previous watch number → this snapshot's, for that layer's watches (the
    /// others are -1). Equal settings give equal rows for the same fence (the buffer, exit margin
    /// and `where` are all in the settings).
    static func watchMap(of layer: String, watches numbers: [Int32], in watches: [Watch], from previous: EngineSnapshot) -> [Int32]? {
        let old = previous.watches.indices.filter { previous.watches[$0].settings.layer == layer }
        guard old.count == numbers.count else { return nil }
        var map = [Int32](repeating: -1, count: previous.watches.count)
        for (o, new) in zip(old, numbers) {
            guard previous.watches[o].settings == watches[Int(new)].settings else { return nil }
            map[o] = new
        }
        return map
    }

    /// The resolved settings of every (trigger, layer) pair, in trigger then layer order.
    public var settings: [TriggerSettings] { watches.map(\.settings) }

    /// The fence with `id` in `layer`, if this snapshot has it.
    public func fence(layer: String, id: String) -> PreparedFence? {
        fenceNumbers[FenceKey(layer: layer, id: id)].map { fences[Int($0)] }
    }

    /// Calls `body(fence number, watch number, effective buffer)` for every trigger watching fence `f`.
    @inline(__always)
    func forEachWatch(ofFence f: Int, _ body: (Int, Int, Double) -> Void) {
        let start = Int(fenceWatchStart[f]), end = Int(fenceWatchStart[f + 1])
        var i = start
        while i < end {
            let fw = fenceWatches[i]
            body(f, Int(fw.watch), fw.buffer)
            i += 1
        }
    }

    /// The speed limit (m/s) of fence `f` in watch `w` (its `speedLimit`: the fixed value, or the
    /// fence's property), or nil when there is none.
    func speedLimit(fence f: Int, watch w: Int) -> Double? {
        watches[w].settings.speedLimit?.metresPerSecond(in: fences[f].fence)
    }

    /// The effective buffer of fence `f` in watch `w`, or nil if that watch does not keep it.
    func buffer(fence f: Int, watch w: Int) -> Double? {
        let start = Int(fenceWatchStart[f]), end = Int(fenceWatchStart[f + 1])
        for i in start..<end where Int(fenceWatches[i].watch) == w { return fenceWatches[i].buffer }
        return nil
    }
}
