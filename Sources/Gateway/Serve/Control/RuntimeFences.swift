import Dispatch
import FoundationEssentials
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// Runtime fence layers: fences a dispatcher publishes, retained, to
/// `PREFIX/fences/LAYER/FENCE_ID` (a GeoJSON Feature; an empty payload deletes the fence).
///
/// Each accepted change marks the set dirty; at most every ``rebuildInterval`` seconds a new
/// ``EngineSnapshot`` (file layers + runtime layers, unchanged fences keep their prepared
/// geometry) is built, saved, and handed to the ``MonitorPool`` through the `adoptions`
/// stream it reads (stays in fences that left exit with `fenceRemoved`; new fences are decided
/// by each device's next update, per `initial`).
/// Changes are saved in SQLite, so a gateway starts with its runtime fences when the broker
/// is down; retained messages re-apply on every connect (fences the broker does not mention
/// are kept). Following fences (`properties.follow`) move with their device at most once per
/// ``followInterval`` seconds.
///
/// Parsing a payload and building a snapshot take time in proportion to the fence (a 30,000
/// vertex polygon: about a second in a release build), so both run on a serial queue of their
/// own (`geotrigger.fences`), never on the cooperative pool, and the state they change is only
/// touched there. The update path (``isFollowed(_:)``, ``followedDeviceMoved(_:)``) and the
/// readers of ``snapshot`` use small locks of their own and never wait for a build.
final class RuntimeFences: Service, Sendable {
    let name = "runtime-fences"
    let prefix: String
    /// `PREFIX/fences/LAYER/FENCE_ID`, and their error topics.
    private let topics: ControlTopics
    let client: MQTTClient
    let store: GatewayStore
    let warnings: Warnings
    let logger: Logger
    /// Changes are coalesced into one snapshot rebuild at most this often (seconds).
    let rebuildInterval: Double
    /// `runtime.maxFences`.
    let maxFences: Int
    /// `runtime.maxBytes`: the most payload bytes the live runtime fences hold together.
    let maxBytes: Int
    /// A following fence moves at most this often per followed device (seconds).
    let followInterval: Double
    /// `fences.maxVertices`: a fence with more positions is rejected.
    let maxVertices: Int

    /// A runtime fence as accepted, with the bytes it was published as (for SQLite).
    struct Entry: Sendable {
        var fence: Fence
        var feature: [UInt8]
    }

    /// A following fence's device moved: where to, and when it may move next.
    struct Follow: Sendable {
        var position: Coordinate?
        var nextMove: Double = 0
    }

    struct State: Sendable {
        var fileLayers: [FenceLayer]
        var configTriggers: JSONValue?
        /// Layer names the config's triggers watch that are not file layers (runtime layers
        /// that may still be empty).
        var namedRuntimeLayers: Set<String>
        var layers: [String: [String: Entry]] = [:]
        /// Unique per fence version, used as its `featureIndex` (so unchanged fences compare
        /// equal across rebuilds and trigger problems map back to the fence).
        var serial = 0
        var snapshot: EngineSnapshot
        var dirty = false
        /// The last accepted version of each fence changed since the last rebuild (nil: it did
        /// not exist), to restore when the rebuild rejects the new one.
        var previous: [FenceKey: Entry?] = [:]
        var unsaved: [FenceKey: [UInt8]?] = [:]
        var lastBuild = -Double.infinity
        /// Counts the snapshots built, so that an older one is never handed on after a newer.
        var generation = 0
        /// After a failed save: when `unsaved` is tried again.
        var saveRetry = -Double.infinity
        /// Fences in the database that the start left out (over the budget): a delete of one
        /// still deletes its row.
        var leftOut: Set<FenceKey> = []

        /// The payload bytes of the live runtime fences together (`runtime.maxBytes` bounds it).
        var bytes: Int { layers.values.reduce(0) { total, fences in fences.values.reduce(total) { $0 + $1.feature.count } } }
        var fenceCount: Int { layers.values.reduce(0) { $0 + $1.count } }
    }

