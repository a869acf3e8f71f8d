import FoundationEssentials
import MQTT
import Synchronization

/// One broker connection: builds the libmosquitto client's settings from the config, turns
/// its connection events into log lines (once per change) and status warnings for the
/// client's delegate (``LocalBrokerLink``, ``UpstreamLink``), and, last at shutdown, runs
/// `beforeStop` (the main broker's events in flight get a moment to be acknowledged) and
/// disconnects after `lastMessage` (its `stopped` status).
final class BrokerConnection: Service, Sendable {
    /// What a connection event changed for the gateway.
    enum Change {
        /// Connected (again): publish `started`, retained states, what waits.
        case up
        /// Lost, or the first attempts failed: the feeds' clocks pause (reported once).
        case down
    }

    let name: String
    let client: MQTTClient
    let warnings: Warnings
    let logger: Logger
    let label: String
    private let beforeStop: @Sendable (MQTTClient) async -> Void
    private let lastMessage: (@Sendable () -> Void)?
    /// Down since the last connect (a loss is reported once).
    private let down = Atomic<Bool>(false)
    /// Fired by ``shutdown()``: ``run()`` returns then.
    private let stopped = StopSignal()

    /// The largest payload the gateway takes from its broker: a feed update up to
    /// `input.maxPayload`, a control message (a runtime fence) up to 1 MiB.
    static func payloadLimit(_ config: GatewayConfig) -> Int {
        max(config.input.maxPayload, GatewayConfig.Runtime.maxPayload)
    }

    /// The v5 Maximum Packet Size the gateway announces: ``payloadLimit(_:)`` plus what a
    /// PUBLISH carries besides its payload: the fixed header (at most 5 bytes), the topic (at
    /// most 65,535 bytes and its 2-byte length), the packet id and the v5 properties (a query's
    /// response topic and correlation data), allowed 4 KiB.
    /// The payload bytes of control messages that wait for the control plane before the
    /// network thread stops reading (``MQTTConfiguration/inboundBytes``).
    static let inboundBytes = 4 << 20

    static func maximumPacketSize(_ config: GatewayConfig) -> UInt32 {
        UInt32(clamping: payloadLimit(config) + 5 + 2 + 65_535 + 2 + 4_096)
    }

    /// The libmosquitto settings of `broker` (`remote: true` for the upstream).
    static func configuration(_ config: GatewayConfig, remote: Bool, will: MQTTConfiguration.Will?) throws -> MQTTConfiguration {
        let b = remote ? config.remote! : config.broker
        var password: String?
        if let file = b.passwordFile {
            let path = config.resolve(file)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UsageError("\(remote ? "remote" : "broker").passwordFile: cannot read \(path)")
            }
            password = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        // `hosts` was validated as "host:port" strings when the config was loaded.
        let hosts = b.hosts.map { entry in
            let colon = entry.lastIndex(of: ":")!
            return MQTTConfiguration.Endpoint(host: String(entry[..<colon]), port: Int(entry[entry.index(after: colon)...])!)
        }
        let first = hosts.first ?? MQTTConfiguration.Endpoint(host: b.host, port: b.port)
        var configuration = MQTTConfiguration(
            host: first.host, port: first.port, hosts: hosts, clientId: config.clientID(remote: remote),
            protocolVersion: b.protocol == .v5 ? .v5 : .v311, sessionExpiry: UInt32(b.sessionExpiry),
            cleanStart: false, username: b.username, password: password,
            tls: b.tls.map { MQTTConfiguration.TLS(ca: config.resolve($0.ca), cert: $0.cert.map(config.resolve), key: $0.key.map(config.resolve)) },
            keepalive: b.keepalive, will: will, inflightWindow: min(config.outbox.inflight, 65535),
            inboundCapacity: 1024)
        // The upstream only receives acknowledgements, but announcing the limit there too
        // costs nothing and bounds what a misconfigured upstream could send.
        configuration.maximumPacketSize = maximumPacketSize(config)
        // Only control messages wait in the client's queue (feed updates are taken on the
        // network thread): at a connect the broker sends every retained runtime fence, up to
        // 1 MiB each and as many as dispatchers (or junk) left there. Read them a few MiB at a
        // time, not 1,024 of them at once (docs/limits.md).
        configuration.inboundBytes = inboundBytes
        return configuration
    }

    /// `client` (made from ``configuration(_:remote:will:)``) as the `label` broker ("local" or
    /// "remote"); at shutdown `beforeStop` runs while it still reads, `lastMessage` once it
    /// stopped reading, before the DISCONNECT (``MQTTClient/stop(last:)``).
    init(label: String, client: MQTTClient, warnings: Warnings, logger: Logger,
         beforeStop: @escaping @Sendable (MQTTClient) async -> Void = { _ in }, lastMessage: (@Sendable () -> Void)? = nil) {
        self.name = "mqtt-\(label)"
        self.label = label
        self.client = client
        self.warnings = warnings
        self.logger = logger
        self.beforeStop = beforeStop
        self.lastMessage = lastMessage
    }

    /// Logs `event` and keeps the status warnings; returns what it changed. On the network
    /// thread (the delegate's ``MQTTClientDelegate/handle(_:)``).
    func record(_ event: MQTTConnectionEvent) -> Change? {
        // With `hosts`, each attempt goes to the next address: name the one of this event.
        let endpoint = client.endpoint.description
        var change: Change?
        switch event {
        case .refused, .connectFailed, .disconnected(code: 1..., reason: _):
            if !down.exchange(true, ordering: .relaxed) { change = .down }
        default: break
        }
        switch event {
        case .connected(let sessionPresent):
            down.store(false, ordering: .relaxed)
            warnings.clear("mqtt-\(label)", resolved: "connected to the \(label) broker at \(endpoint)")
            logger.info("connected", ["broker": endpoint, "session.present": "\(sessionPresent)"])
            change = .up
        case .refused(let code, let reason):
            // CONNACK 4/5 (v3.1.1) and 0x86/0x87 (v5): bad credentials or not authorized.
            let section = label == "remote" ? "remote" : "broker"
            let hint = [4, 5, 0x86, 0x87].contains(code) ? "; check \(section).username and \(section).passwordFile" : ""
            warnings.set("mqtt-\(label)", "the \(label) broker at \(endpoint) refused the connection: \(reason) (code \(code))\(hint); retrying with backoff")
        case .connectFailed(let error):
            warnings.set("mqtt-\(label)", "cannot connect to the \(label) broker at \(endpoint): \(error); retrying with backoff")
        case .disconnected(let code, let reason):
            if code != 0 { warnings.set("mqtt-\(label)", "lost the \(label) broker at \(endpoint): \(reason); reconnecting") }
        case .subscribed(let filters, let codes):
            for (filter, code) in zip(filters, codes) where code >= 0x80 {
                warnings.set("subscribe-\(filter)", "the \(label) broker refused the subscription to \(filter) (reason 0x\(String(code, radix: 16)))")
            }
        case .reconnecting(let delay):
            // The fault itself is a warning logged once; each retry only at debug level.
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            logger.debug("next connection attempt", ["broker": label, "endpoint": "\(endpoint)", "delay.seconds": "\(seconds)"])
        }
        return change
    }

    /// The connection runs on the client's network thread: this only waits for ``shutdown()``.
    func run() async throws {
        await stopped.wait()
    }

    func shutdown() async {
        await beforeStop(client)
        client.stop(last: lastMessage)
        stopped.fire()
    }
}
