import GeotriggerCore

/// The runtime fences a gateway holds, and every decision about them: a value type whose
/// mutating methods return what ``RuntimeFences`` must do (publish a rejection, build a
/// snapshot, save these rows), tested without a broker, a store or a queue
/// (`RuntimeFenceBookTests`). Times are passed in; parsing a payload and building an
/// ``EngineSnapshot`` are the caller's (a closure for the one, a ``Build`` request answered with
/// ``built(_:)`` or ``buildFailed(_:)`` for the other).
///
/// The rules (docs/control-plane.md "Runtime fences"):
/// - a change is checked (the topic's layer and id, not a file layer, 1 MiB, `runtime.maxBytes`,
///   the payload, `runtime.maxFences`) and then *applied*: the set is dirty and the change
///   unsaved; a rejected change leaves the previous version live;
/// - a rebuild (at most every ``rebuildInterval`` seconds) takes every change since the last
///   one; a fence the build refuses goes back to its previous version (*rolled back*) and the
///   build is tried again without it, at most three times;
/// - the unsaved changes go to the store after a rebuild; a failed save gives them back, to be
///   tried again a second later (or at shutdown), unless a newer change to the fence came;
/// - a following fence (`properties.follow`) moves to its device's latest position at most once
///   per ``followInterval`` seconds (``Followers``);
/// - the broker's retained copy (sent at a connect, flagged retained) of a fence the gateway
///   holds in another version, or deleted, is stale (a broker restarted from an old save
///   brought it back): the gateway's version wins and is published again, or the topic cleared
///   (``Action/restoreRetained(_:_:)``). A retained fence the gateway never had is taken as a
///   change.
struct RuntimeFenceBook: Sendable {
    /// (layer, fence id).
    struct FenceKey: Sendable, Hashable {
        var layer: String
        var fence: String
    }

    /// A runtime fence as accepted, with the bytes it was published as (for the store).
    struct Entry: Sendable, Equatable {
        var fence: Fence
        var feature: [UInt8]
    }

    /// A payload that failed to parse as a fence, as the broker may still hold it retained: its
    /// size and digest (the payload itself is not kept) and why it was rejected.
    struct Rejected: Sendable, Equatable {
        var bytes: Int
        var digest: Int
        var reason: String
    }

    /// What ``RuntimeFences`` does after a change or a build.
    enum Action: Sendable, Equatable {
        /// Publish `reason` on `PREFIX/fences/LAYER/FENCE_ID/error` and set the fence's status
        /// warning: the change is refused, the previous version (if any) stays.
        case reject(FenceKey, String)
        /// No saved fence is left out any more: clear ``RuntimeFences/leftOutWarning``.
        case leftOutResolved
        /// The build failed on something no fence is to blame for: log it (the live snapshot stays).
        case buildProblem(String)
        /// The broker's retained copy of the fence is stale: publish this version retained
        /// again (nil: clear the topic, the fence is deleted) and warn.
        case restoreRetained(FenceKey, [UInt8]?)
    }

    /// What ``RuntimeFences`` builds: an ``EngineSnapshot`` of these layers and triggers,
    /// reusing the live snapshot's prepared fences. Answer with ``built(_:)`` or
    /// ``buildFailed(_:)``.
    struct Build: Sendable {
        var layers: [FenceLayer]
        var configTriggers: JSONValue?
        var reusing: EngineSnapshot
    }

    /// What a failed build leads to.
    struct Rollback: Sendable {
        /// Rejections and problems to publish and log.
        var actions: [Action]
        /// Build again (the blamed fences rolled back); nil: give up, the live snapshot stays.
        var retry: Build?
    }

    /// A following fence's device moved: where to, and when its fences may move next.
    struct Follow: Sendable, Equatable {
        var position: Coordinate?
        var nextMove: Double = 0
    }

    /// Device → following fences, and the device's latest position to move them to. Kept apart
    /// from the book (under a lock of its own) because the update path writes it.
    struct Followers: Sendable {
        private(set) var following: [String: [FenceKey]] = [:]
        private(set) var follows: [String: Follow] = [:]

