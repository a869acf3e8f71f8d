import FoundationEssentials
import GeotriggerCore
import MQTT
import Store
import Synchronization

/// `geotrigger serve`: wires the broker connections, feeds, monitors, store and outboxes
/// together and runs them until SIGTERM/SIGINT (SIGHUP reloads fences and triggers).
enum GatewayServer {
    /// Runs the gateway with the config file `configFile` (nil: defaults); returns the exit status.
    static func run(configFile: String?, logger: Logger = Logger(label: "geotrigger")) async -> Int32 {
        let setup: GatewaySetup
        do {
            setup = try GatewaySetup.load(configFile: configFile)
        } catch {
            for problem in error.problems { logger.error(problem) }
            if let configFile, let config = (try? GatewayConfig.load(file: configFile)) ?? GatewayConfig.failedToStartTarget(file: configFile) {
                await publishFailedToStart(config, problems: error.problems, logger: logger)
            } else if configFile == nil {
                await publishFailedToStart(GatewayConfig(), problems: error.problems, logger: logger)
            }
            return ExitStatus.usage
        }
        do {
            return try await serve(setup, configFile: configFile, logger: logger)
        } catch let error as UsageError {
            logger.error(error.message)
            await publishFailedToStart(setup.config, problems: [error.message], logger: logger)
            return ExitStatus.usage
        } catch {
            logger.error("cannot start: \(error)")
            await publishFailedToStart(setup.config, problems: ["\(error)"], logger: logger)
            return ExitStatus.failure
        }
    }