    /// Device → following fences, and the device's latest position to move them to.
    struct Followers: Sendable {
        var following: [String: [FenceKey]] = [:]
        var follows: [String: Follow] = [:]
    }

    /// (layer, fence id).
    struct FenceKey: Sendable, Hashable {
        var layer: String
        var fence: String
    }

    /// Changed only on `queue`.
    private let state: LeveledMutex<State>
    private let queue = DispatchQueue(label: "geotrigger.fences")
    /// The live snapshot (also in `state`) and its generation, for readers that must not wait
    /// for a build.
    private let live: Mutex<(snapshot: EngineSnapshot, generation: Int)>
    private let followers = LeveledMutex(Followers(), level: .fenceFollowers)
    /// Messages handed to `queue` by ``take(_:)`` and not applied yet.
    private let backlog = Atomic<Int>(0)
    private let anyFollowing = Atomic<Bool>(false)
    /// Something may be due for ``run()``: a change to rebuild, a save to retry, a following
    /// fence to move. Without it the loop sleeps without visiting the queue.
    private let workPending = Atomic<Bool>(true)
    private let stopped = Atomic<Bool>(false)
    /// Where each rebuilt snapshot goes (the ``MonitorPool`` adopts them in order).
    private let adoptions: AsyncStream<EngineSnapshot>.Continuation

    /// The runtime fences saved in `store`, applied over `setup`'s file layers and triggers.
    init(
        setup: GatewaySetup, client: MQTTClient, store: GatewayStore, warnings: Warnings, logger: Logger,
        adoptions: AsyncStream<EngineSnapshot>.Continuation, rebuildInterval: Double = 0.25, followInterval: Double = 1
    ) async {
        self.adoptions = adoptions
        self.prefix = setup.config.output.prefix
        topics = ControlTopics(prefix: prefix, kind: "fences", levels: 2, client: client, warnings: warnings)
        self.client = client
        self.store = store
        self.warnings = warnings
        self.logger = logger
        self.rebuildInterval = rebuildInterval
        self.maxFences = setup.config.runtime.maxFences
        self.maxBytes = setup.config.runtime.maxBytes
        self.followInterval = followInterval
        maxVertices = setup.config.fences.maxVertices
        let fileLayers = setup.layers.filter { !$0.file.isEmpty }
        let fileNames = Set(fileLayers.map(\.name))
        let named = Set(setup.layers.map(\.name)).subtracting(fileNames)
        var state = State(
            fileLayers: fileLayers, configTriggers: setup.config.triggers.map { .array($0.map { .object($0) }) },
            namedRuntimeLayers: named, snapshot: setup.snapshot)
        await RuntimeFences.restore(
            into: &state, from: store, maxFences: setup.config.runtime.maxFences, maxBytes: setup.config.runtime.maxBytes,
            maxVertices: setup.config.fences.maxVertices, warnings: warnings, logger: logger)
        live = Mutex((state.snapshot, state.generation))
        self.state = LeveledMutex(state, level: .runtimeFenceState)
        updateFollowing()
    }