        /// Whether a fence follows `device`.
        func isFollowed(_ device: String) -> Bool { following[device] != nil }

        /// An accepted position of `device`: its fences move there at their next move (the
        /// latest position wins). A device no fence follows is ignored.
        mutating func moved(_ device: String, to position: Coordinate) {
            guard following[device] != nil else { return }
            follows[device, default: Follow()].position = position
        }

        /// Who follows whom now (after a snapshot was adopted): positions of devices no longer
        /// followed are dropped.
        mutating func follow(_ following: [String: [FenceKey]]) {
            self.following = following
            follows = follows.filter { following[$0.key] != nil }
        }

        /// A device's position waits to move its fences.
        var positionWaiting: Bool { follows.values.contains { $0.position != nil } }

        /// When the first waiting position is due to move its fences.
        var nextMove: Double? { follows.values.lazy.filter { $0.position != nil }.map(\.nextMove).min() }

        /// Takes the positions due at `now` (the device moved and its interval passed) and
        /// starts each device's next interval.
        fileprivate mutating func takeDue(now: Double, interval: Double) -> [(device: String, position: Coordinate)] {
            var due: [(device: String, position: Coordinate)] = []
            for (device, follow) in follows {
                guard let position = follow.position, now >= follow.nextMove else { continue }
                due.append((device, position))
                follows[device] = Follow(position: nil, nextMove: now + interval)
            }
            return due
        }
    }

    /// `PREFIX` (for the rejection of a topic without a layer or a fence id).
    let prefix: String
    /// `runtime.maxFences`.
    let maxFences: Int
    /// `runtime.maxBytes`: the most payload bytes the live runtime fences hold together, with
    /// the open trips (``tripBytes``).
    let maxBytes: Int
    /// What the open trips count against `runtime.maxBytes` (docs/trips.md "Limits"), as
    /// ``Trips`` last said before a change is offered.
    var tripBytes = 0
    /// The most bytes one payload may have.
    let maxPayload: Int
    /// Changes are coalesced into one rebuild at most this often (seconds).
    let rebuildInterval: Double
    /// A following fence moves at most this often per followed device (seconds).
    let followInterval: Double
    /// A failed save is tried again after this many seconds.
    static let saveRetryDelay: Double = 1

    private(set) var fileLayers: [FenceLayer]
    private(set) var configTriggers: JSONValue?
    /// Layer names the config's triggers watch that are not file layers (runtime layers that
    /// may still be empty).
    private(set) var namedRuntimeLayers: Set<String>
    private(set) var layers: [String: [String: Entry]] = [:]
    /// The payloads that failed to parse, per fence topic, until the topic gets a fence or is
    /// cleared. They count against `runtime.maxBytes` and `runtime.maxFences` with the live
    /// fences, so that retained junk on the fence topics never makes the gateway parse more
    /// than that budget at a connect; the same payload again (the broker's retained copy at the
    /// next connect) is rejected again without being parsed.
    private(set) var rejected: [FenceKey: Rejected] = [:]
    /// The bytes of ``rejected`` together.
    private(set) var rejectedBytes = 0
    /// Unique per fence version, used as its `featureIndex` (so unchanged fences compare equal
    /// across rebuilds and build problems map back to the fence).
    private(set) var serial = 0
    /// The last snapshot built (the one the next build reuses).
    private(set) var snapshot: EngineSnapshot
    /// Counts the snapshots built, so that an older one is never handed on after a newer.
    private(set) var generation = 0
    /// A change waits for a rebuild.
    private(set) var dirty = false
    /// The last accepted version of each fence changed since the last rebuild (nil: it did not
    /// exist), to restore when the rebuild refuses the new one.
    private(set) var previous: [FenceKey: Entry?] = [:]
    /// Changes not saved yet: the payload, or nil to delete the row.
    private(set) var unsaved: [FenceKey: [UInt8]?] = [:]
    /// The takes of ``unsaved`` so far (each non-empty ``Saves`` is the next turn).
    private(set) var turns = 0
    /// The turn that last took each fence's change and is not known to be written yet.
    private var lastTurn: [FenceKey: Int] = [:]
    private(set) var lastBuild = -Double.infinity
    /// After a failed save: when ``unsaved`` is tried again.
    private(set) var saveRetry = -Double.infinity
    /// Fences in the database that the start left out (over the budget): a delete of one still
    /// deletes its row.
    private(set) var leftOut: Set<FenceKey> = []
    /// Fences deleted in this run, oldest first (at most ``maxFences``): a retained copy of one
    /// is stale and cleared again.
    private(set) var deleted: Set<FenceKey> = []
    private var deletedOrder: [FenceKey] = []
    /// The build under way: serial → fence id per runtime layer, and the attempts made.
    private var building: (bySerial: [String: [Int: String]], attempts: Int)?