    private static func serve(_ setup: GatewaySetup, configFile: String?, logger: Logger) async throws -> Int32 {
        let config = setup.config
        let counters = GatewayCounters()
        let warnings = Warnings(logger: logger)
        let store = try await GatewayStore(
            path: config.resolve(config.gateway.database),
            options: GatewayStore.Options(durability: config.gateway.durability == .full ? .full : .normal, outboxCap: config.outbox.cap))
        await StoreFaultHook.apply(to: store, logger: logger)
        let prefix = config.output.prefix
        let statusTopic = "\(prefix)/status/\(config.gateway.id)"
        let will = MQTTConfiguration.Will(topic: statusTopic, payload: StatusReporter.willPayload(), qos: .atLeastOnce, retain: true)

        // Acknowledgements arrive on libmosquitto's thread before the publishers exist to take them.
        let publishersBox = Mutex<[OutboxDestination: OutboxPublisher]>([:])
        let stateBox = Mutex<StatePublisher?>(nil)
        let startedBox = Mutex<(@Sendable () -> Void)?>(nil)
        let shutdownBox = Mutex<(@Sendable (MQTTClient) async -> Void)?>(nil)
        let downBox = Mutex<(@Sendable () async -> Void)?>(nil)
        let local = try BrokerConnection(
            label: "local", configuration: try BrokerConnection.configuration(config, remote: false, will: will),
            warnings: warnings, logger: logger,
            onAcknowledgement: { ack in
                if stateBox.withLock({ $0 })?.acknowledged(ack) == true { return }
                publishersBox.withLock { $0[.local] }?.acknowledged(ack)
            },
            onConnect: { startedBox.withLock { $0 }?() },
            onDown: { await downBox.withLock { $0 }?() },
            onShutdown: { client in await shutdownBox.withLock { $0 }?(client) })
        var remote: BrokerConnection?
        if config.remote != nil {
            remote = try BrokerConnection(
                label: "remote", configuration: try BrokerConnection.configuration(config, remote: true, will: nil),
                warnings: warnings, logger: logger,
                onAcknowledgement: { ack in publishersBox.withLock { $0[.remote] }?.acknowledged(ack) },
                onConnect: { publishersBox.withLock { $0[.remote] }?.connected() })
        }
        var publishers: [OutboxDestination: OutboxPublisher] = [
            .local: OutboxPublisher(destination: .local, client: local.client, store: store, window: config.outbox.inflight,
                                    counters: counters, warnings: warnings, logger: logger, volatileCap: min(config.outbox.cap, 100_000))
        ]
        if let remote {
            publishers[.remote] = OutboxPublisher(destination: .remote, client: remote.client, store: store, window: config.outbox.inflight,
                                                  counters: counters, warnings: warnings, logger: logger, volatileCap: min(config.outbox.cap, 100_000))
        }
        publishersBox.withLock { $0 = publishers }
        let statePublisher = StatePublisher(client: local.client, prefix: prefix, logger: logger)
        stateBox.withLock { $0 = statePublisher }
        let committer = EventCommitter(store: store, counters: counters, warnings: warnings, logger: logger,
                                       publishers: publishers, statePublisher: statePublisher, networkClient: local.client)
        let runtimeFences = await RuntimeFences(setup: setup, client: local.client, store: store, warnings: warnings, logger: logger)
        let context = ServeContext(
            config: config, counters: counters, warnings: warnings, logger: logger, store: store, committer: committer,
            statePublisher: statePublisher,
            eventBuilder: EventBuilder(gatewayID: config.gateway.id, prefix: prefix, qos: config.output.qos, owntracksTransitions: config.output.owntracks),
            runtimeFences: runtimeFences)
        let saved = try await store.deviceStates()
        let pool = MonitorPool(context: context, snapshot: runtimeFences.snapshot, shardCount: max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)),
                               initialStates: saved)
        runtimeFences.attach(pool)
        let queries = QueryService(prefix: prefix, gatewayID: config.gateway.id, client: local.client, pool: pool, store: store,
                                   logger: logger, snapshot: { runtimeFences.snapshot })
        let control = ControlPlane(fences: runtimeFences, queries: queries)
        let networkThreads = [local.client, remote?.client].compactMap { $0 }
        let maintenance = Maintenance(store: store, retentionDays: config.journal.retentionDays, logger: logger,
                                      networkThreads: { networkThreads.map(\.networkThreadID) })
        var feeds: [Ingest.Feed] = []
        var ownEcho: Set<String> = []
        for feed in config.feeds {
            switch feed {
            case .mqtt(let name, let topic, let format, let shard):
                let decoder = LocationDecoder(format: format, topicFilter: try TopicFilter(topic),
                                              maxPayload: config.input.maxPayload, maxFutureSkew: config.input.maxFutureSkew)
                feeds.append(Ingest.Feed(name: name, filter: topic, decoder: decoder, owntracks: format == .owntracks, shard: shard))
            case .gpsd(_, _, _, _, let republish):
                if republish { ownEcho.insert("owntracks/gateway/\(config.gateway.id)") }
            }
        }
        let ingest = Ingest(client: local.client, feeds: feeds, pool: pool, counters: counters, logger: logger, ownEchoTopics: ownEcho,
                            control: control)
        try ingest.subscribe()
        try control.subscribe(local.client)
        let status = StatusReporter(
            client: local.client, topic: statusTopic, interval: config.output.statusInterval, counters: counters, warnings: warnings,
            gauges: { [pool] in
                let c = maintenance.outboxCounts.withLock { $0 }
                return (pool.queueDepth + local.client.inboundDepth + ingest.unreadMessages, pool.deviceCount, c.local, c.remote)
            })

        let localPublisher = publishers[.local]
        // The MQTT feeds' stale clocks pause while the broker is down (DESIGN.md "Timing").
        downBox.withLock { $0 = { await pool.broadcast(.pause(MonotonicClock.now())) } }
        startedBox.withLock {
            $0 = {
                Task { await pool.broadcast(.resume(MonotonicClock.now())) }
                control.connected(local.client)
                status.publish("started")
                statePublisher.republishAll()
                localPublisher?.connected()
            }
        }
        shutdownBox.withLock {
            $0 = { client in
                guard client.isConnected else { return }
                status.publish("stopped")
                // Let the broker take the last status before the clean disconnect.
                try? await Task.sleep(for: .milliseconds(200))
            }
        }

        var services: [any Service] = [local]
        if let remote { services.append(remote) }
        services += publishers.keys.sorted { $0.rawValue < $1.rawValue }.map { publishers[$0]! } as [any Service]
        services += [committer, pool, runtimeFences, queries, maintenance, status, ingest] as [any Service]
        // Last, so stopped first (CONVENTIONS.md: gpsd reader -> monitors drain -> ...).
        services += GPSDFeed.feeds(config, client: local.client, pool: pool, counters: counters, warnings: warnings, logger: logger) as [any Service]

        try local.client.start()
        try remote?.client.start()
        logger.notice("serving", ["gateway.id": config.gateway.id, "fences": "\(setup.layers.reduce(0) { $0 + $1.fences.count })",
                                  "devices.saved": "\(saved.count)", "version": GatewayVersion.current])
        let group = ServiceGroup(services: services, logger: logger) {
            await StoreFaultHook.apply(to: store, logger: logger)
            do {
                let fresh = try GatewaySetup.load(configFile: configFile)
                await runtimeFences.reload(fresh)
                GatewaySetup.releaseFreedMemory()  // the previous fences, now dropped
                warnings.clear("reload", resolved: "fences and triggers reloaded")
                logger.notice("reloaded", ["fences": "\(fresh.layers.reduce(0) { $0 + $1.fences.count })"])
            } catch let error as GatewaySetup.Failure {
                warnings.set("reload", "reload failed, the previous fences and triggers stay: " + error.problems.joined(separator: "; "))
            } catch {
                warnings.set("reload", "reload failed, the previous fences and triggers stay: \(error)")
            }
        }
        do {
            try await group.run()
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        let written = await store.statistics
        logger.notice("stopped", ["store.transactions": "\(written.transactions)", "store.batches": "\(written.batches)",
                                  "store.events": "\(written.events)", "store.writerCheckpoints": "\(written.writerCheckpoints)",
                                  "commits.networkThread": "\(committer.networkThreadCommits.load(ordering: .relaxed))",
                                  "commits.queued": "\(committer.queuedCommits.load(ordering: .relaxed))"])
        return ExitStatus.ok
    }

    /// Tells the broker (if it can be reached within a few seconds) that the gateway failed to
    /// start: a retained `failedToStart` status with the problems as warnings. Uses its own
    /// client id and a clean session, so the gateway's persistent session is left alone.
    static func publishFailedToStart(_ config: GatewayConfig, problems: [String], logger: Logger) async {
        guard var configuration = try? BrokerConnection.configuration(config, remote: false, will: nil) else { return }
        configuration.clientId = config.clientID(remote: false) + "-failed"
        configuration.cleanStart = true
        guard let client = try? MQTTClient(configuration) else { return }
        defer { client.stop() }
        do { try client.start() } catch { return }
        let deadline = MonotonicClock.now() + 3
        while !client.isConnected, MonotonicClock.now() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        guard client.isConnected else { return }
        let payload = payloadBytes(.object([
            "status": .string("failedToStart"), "warnings": .array(problems.map { .string($0) }),
            "since": .string(ISO8601Time.format(WallClock.now(), milliseconds: true)), "version": .string(GatewayVersion.current),
        ]))
        _ = try? client.publish(topic: "\(config.output.prefix)/status/\(config.gateway.id)", payload: payload, qos: .atLeastOnce, retain: true)
        try? await Task.sleep(for: .milliseconds(300))
        logger.notice("published failedToStart to the broker")
    }
}

