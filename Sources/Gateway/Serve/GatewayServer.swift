import FoundationEssentials
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// `geotrigger serve`: the gateway's parts wired together by ``build(_:configFile:logger:)``,
/// which `serve` and the in-process tests call alike, then run until SIGTERM/SIGINT (or
/// ``stop()``); SIGHUP reloads fences and triggers.
///
/// The services start in ``ServiceRole``'s order and stop in the reverse one.
struct GatewayServer: Sendable {
    /// The config and how many fences the start loaded: not the loaded setup itself, whose
    /// fences a SIGHUP reload replaces (kept here, they would stay in memory for good).
    let config: GatewayConfig
    let fenceCount: Int
    let store: GatewayStore
    let counters: GatewayCounters
    let warnings: Warnings
    let local: MQTTClient
    let remote: MQTTClient?
    let publishers: [OutboxDestination: OutboxPublisher]
    let committer: EventCommitter
    let pool: MonitorPool
    /// The file and runtime fences; its `snapshot` is the live one (a reload replaces it).
    let runtimeFences: RuntimeFences
    let localLink: LocalBrokerLink
    let status: StatusReporter
    let group: ServiceGroup
    let logger: Logger

    /// Runs the gateway with the config file `configFile` (nil: defaults); returns the exit status.
    ///
    /// The config is read first; if it is good, the database's ``DatabaseLock`` is taken (held:
    /// the exit status is 1 and nothing is said on the broker), then ``StartupStatusClient`` says `starting` on
    /// the broker while the fences load (never holding the load up), and is gone, its
    /// `starting` acknowledged or abandoned, before the gateway's own client connects and
    /// says `started`. A failed load says `failedToStart` through it.
    static func serve(configFile: String?, logger: Logger = Logger(label: "geotrigger")) async -> Int32 {
        let config: GatewayConfig
        do {
            config = try GatewaySetup.loadConfig(configFile: configFile)
        } catch {
            for problem in error.problems { logger.error(problem) }
            if let configFile, let config = GatewayConfig.failedToStartTarget(file: configFile) {
                await publishFailedToStart(config, problems: error.problems, logger: logger)
            }
            return ExitStatus.usage
        }
        // One `serve` per database, decided before anything is said on the broker: a second one
        // says neither `starting` nor `failedToStart` over the first one's `started`, and never
        // connects a client that could take its session (DatabaseLock).
        let databaseLock: DatabaseLock
        do {
            databaseLock = try DatabaseLock(database: config.resolve(config.gateway.database))
        } catch {
            logger.error(error.description)
            if case .unusable = error { await publishFailedToStart(config, problems: [error.description], logger: logger) }
            return ExitStatus.failure
        }
        defer { withExtendedLifetime(databaseLock) {} }
        let startup = StartupStatusClient.begin(config, logger: logger)
        var setup: GatewaySetup?
        do {
            setup = try GatewaySetup.load(config: config, progress: FenceLoadProgress(logger: logger))
        } catch {
            for problem in error.problems { logger.error(problem) }
            if let startup {
                await startup.finishFailed(problems: error.problems)
            } else {
                await publishFailedToStart(config, problems: error.problems, logger: logger)
            }
            return ExitStatus.usage
        }
        await startup?.finishBeforeStart()
        // Taken from here on: a SIGTERM while the gateway starts stops it in order once it runs.
        let signals = SignalStream.gateway()
        do {
            // The setup is let go once built: a reload's fences replace it, and kept it would hold the start's for good.
            let server = try await build(setup.take()!, configFile: configFile, logger: logger, signals: signals)
            try await server.run()
            return ExitStatus.ok
        } catch let error as UsageError {
            logger.error(error.message)
            await publishFailedToStart(config, problems: [error.message], logger: logger)
            return ExitStatus.usage
        } catch {
            logger.error("cannot start", ["error": "\(error)"])
            await publishFailedToStart(config, problems: ["\(error)"], logger: logger)
            return ExitStatus.failure
        }
    }