    /// The most attempts of one rebuild (each rolls back the fences the previous one refused).
    static let buildAttempts = 3

    init(
        prefix: String, fileLayers: [FenceLayer], configTriggers: JSONValue?, namedRuntimeLayers: Set<String>,
        snapshot: EngineSnapshot, maxFences: Int, maxBytes: Int, maxPayload: Int, rebuildInterval: Double,
        followInterval: Double
    ) {
        self.prefix = prefix
        self.fileLayers = fileLayers
        self.configTriggers = configTriggers
        self.namedRuntimeLayers = namedRuntimeLayers
        self.snapshot = snapshot
        self.maxFences = maxFences
        self.maxBytes = maxBytes
        self.maxPayload = maxPayload
        self.rebuildInterval = rebuildInterval
        self.followInterval = followInterval
    }

    /// The payload bytes of the live runtime fences together (`runtime.maxBytes` bounds it, with
    /// ``rejectedBytes``).
    var bytes: Int { layers.values.reduce(0) { total, fences in fences.values.reduce(total) { $0 + $1.feature.count } } }
    var fenceCount: Int { layers.values.reduce(0) { $0 + $1.count } }

    // MARK: Start

    /// At start, with `restored` fences of `bytes` bytes restored so far: whether a saved fence
    /// of `size` bytes still fits `runtime.maxFences` and `runtime.maxBytes`.
    func fitsAtStart(restored: Int, bytes: Int, size: Int) -> Bool {
        restored < maxFences && bytes + size <= maxBytes
    }

    /// At start: a saved fence that does not fit stays in the database only.
    mutating func leaveOut(_ key: FenceKey) { leftOut.insert(key) }

    /// At start: a saved fence, parsed, is live again (a build is due).
    mutating func restore(_ key: FenceKey, fence: Fence, feature: [UInt8]) {
        var fence = fence
        serial += 1
        fence.featureIndex = serial
        layers[key.layer, default: [:]][key.fence] = Entry(fence: fence, feature: feature)
        dirty = true
    }

    // MARK: Changes