/// Journal retention, the outbox gauges of the status, and the threads' priorities (see
/// ``ThreadPriorities``), refreshed periodically.
final class Maintenance: Service, Sendable {
    let name = "maintenance"
    let store: GatewayStore
    let retentionDays: Double
    let logger: Logger
    /// The MQTT network threads' ids (nil: not started yet), which keep their priority.
    let networkThreads: @Sendable () -> [Int32?]
    /// The outbox sizes for the status, refreshed a few times a second.
    let outboxCounts = Mutex(OutboxCounts())
    private let stopped = Atomic<Bool>(false)

    init(store: GatewayStore, retentionDays: Double, logger: Logger, networkThreads: @escaping @Sendable () -> [Int32?]) {
        self.store = store
        self.retentionDays = retentionDays
        self.logger = logger
        self.networkThreads = networkThreads
    }

    func run() async throws {
        var nextRetention = 0.0
        var nextPriorities = 0.0
        while !stopped.load(ordering: .relaxed) {
            let counts = await store.outboxCounts
            outboxCounts.withLock { $0 = counts }
            let now = MonotonicClock.now()
            if now >= nextPriorities {
                nextPriorities = now + 2
                // Only once every network thread runs: one not started yet must not be lowered.
                let exempt = networkThreads()
                if !exempt.isEmpty, !exempt.contains(nil) {
                    let lowered = ThreadPriorities.lowerAll(except: exempt.compactMap { $0 })
                    if lowered > 0 { logger.debug("lowered the priority of \(lowered) threads below the MQTT network threads") }
                }
            }
            if now >= nextRetention {
                nextRetention = now + 3600
                do {
                    let removed = try await store.applyRetention(days: retentionDays, now: WallClock.now())
                    if removed > 0 { logger.info("journal retention removed \(removed) events older than \(retentionDays) days") }
                } catch {
                    logger.warning("journal retention failed: \(error)")
                }
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    func shutdown() async { stopped.store(true, ordering: .relaxed) }
}