    /// Builds every part of the gateway for `setup` (opening its database and subscribing its
    /// clients, which are not started yet). `configFile` is read again on SIGHUP. `ownsProcess`:
    /// the gateway is the whole process (`serve`), so it puts the process's other threads
    /// below its network threads (``NetworkThreadPriority``); false in a test's process.
    static func build(_ setup: GatewaySetup, configFile: String?, logger: Logger, ownsProcess: Bool = true,
                      signals: SignalStream? = nil) async throws -> GatewayServer {
        let config = setup.config
        let counters = GatewayCounters()
        let warnings = Warnings(logger: logger)
        let store = try await GatewayStore(
            path: config.resolve(config.gateway.database),
            options: GatewayStore.Options(durability: config.gateway.durability == .full ? .full : .normal, outboxCap: config.outbox.cap))
        let prefix = config.output.prefix
        let statusTopic = "\(prefix)/status/\(config.gateway.id)"
        let will = MQTTConfiguration.Will(topic: statusTopic, payload: StatusReporter.willPayload(), qos: .atLeastOnce, retain: true)
        let local = try MQTTClient(try BrokerConnection.configuration(config, remote: false, will: will))
        let remote = try config.remote.map { _ in try MQTTClient(try BrokerConnection.configuration(config, remote: true, will: nil)) }

        var publishers: [OutboxDestination: OutboxPublisher] = [:]
        for (destination, client) in [(OutboxDestination.local, local), (.remote, remote)] {
            guard let client else { continue }
            publishers[destination] = OutboxPublisher(
                destination: destination, client: client, store: store, window: config.outbox.inflight, counters: counters,
                warnings: warnings, logger: logger, volatileCap: min(config.outbox.cap, 100_000))
        }
        let statePublisher = StatePublisher(
            client: local, prefix: prefix, logger: logger,
            discovery: config.homeassistant.discovery ? HomeAssistantDiscovery(config: config) : nil, occupancy: config.output.occupancy)
        let spill = SpillFile(path: SpillFile.path(forDatabase: config.resolve(config.gateway.database)))
        let spilled = await applySpill(spill, to: store, warnings: warnings, logger: logger)
        let retention = JournalRetention(store: store, days: config.journal.retentionDays, maxRows: config.journal.maxRows, logger: logger)
        let committer = EventCommitter(store: store, counters: counters, warnings: warnings, logger: logger,
                                       publishers: publishers, statePublisher: statePublisher, spill: spill, retry: spilled,
                                       interval: config.gateway.commitInterval, journalGrew: { retention.journalGrew() })
        let (snapshots, adoptions) = AsyncStream.makeStream(of: EngineSnapshot.self)
        let runtimeFences = await RuntimeFences(setup: setup, client: local, store: store, warnings: warnings, logger: logger,
                                                adoptions: adoptions, snapshotChanged: { statePublisher.occupancyChanged.poke() })
        let (questions, askShards) = AsyncStream.makeStream(of: DeviceShard.DeviceQuestion.self)
        let expectations = await Expectations(config: config, client: local, store: store, committer: committer, warnings: warnings,
                                              logger: logger, snapshot: { runtimeFences.snapshot }, questions: askShards)
        let (tripOrders, orderTrips) = AsyncStream.makeStream(of: TripOrder.self)
        let trips = await Trips(
            config: config, client: local, store: store, committer: committer, warnings: warnings, logger: logger,
            snapshot: { runtimeFences.snapshot }, orders: orderTrips,
            fenceBytes: { runtimeFences.heldBytes.load(ordering: .relaxed) },
            tripBytes: { runtimeFences.tripBytes.store($0, ordering: .relaxed) }, statePublisher: statePublisher)
        let context = ServeContext(
            config: config, counters: counters, warnings: warnings, logger: logger, store: store, committer: committer,
            statePublisher: statePublisher,
            eventBuilder: EventBuilder(gatewayID: config.gateway.id, prefix: prefix, qos: config.output.qos, owntracksTransitions: config.output.owntracks),
            runtimeFences: runtimeFences, expectations: expectations, trips: trips)
        // States take the journal's events they did not write themselves (a kill -9 left them
        // there) before any is read.
        await store.setStateFold(JournalFold.fold)
        let folded = try await store.foldJournal()
        if folded.devices > 0 {
            logger.info("device states took the journal's later events", ["events": "\(folded.events)", "devices": "\(folded.devices)"])
        }
        var saved = try await store.deviceStates()
        for change in spilled.stateChanges { saved[change.device] = change.state }
        let running = try await store.runningClock()
        let pool = MonitorPool(context: context, snapshot: runtimeFences.snapshot, snapshots: snapshots, questions: questions,
                               tripOrders: tripOrders, trips: trips.takeRestored(),
                               shardCount: max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)), initialStates: saved,
                               clock: RunningClock(carried: running.seconds), lastReports: running.lastReports)
        let queries = QueryService(prefix: prefix, gatewayID: config.gateway.id, client: local, pool: pool, store: store,
                                   logger: logger, snapshot: { runtimeFences.snapshot }, expectations: expectations)
        let control = ControlPlane(client: local, fences: runtimeFences, queries: queries, counters: counters, expectations: expectations,
                                   trips: trips)

        var feeds: [LocalBrokerLink.Feed] = []
        var ownEcho: Set<String> = []
        for feed in config.feeds {
            switch feed {
            case .mqtt(let name, let topic, let format, let shard, let userLevel):
                let decoder = LocationDecoder(format: format, topicFilter: try TopicFilter(topic),
                                              maxPayload: config.input.maxPayload, maxFutureSkew: config.input.maxFutureSkew,
                                              maxAccuracy: config.input.maxAccuracy)
                feeds.append(LocalBrokerLink.Feed(name: name, filter: topic, decoder: decoder, owntracks: format == .owntracks,
                                               owntracksTopics: format == .owntracks ? OwnTracksTopics(filter: decoder.topicFilter) : nil,
                                               shard: shard, userLevel: userLevel ?? (format == .owntracks ? 1 : 0)))
            case .gpsd(_, _, _, _, let republish):
                if republish { ownEcho.insert(GPSDFeed.ownTopic(gatewayID: config.gateway.id)) }
            }
        }
        let metricsFile = config.output.metricsFile.map { MetricsFile(path: config.resolve($0), warnings: warnings) }
        let status = StatusReporter(client: local, remote: remote, topic: statusTopic, interval: config.output.statusInterval, store: store,
                                    counters: counters, warnings: warnings, metricsFile: metricsFile) {
            (pool.queueDepth + local.inboundDepth + counters.unreadFeedMessages(unreadBytes: local.unreadBytes), pool.deviceCount)
        }
        // At the stop, the events in flight get a moment to be acknowledged (the rest are sent
        // again at the next start); then `stopped` goes last, at QoS 0, written at once (a QoS 1
        // message would wait for a slot of the broker's receive maximum behind the events, and
        // the DISCONNECT would drop it).
        let localConnection = BrokerConnection(
            label: "local", client: local, warnings: warnings, logger: logger,
            beforeStop: { [publishers] client in
                if client.isConnected { await publishers[.local]?.waitForAcknowledgements(within: 1) }
            },
            lastMessage: { status.publish("stopped", qos: .atMostOnce) })
        let localLink = LocalBrokerLink(
            connection: localConnection, feeds: feeds, pool: pool, committer: committer, statePublisher: statePublisher,
            outbox: publishers[.local], control: control, status: status, counters: counters, logger: logger, ownEchoTopics: ownEcho)
        try localLink.install(phoneEvents: runtimeFences.snapshot.pushesPhoneRegions)
        try control.subscribe()
        // Added by role; the group gets them in ``ServiceRole``'s order (why that order: there).
        var services = ServiceList()
        if let remote, let outbox = publishers[.remote] {
            let connection = BrokerConnection(label: "remote", client: remote, warnings: warnings, logger: logger)
            remote.setDelegate(UpstreamLink(connection: connection, outbox: outbox))
            services.add(.remoteConnection, connection)
        }
        if let outbox = publishers[.local] { services.add(.localOutbox, outbox) }
        if let outbox = publishers[.remote] { services.add(.remoteOutbox, outbox) }
        services.add(.committer, committer)
        services.add(.monitors, pool)
        services.add(.runtimeFences, runtimeFences)
        services.add(.expectations, expectations)
        services.add(.trips, trips)
        services.add(.queries, queries)
        services.add(.control, control)
        services.add(.localConnection, localConnection)
        services.add(.journalRetention, retention)
        if ownsProcess { services.add(.threadPriorities, NetworkThreadPriority(clients: [local, remote].compactMap { $0 }, logger: logger)) }
        if config.output.occupancy { services.add(.occupancy, OccupancyPublisher(states: statePublisher, snapshot: { runtimeFences.snapshot })) }
        services.add(.status, status)
        for feed in GPSDFeed.feeds(config, client: local, pool: pool, counters: counters, warnings: warnings, logger: logger) {
            services.add(.gpsdFeeds, feed)
        }

        let group = ServiceGroup(services: services.inStartOrder, logger: logger, signals: signals) {
            do {
                // The fences unchanged keep the live snapshot's prepared form as they are read:
                // a million of them are never prepared (and held) twice.
                var fresh: GatewaySetup? = try GatewaySetup.load(
                    configFile: configFile, progress: FenceLoadProgress(logger: logger), reusing: runtimeFences.snapshot)
                let (layers, triggers) = (fresh!.layers, fresh!.config.triggers)
                let phones = fresh!.snapshot.pushesPhoneRegions
                // The check's own snapshot goes before the runtime fences build theirs: with the
                // old one still serving, a third would take ~110 bytes per fence more.
                fresh = nil
                // A stop came while the fences loaded: the previous ones stay, and nothing changes.
                guard !Task.isCancelled else { throw CancellationError() }
                // All or nothing: the phones' transitions are subscribed before the new
                // triggers apply (a refusal leaves the old ones), and let go after.
                if phones { try localLink.readPhoneEvents(true) }
                // The previous fences' memory goes back to the system once every shard has let go of them.
                pool.releaseMemoryAfterNextAdoption()
                await runtimeFences.reload(layers: layers, triggers: triggers)
                if !phones {
                    do { try localLink.readPhoneEvents(false) } catch {
                        logger.warning("could not stop reading the phones' transitions", ["error": "\(error)"])
                    }
                }
                warnings.clear("reload", resolved: "fences and triggers reloaded")
                logger.notice("reloaded", ["fences": "\(layers.reduce(0) { $0 + $1.fenceCount })"])
            } catch where Task.isCancelled {
                logger.notice("reload cancelled by the stop; the previous fences and triggers stay")
            } catch let error as GatewaySetup.Failure {
                warnings.set("reload", "reload failed, the previous fences and triggers stay: " + error.problems.joined(separator: "; "))
            } catch {
                warnings.set("reload", "reload failed, the previous fences and triggers stay: \(error)")
            }
        }
        return GatewayServer(
            config: config, fenceCount: setup.layers.reduce(0) { $0 + $1.fenceCount }, store: store, counters: counters, warnings: warnings, local: local, remote: remote,
            publishers: publishers, committer: committer, pool: pool, runtimeFences: runtimeFences, localLink: localLink, status: status, group: group, logger: logger)
    }

    /// Commits what a run killed during a database fault left in its spill file (docs/configuration.md
    /// "Durability"), and removes the file. Returns what the database refused again: the
    /// committer retries it, and the monitors start from its states. A file that is not the
    /// gateway's own (``SpillFile``) is the `spill` warning, and left as it is.
    static func applySpill(_ spill: SpillFile, to store: some CommitStore, warnings: Warnings, logger: Logger) async -> StoreBatch {
        let found: (batch: StoreBatch, unreadable: Int)?
        do {
            found = try spill.read()
        } catch {
            warnings.set("spill", "the spill file left by the last run is not applied: \(error)")
            return StoreBatch()
        }
        guard let (read, unreadable) = found else { return StoreBatch() }
        var batch = read
        // A run killed after the commit that took them, before the file's removal, leaves
        // events the journal holds already: the store skips those.
        batch.eventsMayRepeat = true
        if unreadable > 0 { logger.warning("lines of the spill file could not be read (cut by a kill)", ["file": spill.path, "lines": "\(unreadable)"]) }
        do {
            _ = try await store.commit(batch)
            spill.remove()
            logger.notice("committed what the database refused before the last stop", [
                "file": spill.path, "states": "\(batch.stateChanges.count)", "events": "\(batch.events.count)"])
            return StoreBatch()
        } catch {
            warnings.set("database", "the database \(store.path) refuses what the last run kept in \(spill.path) (\(error)); retried every second")
            return batch
        }
    }

    /// Starts the clients, runs every service until a termination signal or ``stop()``, then
    /// closes the database.
    func run() async throws {
        try local.start()
        try remote?.start()
        logger.notice("serving", ["gateway.id": config.gateway.id, "fences": "\(fenceCount)",
                                  "devices.saved": "\(pool.savedCount)", "version": GatewayVersion.current])
        do {
            try await group.run()
        } catch {
            await status.writeFinalMetrics()
            await store.close()
            throw error
        }
        await status.writeFinalMetrics()
        await store.close()
        let written = await store.statistics
        logger.notice("stopped", ["updates.received": "\(counters.received.load(ordering: .relaxed))",
                                  "updates.accepted": "\(counters.accepted.load(ordering: .relaxed))",
                                  "store.transactions": "\(written.transactions)",
                                  "store.events": "\(written.events)", "store.writerCheckpoints": "\(written.writerCheckpoints)",
                                  "commits.networkThread": "\(committer.networkThreadCommits.load(ordering: .relaxed))",
                                  "commits.queued": "\(committer.queuedCommits.load(ordering: .relaxed))"])
    }

    /// Shuts the gateway down as SIGTERM does (for in-process runs).
    func stop() { group.stop() }

    /// Tells the broker (if it can be reached within a few seconds) that the gateway failed to
    /// start: a retained `failedToStart` status with the problems as warnings.
    ///
    /// It never touches the gateway's persistent session, which holds the updates queued while
    /// the gateway is down: its own client id, a clean session that expires at once, and, with
    /// `broker.username`, its own user name, `USERNAME-failed` (same password file): a broker
    /// that binds client ids to user names (the shipped `use_username_as_clientid`) would
    /// otherwise give it the gateway's id and clean the session. A broker that does not know
    /// that user refuses it, and the status is only logged.
    static func publishFailedToStart(_ config: GatewayConfig, problems: [String], logger: Logger) async {
        guard let configuration = try? failedToStartConfiguration(config) else { return }
        // Connected, and the status's PUBACK (its message id, then whether it came).
        let changes = Changes()
        let published = Mutex<(id: Int32?, acknowledged: Bool)>((nil, false))
        guard let client = try? MQTTClient(configuration, onConnectionEvent: { _ in changes.changed() }, onAcknowledgement: { ack in
            published.withLock { if ack.messageId == $0.id { $0.acknowledged = true } }
            changes.changed()
        }) else { return }
        defer { client.stop() }
        do { try client.start() } catch { return }
        _ = await changes.wait(until: { client.isConnected }, by: MonotonicClock.now() + 3)
        guard client.isConnected else {
            logger.notice("could not publish failedToStart: the broker is unreachable or refused the client",
                          ["mqtt.clientId": configuration.clientId ?? "", "mqtt.username": configuration.username ?? ""])
            return
        }
        let payload = StartupStatusClient.payload("failedToStart", problems: problems)
        // On the network thread, so the id is recorded before its PUBACK can be read.
        client.perform {
            let id = try? client.publish(topic: "\(config.output.prefix)/status/\(config.gateway.id)", payload: payload, qos: .atLeastOnce, retain: true)
            published.withLock { $0.id = id }
        }
        guard await changes.wait(until: { published.withLock { $0.acknowledged } }, by: MonotonicClock.now() + 2) else {
            logger.notice("the broker did not acknowledge failedToStart within 2 s")
            return
        }
        logger.notice("published failedToStart to the broker")
    }

    /// The connection of ``publishFailedToStart(_:problems:logger:)``: the gateway's broker
    /// settings with a client id and a user name of its own and a session that ends with it.
    static func failedToStartConfiguration(_ config: GatewayConfig) throws -> MQTTConfiguration {
        var configuration = try BrokerConnection.configuration(config, remote: false, will: nil)
        configuration.clientId = config.clientID(remote: false) + "-failed"
        configuration.cleanStart = true
        configuration.sessionExpiry = 0
        if let username = configuration.username { configuration.username = username + "-failed" }
        return configuration
    }
}