    /// A message on `PREFIX/fences/LAYER/FENCE_ID`: `payload` adds or replaces the fence, an
    /// empty one deletes it. The cheap checks come first; `parse` (called at most once, only
    /// when they pass) checks the payload as a fence. `retained`: the broker's retained copy
    /// (the message came flagged retained, as at a connect's subscription), not a change
    /// published now: where the gateway holds another version of the fence, or deleted it, the
    /// copy is stale and the gateway's version is put back instead.
    mutating func offer(
        _ key: FenceKey, payload: [UInt8], retained: Bool = false, parse: (FenceKey, [UInt8]) -> Result<Fence, FenceError>
    ) -> [Action] {
        if key.layer.isEmpty || key.fence.isEmpty {
            return [.reject(key, "the topic needs a layer and a fence id: \(prefix)/fences/LAYER/FENCE_ID")]
        }
        if let file = fileLayers.first(where: { $0.name == key.layer })?.file {
            return [.reject(key, "layer \"\(key.layer)\" is a file layer (\(file)); runtime layers need another name")]
        }
        if payload.count > maxPayload {
            return [.reject(key, "the payload is \(payload.count) bytes, over the \(maxPayload) bytes a runtime fence may have")]
        }
        if payload.isEmpty {
            forgetRejected(key)
            return delete(key)
        }
        if retained {
            if let live = layers[key.layer]?[key.fence] {
                if live.feature != payload { return [.restoreRetained(key, live.feature)] }
            } else if deleted.contains(key) {
                return [.restoreRetained(key, nil)]
            }
        }
        let digest = Self.digest(payload)
        if let known = rejected[key], known.bytes == payload.count, known.digest == digest {
            return [.reject(key, known.reason)]  // not parsed again
        }
        if let reason = overBudget(key, payload: payload) { return [.reject(key, reason)] }
        let otherRejected = rejected.count - (rejected[key] == nil ? 0 : 1)
        if otherRejected > 0, layers[key.layer]?[key.fence] == nil, fenceCount + otherRejected >= maxFences {
            return [.reject(key, "\(fenceCount) runtime fences are live and \(otherRejected) rejected payloads are retained "
                + "on their topics (runtime.maxFences \(maxFences)); delete a fence or clear a rejected fence's topic first")]
        }
        switch parse(key, payload) {
        case .failure(let problem):
            forgetRejected(key)
            rejected[key] = Rejected(bytes: payload.count, digest: digest, reason: problem.description)
            rejectedBytes += payload.count
            return [.reject(key, problem.description)]
        case .success(var fence):
            forgetRejected(key)
            let old = layers[key.layer]?[key.fence]
            if let old, old.feature == payload { return [] }  // a retained copy of what is live
            if old == nil, fenceCount >= maxFences {
                return [.reject(key, "\(maxFences) runtime fences are live (runtime.maxFences); delete one first")]
            }
            if previous[key] == nil { previous[key] = .some(old) }
            serial += 1
            fence.featureIndex = serial
            layers[key.layer, default: [:]][key.fence] = Entry(fence: fence, feature: payload)
            unsaved[key] = .some(payload)
            dirty = true
            deleted.remove(key)
            // One the start left out, live again in a version that fits.
            return leftOut.remove(key) != nil && leftOut.isEmpty ? [.leftOutResolved] : []
        }
    }

    private mutating func delete(_ key: FenceKey) -> [Action] {
        guard let old = layers[key.layer]?[key.fence] else {
            // One the start left out: nothing of it is live, its row goes.
            guard leftOut.remove(key) != nil else { return [] }
            unsaved[key] = .some(nil)
            return leftOut.isEmpty ? [.leftOutResolved] : []
        }
        if previous[key] == nil { previous[key] = .some(old) }
        layers[key.layer]![key.fence] = nil
        if layers[key.layer]!.isEmpty { layers[key.layer] = nil }
        unsaved[key] = .some(nil)
        dirty = true
        rememberDeleted(key)
        return []
    }

    /// Remembers that `key` was deleted in this run, within ``maxFences`` of them.
    private mutating func rememberDeleted(_ key: FenceKey) {
        guard deleted.insert(key).inserted else { return }
        deletedOrder.append(key)
        while deleted.count > maxFences, !deletedOrder.isEmpty {
            deleted.remove(deletedOrder.removeFirst())
        }
        if deletedOrder.count > 2 * max(maxFences, 16) { deletedOrder.removeAll { !deleted.contains($0) } }
    }

    /// Why `payload` as fence `key` would pass `runtime.maxBytes` (nil: it fits): the live
    /// fences' bytes and the rejected payloads' without the ones it replaces, plus its own.
    func overBudget(_ key: FenceKey, payload: [UInt8]) -> String? {
        let replaced = (layers[key.layer]?[key.fence]?.feature.count ?? 0) + (rejected[key]?.bytes ?? 0)
        let others = bytes + rejectedBytes - replaced
        guard others + tripBytes + payload.count > maxBytes else { return nil }
        let junk = rejectedBytes - (rejected[key]?.bytes ?? 0)
        return "the payload is \(payload.count) bytes and the other runtime fences hold \(others) bytes"
            + (junk > 0 ? " (\(junk) of them payloads rejected earlier, still retained on their topics)" : "")
            + (tripBytes > 0 ? " and the open trips \(tripBytes)" : "")
            + ": \(others + tripBytes + payload.count) bytes together, over runtime.maxBytes (\(maxBytes)); "
            + (junk > 0 ? "delete or shrink a fence, or clear a rejected fence's topic, first" : "delete or shrink a fence first")
    }