    /// Applies the runtime fences saved in `store` to `state` (file layers' names skipped), as
    /// many as fit in `maxFences` and `maxBytes`: their sizes are read first (no payload), then
    /// the payloads of those that fit one at a time, by layer then fence id; a fence that does not
    /// fit is left out (its row stays) and the next smaller ones may still fit. Left-out fences
    /// are logged and warned with their count, so a database that grew past the budget (or a
    /// budget lowered) never makes a start read more than the budget.
    static func restore(
        into state: inout State, from store: GatewayStore, maxFences: Int, maxBytes: Int, maxVertices: Int,
        warnings: Warnings, logger: Logger
    ) async {
        let fileNames = Set(state.fileLayers.map(\.name))
        var restored = 0, bytes = 0, leftOutBytes = 0
        do {
            let sizes = try await store.runtimeFenceSizes()
            for size in sizes where !fileNames.contains(size.layer) {
                let key = FenceKey(layer: size.layer, fence: size.fence)
                guard restored < maxFences, bytes + size.bytes <= maxBytes else {
                    state.leftOut.insert(key)
                    leftOutBytes += size.bytes
                    continue
                }
                guard let feature = try await store.runtimeFence(layer: size.layer, fence: size.fence) else { continue }
                switch RuntimeFences.parse(
                    feature, layer: size.layer, id: size.fence, topic: "database: runtime fence \(size.layer)/\(size.fence)",
                    maxVertices: maxVertices) {
                case .success(var fence):
                    state.serial += 1
                    fence.featureIndex = state.serial
                    state.layers[size.layer, default: [:]][size.fence] = Entry(fence: fence, feature: feature)
                    restored += 1
                    bytes += feature.count
                case .failure(let problem):
                    logger.warning("a saved runtime fence is ignored", ["problem": problem.message])
                }
            }
            if restored > 0 {
                state.dirty = true
                _ = RuntimeFences.rebuild(&state, logger: logger, rejected: { _, _ in })
                logger.notice("runtime fences restored from the database", ["fences": "\(restored)", "bytes": "\(bytes)"])
            }
        } catch {
            warnings.set("runtime-fences", "cannot read the saved runtime fences: \(error)")
        }
        if !state.leftOut.isEmpty {
            logger.warning("saved runtime fences left out: over runtime.maxFences or runtime.maxBytes", [
                "left.out": "\(state.leftOut.count)", "left.out.bytes": "\(leftOutBytes)", "restored": "\(restored)",
                "restored.bytes": "\(bytes)", "runtime.maxFences": "\(maxFences)", "runtime.maxBytes": "\(maxBytes)",
            ])
            warnings.set(Self.leftOutWarning, "\(state.leftOut.count) saved runtime fences (\(leftOutBytes) bytes) were left out at start: "
                + "the \(restored) restored hold \(bytes) bytes of runtime.maxBytes \(maxBytes) (runtime.maxFences \(maxFences)); "
                + "their retained messages are rejected until room is made")
        }
    }

    /// The status warning of fences left out at start (cleared once none is left).
    static let leftOutWarning = "runtime-fences-left-out"

    /// The live snapshot (the one the monitors start with, then the latest adopted).
    var snapshot: EngineSnapshot { live.withLock { $0.snapshot } }

