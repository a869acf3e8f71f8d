import FoundationEssentials
import MQTT

/// One broker connection as a service: builds the libmosquitto client from the config,
/// reacts to its connection events (log once per change, status warnings, `started` and the
/// retained device states on every connect) and, last at shutdown, says `stopped` and disconnects.
final class BrokerConnection: Service, Sendable {
    let name: String
    let client: MQTTClient
    let warnings: Warnings
    let logger: Logger
    let label: String
    private let onConnect: @Sendable () -> Void
    private let onDown: @Sendable () async -> Void
    private let onShutdown: @Sendable (MQTTClient) async -> Void

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
        return MQTTConfiguration(
            host: first.host, port: first.port, hosts: hosts, clientId: config.clientID(remote: remote),
            protocolVersion: b.protocol == .v5 ? .v5 : .v311, sessionExpiry: UInt32(b.sessionExpiry),
            cleanStart: false, username: b.username, password: password,
            tls: b.tls.map { MQTTConfiguration.TLS(ca: config.resolve($0.ca), cert: $0.cert.map(config.resolve), key: $0.key.map(config.resolve)) },
            keepalive: b.keepalive, will: will, inflightWindow: min(config.outbox.inflight, 65535),
            inboundCapacity: 1024)
    }

    init(
        label: String, configuration: MQTTConfiguration, warnings: Warnings, logger: Logger,
        onAcknowledgement: @escaping @Sendable (MQTTAcknowledgement) -> Void,
        onConnect: @escaping @Sendable () -> Void,
        onDown: @escaping @Sendable () async -> Void = {},
        onShutdown: @escaping @Sendable (MQTTClient) async -> Void = { _ in }
    ) throws {
        self.onDown = onDown
        self.name = "mqtt-\(label)"
        self.label = label
        self.warnings = warnings
        self.logger = logger
        self.onConnect = onConnect
        self.onShutdown = onShutdown
        self.client = try MQTTClient(configuration, onAcknowledgement: onAcknowledgement)
    }

    /// Follows the connection: `onConnect` on every connect, `onDown` once when a connection
    /// is lost or the first attempts fail (so stale clocks pause while the feed is down).
    func run() async throws {
        var down = false
        for await event in client.connectionEvents {
            // With `hosts`, each attempt goes to the next address: name the one of this event.
            let where_ = client.endpoint.description
            switch event {
            case .refused, .connectFailed, .disconnected(code: 1..., reason: _):
                if !down {
                    down = true
                    await onDown()
                }
            default: break
            }
            switch event {
            case .connected(let sessionPresent):
                down = false
                warnings.clear("mqtt-\(label)", resolved: "connected to the \(label) broker at \(where_)")
                logger.info("connected", ["broker": where_, "session.present": "\(sessionPresent)"])
                onConnect()
            case .refused(let code, let reason):
                // CONNACK 4/5 (v3.1.1) and 0x86/0x87 (v5): bad credentials or not authorized.
                let section = label == "remote" ? "remote" : "broker"
                let hint = [4, 5, 0x86, 0x87].contains(code) ? "; check \(section).username and \(section).passwordFile" : ""
                warnings.set("mqtt-\(label)", "the \(label) broker at \(where_) refused the connection: \(reason) (code \(code))\(hint); retrying with backoff")
            case .connectFailed(let error):
                warnings.set("mqtt-\(label)", "cannot connect to the \(label) broker at \(where_): \(error); retrying with backoff")
            case .disconnected(let code, let reason):
                if code != 0 { warnings.set("mqtt-\(label)", "lost the \(label) broker at \(where_): \(reason); reconnecting") }
            case .subscribed(let filters, let codes):
                for (filter, code) in zip(filters, codes) where code >= 0x80 {
                    warnings.set("subscribe-\(filter)", "the \(label) broker refused the subscription to \(filter) (reason 0x\(String(code, radix: 16)))")
                }
            case .reconnecting(let delay):
                // The fault itself is a warning logged once; each retry only at debug level.
                let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                logger.debug("next connection attempt to the \(label) broker at \(where_) in \(seconds) s")
            }
        }
    }

    func shutdown() async {
        await onShutdown(client)
        client.stop()
    }
}