    /// `key`'s payload no longer counts as rejected (the topic got a fence or was cleared).
    private mutating func forgetRejected(_ key: FenceKey) {
        if let old = rejected.removeValue(forKey: key) { rejectedBytes -= old.bytes }
    }

    /// A digest of a payload, to know the same rejected payload again without keeping it.
    static func digest(_ payload: [UInt8]) -> Int {
        var hasher = Hasher()
        payload.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    /// A SIGHUP reload: new file layers and triggers, the runtime layers kept; a build is due at once.
    mutating func reload(fileLayers: [FenceLayer], configTriggers: JSONValue?, namedRuntimeLayers: Set<String>) {
        self.fileLayers = fileLayers
        self.configTriggers = configTriggers
        self.namedRuntimeLayers = namedRuntimeLayers
        dirty = true
        lastBuild = -Double.infinity
    }

    // MARK: Following fences

    /// Who follows whom in the live fences (for ``Followers/follow(_:)`` once their snapshot is adopted).
    func following() -> [String: [FenceKey]] {
        var following: [String: [FenceKey]] = [:]
        for (layer, fences) in layers {
            for (id, entry) in fences {
                if case .string(let device)? = entry.fence.properties["follow"] {
                    following[device, default: []].append(FenceKey(layer: layer, fence: id))
                }
            }
        }
        return following
    }

    /// Moves the following fences whose device moved and whose interval passed to the device's
    /// latest position (a build is due); true if any moved.
    mutating func moveFollowing(_ followers: inout Followers, now: Double) -> Bool {
        var moved = false
        for (device, position) in followers.takeDue(now: now, interval: followInterval) {
            for key in followers.following[device] ?? [] {
                guard var entry = layers[key.layer]?[key.fence] else { continue }
                entry.fence.geometry = .points([position])
                layers[key.layer]![key.fence] = entry
                moved = true
            }
        }
        if moved { dirty = true }
        return moved
    }

    // MARK: Rebuilding

    /// The loop's visit at `now`: following fences move, then a build if a change waits and
    /// ``rebuildInterval`` passed since the last one (nil: nothing to build now).
    mutating func rebuildIfDue(now: Double, followers: inout Followers) -> Build? {
        _ = moveFollowing(&followers, now: now)
        guard dirty, now >= lastBuild + rebuildInterval else { return nil }
        lastBuild = now
        return startBuild()
    }

    /// A build of the file layers and every runtime layer (named or holding fences), each
    /// layer's fences in the order they were accepted.
    mutating func startBuild() -> Build {
        building = (bySerial: [:], attempts: 0)
        return nextBuild()
    }

    private mutating func nextBuild() -> Build {
        var layers = fileLayers
        var bySerial: [String: [Int: String]] = [:]
        for name in Set(self.layers.keys).union(namedRuntimeLayers).sorted() {
            let fences = (self.layers[name] ?? [:]).values.map(\.fence).sorted { $0.featureIndex < $1.featureIndex }
            bySerial[name] = Dictionary(uniqueKeysWithValues: fences.map { ($0.featureIndex, $0.id) })
            layers.append(FenceLayer(name: name, file: "", fences: fences))
        }
        building = (bySerial: bySerial, attempts: (building?.attempts ?? 0) + 1)
        return Build(layers: layers, configTriggers: configTriggers, reusing: snapshot)
    }

    /// The build gave `snapshot`: it is the live one now, the changes it holds are settled.
    /// Returns its generation.
    mutating func built(_ snapshot: EngineSnapshot) -> Int {
        self.snapshot = snapshot
        generation += 1
        previous = [:]
        dirty = false
        building = nil
        return generation
    }

    /// The build refused `issues`. Each one that names a runtime fence rolls that fence back to
    /// its previous version (or removes it when it is new; its change is not saved) and is
    /// rejected; the others are logged. With a fence rolled back the build is tried again (at
    /// most ``buildAttempts`` in all; past that the changes wait for the next visit); with none,
    /// the live snapshot stays and the batch is dropped.
    mutating func buildFailed(_ issues: [TriggerIssue]) -> Rollback {
        let bySerial = building?.bySerial ?? [:]
        var actions: [Action] = []
        var undone = false
        for issue in issues {
            guard case .layer(let name, _) = issue.origin, let table = bySerial[name],
                issue.path.count >= 2, case .index(let serial) = issue.path[1], let id = table[serial]
            else {
                actions.append(.buildProblem(issue.description))
                continue
            }
            let key = FenceKey(layer: name, fence: id)
            actions.append(.reject(key, issue.message))
            if let previous = previous[key] {
                layers[name, default: [:]][id] = previous
            } else {
                layers[name]?[id] = nil
            }
            unsaved[key] = nil
            undone = true
        }
        if !undone {
            // Nothing to blame on one fence: keep the live snapshot, drop the batch.
            dirty = false
            building = nil
            return Rollback(actions: actions, retry: nil)
        }
        guard let attempts = building?.attempts, attempts < Self.buildAttempts else {
            building = nil
            return Rollback(actions: actions, retry: nil)
        }
        return Rollback(actions: actions, retry: nextBuild())
    }

    // MARK: Saving

    /// One take of the changes to write: the payloads (nil: delete the row) and the take's
    /// turn. Takes are numbered in the order they are made (the loop's, a SIGHUP reload's, the
    /// shutdown's), and their writes must reach the store in that order (``RuntimeFences``
    /// waits for its turn), so an older version never lands after a newer one.
    struct Saves: Sendable, Equatable {
        var changes: [FenceKey: [UInt8]?] = [:]
        /// 1, 2, ... for the takes that hold changes; 0 for an empty one.
        var turn = 0
        var isEmpty: Bool { changes.isEmpty }
    }

    /// The changes to write to the store now (after a rebuild): taken out of ``unsaved``.
    mutating func takeUnsaved() -> Saves {
        guard !unsaved.isEmpty else { return Saves() }
        turns += 1
        for key in unsaved.keys { lastTurn[key] = turns }
        defer { unsaved = [:] }
        return Saves(changes: unsaved, turn: turns)
    }

    /// Writing `saves` succeeded.
    mutating func saved(_ saves: Saves) {
        for key in saves.changes.keys where lastTurn[key] == saves.turn { lastTurn[key] = nil }
    }

    /// Writing `saves` failed at `now`: they are unsaved again, except where a newer change
    /// came meanwhile (waiting in ``unsaved``, or taken by a later turn, whose write goes after
    /// this one: giving the old payload back would write it over the newer), and tried again
    /// after ``saveRetryDelay``.
    mutating func saveFailed(_ saves: Saves, now: Double) {
        for (key, value) in saves.changes where unsaved[key] == nil && lastTurn[key] == saves.turn { unsaved[key] = .some(value) }
        saveRetry = now + Self.saveRetryDelay
    }

    /// What a failed save left, when its retry is due at `now` and no rebuild waits (the
    /// rebuild saves them); `force` (shutdown): whatever is unsaved, at once.
    mutating func retryDue(now: Double, force: Bool = false) -> Saves {
        guard !unsaved.isEmpty, force || (!dirty && now >= saveRetry) else { return Saves() }
        return takeUnsaved()
    }

    /// Something is still to do at a later visit: a change waits for its rebuild interval, a
    /// save for its retry, or a followed device's position for its fences' move.
    func workRemaining(_ followers: Followers) -> Bool {
        dirty || !unsaved.isEmpty || followers.positionWaiting
    }

    /// When the first of that work is due (monotonic seconds; nil: none waits): the end of the
    /// rebuild interval for a change, the retry of a failed save, a followed device's move.
    func nextDue(_ followers: Followers) -> Double? {
        var due = Double.infinity
        if dirty { due = lastBuild + rebuildInterval } else if !unsaved.isEmpty { due = saveRetry }
        if let move = followers.nextMove { due = min(due, move) }
        return due.isFinite ? due : nil
    }
}