    /// Runs `body` on `queue` (parsing and building can take a while: not on the cooperative pool).
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in queue.async { continuation.resume(returning: body()) } }
    }

    /// The topic filter the gateway subscribes to.
    var filter: String { topics.filter }

    /// Whether `topic` is a runtime fence topic (`PREFIX/fences/LAYER/FENCE_ID`).
    func handles(_ topic: String) -> Bool { topics.matches(topic) }

    /// Whether `topic` is `prefix` (`PREFIX/fences/` as UTF-8) and then LAYER/FENCE_ID.
    static func isFenceTopic(_ topic: String, prefix topicPrefix: [UInt8]) -> Bool {
        ControlTopics.matches(topic, base: topicPrefix, levels: 2)
    }

    // MARK: Messages

    /// Hands one message of `PREFIX/fences/LAYER/FENCE_ID` to the fences' queue, which applies
    /// it: add, replace or (empty) delete. Returns at once, so the control plane goes on with
    /// queries while a big fence is checked; past ``backlogLimit`` messages waiting (each up to
    /// 1 MiB) it waits until this one is applied.
    func take(_ message: MQTTMessage) async {
        let waiting = backlog.add(1, ordering: .relaxed).newValue
        queue.async { [self] in
            apply(message)
            backlog.subtract(1, ordering: .relaxed)
            workPending.store(true, ordering: .releasing)
        }
        if waiting > Self.backlogLimit { await onQueue {} }
    }

    /// Fence messages handed to the queue and not applied yet, before ``take(_:)`` waits.
    static let backlogLimit = 16

    /// The longest `properties.name` of a runtime fence, in UTF-8 bytes (README "Limits").
    static let maxNameBytes = 256

    private func apply(_ message: MQTTMessage) {
        // Split as bytes: a level that starts with a combining mark would join the '/' before
        // it into one Character and be cut or not split.
        let levels = topics.name(of: message.topic).utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard levels.count == 2 else { return }
        let layer = String(decoding: levels[0], as: UTF8.self), id = String(decoding: levels[1], as: UTF8.self)
        let key = FenceKey(layer: layer, fence: id)
        if layer.isEmpty || id.isEmpty {
            reject(key, "the topic needs a layer and a fence id: \(prefix)/fences/LAYER/FENCE_ID")
            return
        }
        if let file = state.withLock({ s in s.fileLayers.first { $0.name == layer }?.file }) {
            reject(key, "layer \"\(layer)\" is a file layer (\(file)); runtime layers need another name")
            return
        }
        if message.payload.count > GatewayConfig.Runtime.maxPayload {
            reject(key, "the payload is \(message.payload.count) bytes, over the \(GatewayConfig.Runtime.maxPayload) bytes a runtime fence may have")
            return
        }
        if message.payload.isEmpty {
            let noneLeftOut: Bool = state.withLock { s in
                guard let old = s.layers[layer]?[id] else {
                    // One the start left out: nothing of it is live, its row goes.
                    guard s.leftOut.remove(key) != nil else { return false }
                    s.unsaved[key] = .some(nil)
                    return s.leftOut.isEmpty
                }
                if s.previous[key] == nil { s.previous[key] = .some(old) }
                s.layers[layer]![id] = nil
                if s.layers[layer]!.isEmpty { s.layers[layer] = nil }
                s.unsaved[key] = .some(nil)
                s.dirty = true
                return false
            }
            if noneLeftOut { warnings.clear(Self.leftOutWarning, resolved: "no saved runtime fence is left out any more") }
            return
        }
        // Checked before parsing (the cheap test first); the state only changes on this queue.
        if let reason = state.withLock({ s in overBudget(s, layer: layer, id: id, payload: message.payload) }) {
            reject(key, reason)
            return
        }
        switch RuntimeFences.parse(message.payload, layer: layer, id: id, topic: message.topic, maxVertices: maxVertices) {
        case .failure(let problem):
            reject(key, problem.description)
        case .success(var fence):
            let (full, noneLeftOut): (Bool, Bool) = state.withLock { s in
                let old = s.layers[layer]?[id]
                if let old, old.feature == message.payload { return (false, false) }  // a retained copy of what is live
                if old == nil, s.fenceCount >= maxFences { return (true, false) }
                if s.previous[key] == nil { s.previous[key] = .some(old) }
                s.serial += 1
                fence.featureIndex = s.serial
                s.layers[layer, default: [:]][id] = Entry(fence: fence, feature: message.payload)
                s.unsaved[key] = .some(message.payload)
                s.dirty = true
                // One the start left out, live again in a version that fits.
                return (false, s.leftOut.remove(key) != nil && s.leftOut.isEmpty)
            }
            if full { reject(key, "\(maxFences) runtime fences are live (runtime.maxFences); delete one first") }
            if noneLeftOut { warnings.clear(Self.leftOutWarning, resolved: "no saved runtime fence is left out any more") }
        }
    }

    /// Why `payload` as fence (layer, id) would pass `runtime.maxBytes` (nil: it fits): the
    /// live fences' bytes without the version it replaces, plus its own.
    private func overBudget(_ s: State, layer: String, id: String, payload: [UInt8]) -> String? {
        let replaced = s.layers[layer]?[id]?.feature.count ?? 0
        let others = s.bytes - replaced
        guard others + payload.count > maxBytes else { return nil }
        return "the payload is \(payload.count) bytes and the other runtime fences hold \(others) bytes: "
            + "\(others + payload.count) bytes together, over runtime.maxBytes (\(maxBytes)); delete or shrink a fence first"
    }

    /// Publishes why a fence was rejected (not retained) and sets a status warning.
    private func reject(_ key: FenceKey, _ reason: String) {
        let name = "\(key.layer)/\(key.fence)"
        topics.reject(name, ["layer": .string(key.layer), "fence": .string(key.fence)], reason: reason,
                      warning: "fence-\(name)", "runtime fence \(name) rejected, the previous version stays: \(reason)")
    }

    /// A Feature payload checked as a fence file would be (the topic's fence id is its id), with
    /// at most `maxVertices` positions.
    static func parse(
        _ payload: [UInt8], layer: String, id: String, topic: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices
    ) -> Result<Fence, FenceError> {
        let document: JSONDocument
        do {
            document = try JSONReader.parse(payload, file: topic, dialect: .json)
        } catch {
            return .failure(FenceError(file: topic, location: error.location, message: error.message))
        }
        guard case .object(var feature) = document.value else {
            return .failure(FenceError(file: topic, message: "expected a GeoJSON Feature object, found \(document.value.typeName)"))
        }
        let properties = feature["properties"]?.objectValue ?? JSONObject()
        let given: String? =
            switch feature["id"] ?? properties["id"] {
            case .string(let s)?: s
            case .number(let n)?: n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n)
            default: nil
            }
        if let given, given != id {
            return .failure(FenceError(file: topic, message: "the Feature's id \"\(given)\" differs from the topic's fence id \"\(id)\""))
        }
        if given == nil { feature["id"] = .string(id) }
        if case .string(let name)? = properties["name"], name.utf8.count > maxNameBytes {
            return .failure(FenceError(file: topic, message: "properties.name is \(name.utf8.count) bytes; a runtime fence's name is at most \(maxNameBytes) bytes"))
        }
        if let follow = properties["follow"] {
            guard case .string = follow else {
                return .failure(FenceError(file: topic, message: "properties.follow must be a device id string, found \(follow.typeName)"))
            }
            guard case .object(let g)? = feature["geometry"], g["type"] == .string("Point") else {
                return .failure(FenceError(file: topic, message: "a following fence (properties.follow) must be a Point with a buffer"))
            }
        }
        let wrapped = JSONValue.object(["type": .string("FeatureCollection"), "features": .array([.object(feature)])])
        let (parsed, errors) = FenceLayerParser.parse(wrapped, file: topic, layer: layer, maxVertices: maxVertices)
        if !errors.isEmpty {
            return .failure(FenceError(file: topic, message: errors.map(\.message).joined(separator: "; ")))
        }
        guard let fence = parsed.fences.first else { return .failure(FenceError(file: topic, message: "not a valid fence")) }
        return .success(fence)
    }

    // MARK: Following fences

    /// Cheap check on the update path: does a fence follow `device`?
    func isFollowed(_ device: String) -> Bool {
        anyFollowing.load(ordering: .relaxed) && followers.withLock { $0.following[device] != nil }
    }

    /// An accepted update of a followed device: its fences move there (at most once per
    /// ``followInterval``; the latest position wins).
    func followedDeviceMoved(_ update: LocationUpdate) {
        followers.withLock { f in
            guard f.following[update.device] != nil else { return }
            f.follows[update.device, default: Follow()].position = update.coordinate
        }
        workPending.store(true, ordering: .releasing)
    }

    private func updateFollowing() {
        var following: [String: [FenceKey]] = [:]
        state.withLock { s in
            for (layer, fences) in s.layers {
                for (id, entry) in fences {
                    if case .string(let device)? = entry.fence.properties["follow"] {
                        following[device, default: []].append(FenceKey(layer: layer, fence: id))
                    }
                }
            }
        }
        followers.withLock { f in
            f.following = following
            f.follows = f.follows.filter { following[$0.key] != nil }
        }
        anyFollowing.store(!following.isEmpty, ordering: .relaxed)
    }

    /// Moves following fences whose device moved and whose interval passed; true if any moved.
    private static func moveFollowing(_ s: inout State, _ f: inout Followers, now: Double, interval: Double) -> Bool {
        var moved = false
        for (device, follow) in f.follows {
            guard let position = follow.position, now >= follow.nextMove else { continue }
            for key in f.following[device] ?? [] {
                guard var entry = s.layers[key.layer]?[key.fence] else { continue }
                entry.fence.geometry = .points([position])
                s.layers[key.layer]![key.fence] = entry
                moved = true
            }
            f.follows[device] = Follow(position: nil, nextMove: now + interval)
        }
        if moved { s.dirty = true }
        return moved
    }

    // MARK: Rebuilding

    /// Builds a snapshot of file + runtime layers. Fences the build rejects (a Point without a
    /// buffer in some trigger, a `where` error...) go back to their previous version and are
    /// reported through `rejected`. Returns the snapshot if one was built.
    static func rebuild(
        _ s: inout State, logger: Logger, rejected: (FenceKey, String) -> Void
    ) -> EngineSnapshot? {
        for _ in 0..<3 {
            var layers = s.fileLayers
            var bySerial: [String: [Int: String]] = [:]
            for name in Set(s.layers.keys).union(s.namedRuntimeLayers).sorted() {
                let fences = (s.layers[name] ?? [:]).values.map(\.fence).sorted { $0.featureIndex < $1.featureIndex }
                bySerial[name] = Dictionary(uniqueKeysWithValues: fences.map { ($0.featureIndex, $0.id) })
                layers.append(FenceLayer(name: name, file: "", fences: fences))
            }
            do {
                let snapshot = try EngineSnapshot(
                    layers: layers, configTriggers: s.configTriggers, reusing: s.snapshot, zones: SystemTimeZones.source)
                s.snapshot = snapshot
                s.generation += 1
                s.previous = [:]
                s.dirty = false
                return snapshot
            } catch {
                var undone = false
                for issue in error.issues {
                    guard case .layer(let name, _) = issue.origin, let table = bySerial[name],
                        issue.path.count >= 2, case .index(let serial) = issue.path[1], let id = table[serial]
                    else {
                        logger.error("runtime fences: the snapshot cannot be built", ["problem": issue.description])
                        continue
                    }
                    let key = FenceKey(layer: name, fence: id)
                    rejected(key, issue.message)
                    if let previous = s.previous[key] {
                        s.layers[name, default: [:]][id] = previous
                    } else {
                        s.layers[name]?[id] = nil
                    }
                    s.unsaved[key] = nil
                    undone = true
                }
                if !undone {
                    // Nothing to blame on one fence: keep the live snapshot, drop the batch.
                    s.dirty = false
                    return nil
                }
            }
        }
        return nil
    }

    /// A SIGHUP reload: new file layers and triggers, runtime layers kept.
    func reload(_ setup: GatewaySetup) async {
        let fileLayers = setup.layers.filter { !$0.file.isEmpty }
        let triggers = setup.config.triggers, names = Set(setup.layers.map(\.name))
        await onQueue { self.state.withLock { s in
            s.fileLayers = fileLayers
            s.configTriggers = triggers.map { .array($0.map { .object($0) }) }
            s.namedRuntimeLayers = names.subtracting(fileLayers.map(\.name))
            s.dirty = true
            s.lastBuild = -Double.infinity
        } }
        await rebuildIfDue()
    }

    /// Rebuilds and hands the snapshot to the pool when something changed and the interval passed.
    private func rebuildIfDue() async {
        let now = MonotonicClock.now()
        let (snapshot, generation, saves, rejections) = await onQueue { [self] in
            state.withLock { s -> (EngineSnapshot?, Int, [FenceKey: [UInt8]?], [(FenceKey, String)]) in
                _ = followers.withLock { RuntimeFences.moveFollowing(&s, &$0, now: now, interval: followInterval) }
                guard s.dirty, now >= s.lastBuild + rebuildInterval else {
                    noteRemainingWork(s)
                    return (nil, 0, [:], [])
                }
                s.lastBuild = now
                var rejections: [(FenceKey, String)] = []
                let snapshot = RuntimeFences.rebuild(&s, logger: logger) { rejections.append(($0, $1)) }
                let saves = s.unsaved
                s.unsaved = [:]
                noteRemainingWork(s)
                return (snapshot, s.generation, saves, rejections)
            }
        }
        for (key, reason) in rejections { reject(key, reason) }
        await save(saves)
        guard let snapshot else { return }
        // A SIGHUP reload and the loop may both get here: the newest snapshot wins.
        let newest = live.withLock { live in
            guard generation > live.generation else { return false }
            live = (snapshot, generation)
            adoptions.yield(snapshot)
            return true
        }
        if newest { await onQueue { self.updateFollowing() } }
        for (key, _) in saves where !rejections.contains(where: { $0.0 == key }) {
            warnings.clear("fence-\(key.layer)/\(key.fence)")
        }
        logger.debug("runtime fences: snapshot built", [
            "fences": "\(snapshot.fences.count)", "build.ms": "\(Int((MonotonicClock.now() - now) * 1000))",
        ])
    }

    /// Writes `saves` to the store. A failed write gives them back to `unsaved` (unless a newer
    /// change came meanwhile), so they are tried again (``retryUnsaved()``, once a second) and
    /// at shutdown: a change is never dropped by a failed save.
    private func save(_ saves: [FenceKey: [UInt8]?]) async {
        guard !saves.isEmpty else { return }
        do {
            try await store.saveRuntimeFences(saves.map { (layer: $0.key.layer, fence: $0.key.fence, feature: $0.value) })
            warnings.clear("runtime-fences-store", resolved: "runtime fences saved")
        } catch {
            warnings.set("runtime-fences-store", "cannot save runtime fences (they stay live; retried every second): \(error)")
            await onQueue { [self] in
                state.withLock { s in
                    for (key, value) in saves where s.unsaved[key] == nil { s.unsaved[key] = .some(value) }
                    s.saveRetry = MonotonicClock.now() + 1
                }
                workPending.store(true, ordering: .releasing)
            }
        }
    }

    /// Saves what a failed save left (when its retry is due, or `now` at shutdown).
    private func retryUnsaved(force: Bool = false) async {
        let saves: [FenceKey: [UInt8]?] = await onQueue { [self] in
            state.withLock { s in
                guard !s.unsaved.isEmpty, force || (!s.dirty && MonotonicClock.now() >= s.saveRetry) else {
                    noteRemainingWork(s)
                    return [:]
                }
                let saves = s.unsaved
                s.unsaved = [:]
                return saves
            }
        }
        await save(saves)
    }

    /// On the queue: keeps ``run()`` coming while a change waits for its rebuild interval, a
    /// save for its retry, or a followed device's position for its fences' move.
    private func noteRemainingWork(_ s: State) {
        if s.dirty || !s.unsaved.isEmpty || followers.withLock({ $0.follows.values.contains { $0.position != nil } }) {
            workPending.store(true, ordering: .releasing)
        }
    }

    func run() async throws {
        while !stopped.load(ordering: .relaxed) {
            try? await Task.sleep(for: .milliseconds(50))
            // Idle (the usual case): no visit to the queue.
            guard workPending.exchange(false, ordering: .acquiringAndReleasing) else { continue }
            await rebuildIfDue()
            await retryUnsaved()
        }
    }

    /// Stops the loop, then saves every change not saved yet (one received in the last
    /// rebuild interval would otherwise come back from the database after a restart).
    func shutdown() async {
        stopped.store(true, ordering: .relaxed)
        adoptions.finish()
        await retryUnsaved(force: true)
    }
}
