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
///
/// What to do with a change, a build, a save or a followed device's move is decided by a
/// ``RuntimeFenceBook`` (a value, tested on its own); this class runs its answers: the hop to
/// the queue, parsing and building, the store's writes, the rejections on the error topics,
/// and handing snapshots on.
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
    /// `runtime.maxBytes`: the most payload bytes the live runtime fences hold together (with
    /// the open trips).
    let maxBytes: Int
    /// What the runtime fences hold of `runtime.maxBytes` (live and rejected payloads), for
    /// ``Trips``' budget; and what the open trips hold, for this one's (docs/trips.md "Limits").
    let heldBytes = Atomic<Int>(0)
    let tripBytes = Atomic<Int>(0)
    /// A following fence moves at most this often per followed device (seconds).
    let followInterval: Double
    /// `fences.maxVertices`: a fence with more positions is rejected.
    let maxVertices: Int

    typealias FenceKey = RuntimeFenceBook.FenceKey

    /// What the runtime fences are and every decision about them; changed only on `queue`.
    private let book: LeveledMutex<RuntimeFenceBook>
    private let queue = DispatchQueue(label: "geotrigger.fences")
    /// The live snapshot (also in `book`) and its generation, for readers that must not wait
    /// for a build.
    private let live: Mutex<(snapshot: EngineSnapshot, generation: Int)>
    private let followers = LeveledMutex(RuntimeFenceBook.Followers(), level: .fenceFollowers)
    /// Messages handed to `queue` by ``take(_:)`` and not applied yet, and their payload bytes.
    private let backlog = Atomic<Int>(0)
    private let backlogBytes = Atomic<Int>(0)
    private let anyFollowing = Atomic<Bool>(false)
    /// Something may be due for ``run()``: a change to rebuild, a save to retry, a following
    /// fence to move. Without it the loop sleeps; set from false it pokes `wakeup`.
    private let workPending = Atomic<Bool>(true)
    /// Wakes ``run()``'s loop when `workPending` is set (``markWork()``).
    private let wakeup = Wakeup()
    /// When the work left by the loop's last turn (or a reload meanwhile) is due
    /// (``RuntimeFenceBook/nextDue(_:)``): the loop sleeps until then.
    private let workDue = Mutex(Double.infinity)
    /// The order of the writes of unsaved changes (``save(_:)``).
    private let saveTurns = SaveTurns()
    /// Ends ``run()``'s loop (``shutdown()``).
    private let stop = StopSignal()
    /// Whether ``run()``'s loop started, and whether ``shutdown()`` came: a loop that started
    /// is waited for before the last save, so a save of its that fails and gives its changes
    /// back is not left behind.
    private let loopState = Mutex((started: false, stopping: false))
    /// Fired when ``run()``'s loop has ended.
    private let loopEnded = StopSignal()
    /// While work waits for its time (a rebuild interval, a save retry, a follow interval),
    /// ``run()`` sleeps until it is due, but at least this long (seconds); with none it sleeps
    /// until poked.
    static let loopInterval = 0.05
    /// Where each rebuilt snapshot goes (the ``MonitorPool`` adopts them in order).
    private let adoptions: AsyncStream<EngineSnapshot>.Continuation
    /// Told of each new live snapshot (the occupancy publisher's wake-up), after it is live.
    private let snapshotChanged: @Sendable () -> Void

    /// The runtime fences saved in `store`, applied over `setup`'s file layers and triggers.
    init(
        setup: GatewaySetup, client: MQTTClient, store: GatewayStore, warnings: Warnings, logger: Logger,
        adoptions: AsyncStream<EngineSnapshot>.Continuation, rebuildInterval: Double = 0.25, followInterval: Double = 1,
        snapshotChanged: @escaping @Sendable () -> Void = {}
    ) async {
        self.adoptions = adoptions
        self.snapshotChanged = snapshotChanged
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
        var book = RuntimeFenceBook(
            prefix: prefix, fileLayers: fileLayers, configTriggers: setup.config.triggers.map { .array($0.map { .object($0) }) },
            namedRuntimeLayers: named, snapshot: setup.snapshot, maxFences: maxFences, maxBytes: maxBytes,
            maxPayload: GatewayConfig.Runtime.maxPayload, rebuildInterval: rebuildInterval, followInterval: followInterval)
        await RuntimeFences.restore(
            into: &book, from: store, maxVertices: setup.config.fences.maxVertices, warnings: warnings, logger: logger)
        live = Mutex((book.snapshot, book.generation))
        heldBytes.store(book.bytes + book.rejectedBytes, ordering: .relaxed)
        self.book = LeveledMutex(book, level: .runtimeFenceBook)
        updateFollowing()
    }

    /// Applies the runtime fences saved in `store` to `book` (file layers' names skipped), as
    /// many as fit in `runtime.maxFences` and `runtime.maxBytes`: their sizes are read first (no
    /// payload), then the payloads of those that fit one at a time, by layer then fence id; a
    /// fence that does not fit is left out (its row stays) and the next smaller ones may still
    /// fit. Left-out fences are logged and warned with their count, so a database that grew past
    /// the budget (or a budget lowered) never makes a start read more than the budget.
    static func restore(
        into book: inout RuntimeFenceBook, from store: GatewayStore, maxVertices: Int, warnings: Warnings, logger: Logger
    ) async {
        let fileNames = Set(book.fileLayers.map(\.name))
        var restored = 0, bytes = 0, leftOutBytes = 0
        do {
            let sizes = try await store.runtimeFenceSizes()
            for size in sizes where !fileNames.contains(size.layer) {
                let key = FenceKey(layer: size.layer, fence: size.fence)
                guard book.fitsAtStart(restored: restored, bytes: bytes, size: size.bytes) else {
                    book.leaveOut(key)
                    leftOutBytes += size.bytes
                    continue
                }
                guard let feature = try await store.runtimeFence(layer: size.layer, fence: size.fence) else { continue }
                switch RuntimeFences.parse(
                    feature, layer: size.layer, id: size.fence, topic: "database: runtime fence \(size.layer)/\(size.fence)",
                    maxVertices: maxVertices) {
                case .success(let fence):
                    book.restore(key, fence: fence, feature: feature)
                    restored += 1
                    bytes += feature.count
                case .failure(let problem):
                    logger.warning("a saved runtime fence is ignored", ["problem": problem.message])
                }
            }
            if restored > 0 {
                for case .buildProblem(let problem) in RuntimeFences.build(&book).actions {
                    logger.error("runtime fences: the snapshot cannot be built", ["problem": problem])
                }
                logger.notice("runtime fences restored from the database", ["fences": "\(restored)", "bytes": "\(bytes)"])
            }
        } catch {
            warnings.set("runtime-fences", "cannot read the saved runtime fences: \(error)")
        }
        if !book.leftOut.isEmpty {
            logger.warning("saved runtime fences left out: over runtime.maxFences or runtime.maxBytes", [
                "left.out": "\(book.leftOut.count)", "left.out.bytes": "\(leftOutBytes)", "restored": "\(restored)",
                "restored.bytes": "\(bytes)", "runtime.maxFences": "\(book.maxFences)", "runtime.maxBytes": "\(book.maxBytes)",
            ])
            warnings.set(Self.leftOutWarning, "\(book.leftOut.count) saved runtime fences (\(leftOutBytes) bytes) were left out at start: "
                + "the \(restored) restored hold \(bytes) bytes of runtime.maxBytes \(book.maxBytes) (runtime.maxFences \(book.maxFences)); "
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
    /// queries while a big fence is checked; past ``backlogLimit`` messages or
    /// ``backlogByteLimit`` payload bytes waiting it waits until this one is applied, so that
    /// retained fences (up to 1 MiB each, by the thousand at a connect) are read a few at a
    /// time.
    func queueChange(_ message: MQTTMessage) async {
        let size = message.payload.count
        let waiting = backlog.add(1, ordering: .relaxed).newValue
        let waitingBytes = backlogBytes.add(size, ordering: .relaxed).newValue
        queue.async { [self] in
            apply(message)
            backlog.subtract(1, ordering: .relaxed)
            backlogBytes.subtract(size, ordering: .relaxed)
            markWork()
        }
        if waiting > Self.backlogLimit || waitingBytes > Self.backlogByteLimit { await onQueue {} }
    }

    /// Fence messages handed to the queue and not applied yet, before ``take(_:)`` waits.
    static let backlogLimit = 16
    /// Their payload bytes, before ``take(_:)`` waits.
    static let backlogByteLimit = 4 << 20

    /// The longest `properties.name` of a runtime fence, in UTF-8 bytes (docs/limits.md).
    static let maxNameBytes = 256

    /// On the queue: the book decides on the message (parsing the payload when the cheap checks
    /// pass), and its actions are run.
    private func apply(_ message: MQTTMessage) {
        // Split as bytes: a level that starts with a combining mark would join the '/' before
        // it into one Character and be cut or not split.
        let levels = topics.name(of: message.topic).utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard levels.count == 2 else { return }
        let key = FenceKey(layer: String(decoding: levels[0], as: UTF8.self), fence: String(decoding: levels[1], as: UTF8.self))
        let maxVertices = maxVertices
        // Only this queue takes the book's lock, so parsing under it holds up nobody.
        let trips = tripBytes.load(ordering: .relaxed)
        let actions = book.withLock { book in
            book.tripBytes = trips
            let actions = book.offer(key, payload: message.payload, retained: message.retain) { key, payload in
                RuntimeFences.parse(payload, layer: key.layer, id: key.fence, topic: message.topic, maxVertices: maxVertices)
            }
            heldBytes.store(book.bytes + book.rejectedBytes, ordering: .relaxed)
            return actions
        }
        perform(actions)
    }

    /// Runs the book's actions: rejections published, the left-out warning cleared, build
    /// problems logged.
    private func perform(_ actions: [RuntimeFenceBook.Action]) {
        for action in actions {
            switch action {
            case .reject(let key, let reason): reject(key, reason)
            case .leftOutResolved: warnings.clear(Self.leftOutWarning, resolved: "no saved runtime fence is left out any more")
            case .buildProblem(let problem): logger.error("runtime fences: the snapshot cannot be built", ["problem": problem])
            case .restoreRetained(let key, let feature): restoreRetained(key, feature)
            }
        }
    }

    /// The broker's retained copy of `key` is stale (a broker restarted from a save older than
    /// the gateway's database): publishes the gateway's version retained again, or clears the
    /// topic (nil: deleted), and warns until the fence's next change is saved. The copy coming
    /// back is the live version (or an empty message for a fence not held): no change.
    private func restoreRetained(_ key: FenceKey, _ feature: [UInt8]?) {
        let name = "\(key.layer)/\(key.fence)"
        let topic = String(decoding: topics.base, as: UTF8.self) + name
        let what = feature == nil ? "it is deleted in the gateway's database: the topic is cleared again"
            : "the gateway's database holds another version: that version is published again"
        let text = "runtime fence \(name): the broker held an old retained version (restarted from an old save?); \(what)"
        do {
            _ = try client.publish(topic: topic, payload: feature ?? [], qos: .atLeastOnce, retain: true)
        } catch {
            logger.warning("cannot publish a runtime fence again", ["fence": name, "error": "\(error)"])
        }
        logger.warning(text, ["layer": key.layer, "fence": key.fence])
        warnings.set("fence-\(name)", text, origin: .client)
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
        anyFollowing.load(ordering: .relaxed) && followers.withLock { $0.isFollowed(device) }
    }

    /// An accepted update of a followed device: its fences move there (at most once per
    /// ``followInterval``; the latest position wins).
    func followedDeviceMoved(_ update: LocationUpdate) {
        followers.withLock { $0.moved(update.device, to: update.coordinate) }
        markWork()
    }

    /// Who follows whom, from the book's fences (at start and after each adoption).
    private func updateFollowing() {
        let following = book.withLock { $0.following() }
        followers.withLock { $0.follow(following) }
        anyFollowing.store(!following.isEmpty, ordering: .relaxed)
    }

    // MARK: Rebuilding

    /// Builds what `book` asks for until it has a snapshot or gives up (see
    /// ``RuntimeFenceBook/buildFailed(_:)``), from ``RuntimeFenceBook/startBuild()``'s request or
    /// `first`. Returns the snapshot and its generation if one was built, and the actions of
    /// the fences rolled back.
    static func build(
        _ book: inout RuntimeFenceBook, first: RuntimeFenceBook.Build? = nil
    ) -> (built: (snapshot: EngineSnapshot, generation: Int)?, actions: [RuntimeFenceBook.Action]) {
        var request = first ?? book.startBuild()
        var actions: [RuntimeFenceBook.Action] = []
        while true {
            do {
                let snapshot = try EngineSnapshot(
                    layers: request.layers, configTriggers: request.configTriggers, reusing: request.reusing,
                    zones: SystemTimeZones.source)
                return ((snapshot, book.built(snapshot)), actions)
            } catch {
                let rollback = book.buildFailed(error.issues)
                actions += rollback.actions
                guard let retry = rollback.retry else { return (nil, actions) }
                request = retry
            }
        }
    }

    /// A SIGHUP reload: new file layers and triggers, runtime layers kept.
    func reload(_ setup: GatewaySetup) async { await reload(layers: setup.layers, triggers: setup.config.triggers) }

    /// A SIGHUP reload of `layers` and the config's `triggers`, runtime layers kept.
    func reload(layers: [FenceLayer], triggers: [JSONObject]?) async {
        let fileLayers = layers.filter { !$0.file.isEmpty }
        let names = Set(layers.map(\.name))
        await onQueue { self.book.withLock { book in
            book.reload(
                fileLayers: fileLayers, configTriggers: triggers.map { .array($0.map { .object($0) }) },
                namedRuntimeLayers: names.subtracting(fileLayers.map(\.name)))
        } }
        await rebuildIfDue()
        // What the rebuild left (a save to retry, a change waiting for its interval) is the loop's.
        if workPending.load(ordering: .acquiring) { wakeup.poke() }
    }

    /// Rebuilds and hands the snapshot to the pool when something changed and the interval passed.
    private func rebuildIfDue() async {
        let now = MonotonicClock.now()
        let (built, actions, saves) = await onQueue { [self] in
            book.withLock { book -> ((snapshot: EngineSnapshot, generation: Int)?, [RuntimeFenceBook.Action], RuntimeFenceBook.Saves) in
                let request = followers.withLock { book.rebuildIfDue(now: now, followers: &$0) }
                guard let request else {
                    noteRemainingWork(book)
                    return (nil, [], RuntimeFenceBook.Saves())
                }
                let (built, actions) = RuntimeFences.build(&book, first: request)
                let saves = book.takeUnsaved()
                noteRemainingWork(book)
                return (built, actions, saves)
            }
        }
        perform(actions)
        await save(saves)
        guard let built else { return }
        let (snapshot, generation) = built
        // A SIGHUP reload and the loop may both get here: the newest snapshot wins.
        let newest = live.withLock { live in
            guard generation > live.generation else { return false }
            live = (snapshot, generation)
            adoptions.yield(snapshot)
            return true
        }
        if newest {
            snapshotChanged()
            await onQueue { self.updateFollowing() }
        }
        let rejected = Set(actions.compactMap { action -> FenceKey? in
            if case .reject(let key, _) = action { key } else { nil }
        })
        for key in saves.changes.keys where !rejected.contains(key) {
            warnings.clear("fence-\(key.layer)/\(key.fence)")
        }
        logger.debug("runtime fences: snapshot built", [
            "fences": "\(snapshot.fences.count)", "build.ms": "\(Int((MonotonicClock.now() - now) * 1000))",
        ])
    }

    // MARK: Saving

    /// Writes `saves` to the store, after the takes before it (``RuntimeFenceBook/Saves``: the
    /// loop and a SIGHUP reload each take and write, so their writes could otherwise reach the
    /// store in either order). A failed write gives them back to the book
    /// (``RuntimeFenceBook/saveFailed(_:now:)``) before the next turn writes, so they are tried
    /// again (``retryUnsaved()``, once a second) and at shutdown: a change is never dropped by a
    /// failed save, and never written over a newer one.
    private func save(_ saves: RuntimeFenceBook.Saves) async {
        guard !saves.isEmpty else { return }
        await saveTurns.wait(for: saves.turn)
        do {
            try await store.saveRuntimeFences(saves.changes.map { (layer: $0.key.layer, fence: $0.key.fence, feature: $0.value) })
            warnings.clear("runtime-fences-store", resolved: "runtime fences saved")
            await onQueue { [self] in book.withLock { $0.saved(saves) } }
        } catch {
            warnings.set("runtime-fences-store", "cannot save runtime fences (they stay live; retried every second): \(error)")
            await onQueue { [self] in
                book.withLock { $0.saveFailed(saves, now: MonotonicClock.now()) }
                workPending.store(true, ordering: .releasing)
            }
        }
        await saveTurns.done(saves.turn)
    }

    /// Saves what a failed save left (when its retry is due, or at once at shutdown).
    private func retryUnsaved(force: Bool = false) async {
        let saves: RuntimeFenceBook.Saves = await onQueue { [self] in
            book.withLock { book in
                let saves = book.retryDue(now: MonotonicClock.now(), force: force)
                if saves.isEmpty { noteRemainingWork(book) }
                return saves
            }
        }
        await save(saves)
    }

    /// On the queue: keeps ``run()`` coming while a change waits for its rebuild interval, a
    /// save for its retry, or a followed device's position for its fences' move. Not a poke:
    /// the loop (or the reload) that got here looks at the flag when it is done.
    private func noteRemainingWork(_ book: RuntimeFenceBook) {
        let (remaining, due) = followers.withLock { (book.workRemaining($0), book.nextDue($0)) }
        guard remaining else { return }
        if let due { workDue.withLock { $0 = min($0, due) } }
        workPending.store(true, ordering: .releasing)
    }

    /// Something may be due for ``run()``: wakes it if it sleeps (one poke until it looks).
    private func markWork() {
        if !workPending.exchange(true, ordering: .acquiringAndReleasing) { wakeup.poke() }
    }

    /// Until ``shutdown()``: when something may be due, a rebuild and a save retry; while
    /// something waits for its time, again when it is due; otherwise (idle, the usual case) it
    /// sleeps until ``markWork()`` pokes it.
    func run() async throws {
        let starts = loopState.withLock { state in
            if !state.stopping { state.started = true }
            return state.started
        }
        guard starts else { return }
        defer { loopEnded.fire() }
        await repeating(until: stop, wakeup: wakeup) {
            guard workPending.exchange(false, ordering: .acquiringAndReleasing) else { return nil }
            workDue.withLock { $0 = .infinity }
            await rebuildIfDue()
            await retryUnsaved()
            guard workPending.load(ordering: .acquiring) else { return nil }
            // Work whose time is unknown (a reload's, noted before this turn began) is looked at soon.
            let soonest = MonotonicClock.now() + Self.loopInterval
            let due = workDue.withLock { $0 }
            return due.isFinite ? max(due, soonest) : soonest
        }
    }

    /// Stops the loop and waits for it to end, then saves every change not saved yet (one
    /// received in the last rebuild interval would otherwise come back from the database after
    /// a restart, and one given back by the loop's last failed save would be lost).
    func shutdown() async {
        let started = loopState.withLock { state in
            state.stopping = true
            return state.started
        }
        stop.fire()
        if started { await loopEnded.wait() }
        adoptions.finish()
        await retryUnsaved(force: true)
    }
}

/// The order in which ``RuntimeFences`` writes its takes of unsaved changes: turn 1, 2, ... (a
/// take's ``RuntimeFenceBook/Saves/turn``), each after the one before has been written or has
/// failed and given its changes back.
actor SaveTurns {
    /// The turn whose write goes next.
    private var next = 1
    /// Writers waiting for their turn.
    private var waiting: [Int: CheckedContinuation<Void, Never>] = [:]

    /// Returns when it is `turn`'s turn.
    func wait(for turn: Int) async {
        guard turn != next else { return }
        await withCheckedContinuation { waiting[turn] = $0 }
    }

    /// `turn` is written (or failed): the next one goes.
    func done(_ turn: Int) {
        next = turn + 1
        waiting.removeValue(forKey: next)?.resume()
    }
}
