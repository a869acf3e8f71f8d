import FoundationEssentials
import GeotriggerCore
import MQTT
import Synchronization

/// The status of a start that is not the gateway's own client's to tell: `starting` while
/// `serve` loads its fences, `failedToStart` when that load fails (a config that does not
/// load, or a gateway that cannot be built after a good load, is reported by
/// ``GatewayServer/publishFailedToStart(_:problems:logger:)``, on a connection of the same
/// kind). Its connection is ``GatewayServer/failedToStartConfiguration(_:)``'s side client
/// (client id `CLIENTID-failed`, with `broker.username` the user `USERNAME-failed`, clean
/// session that expires with it), so a start never touches the gateway's session; its will is
/// the gateway's `offline`, so a start killed during the load does not leave `starting` behind.
///
/// ``begin(_:logger:)`` starts connecting and returns at once: `starting` is published from
/// the client's network thread as soon as the broker accepts it, while the fences load on the
/// caller's thread, which never waits for the broker. Then one of:
/// - ``finishBeforeStart(within:)`` after a good load: waits (bounded) until the broker
///   acknowledged `starting` or the client gave up, and disconnects, before the gateway's own
///   client connects and says `started` (so a late `starting` can never overwrite it);
/// - ``finishFailed(problems:)`` after a failed one: `failedToStart` on the same connection,
///   after the `starting` it may have sent.
final class StartupStatusClient: Sendable {
    /// What the network thread and `serve` share.
    private struct State {
        var client: MQTTClient?
        var connected = false
        /// Why the last connection attempt failed or the connection was lost (nil: none did).
        var trouble: String?
        /// Whether `starting` was decided (on the first connect), its message id once
        /// published, and whether the broker acknowledged it.
        var startingSent = false
        var startingID: Int32?
        var startingAcknowledged = false
        /// `failedToStart`'s message id once published, and whether the broker acknowledged it.
        var failedID: Int32?
        var failedAcknowledged = false
        /// Set when `serve` decided: a connection that comes after publishes nothing.
        var closing = false
    }

    let topic: String
    let configuration: MQTTConfiguration
    let logger: Logger
    private let startingPayload: [UInt8]
    private let state = Mutex(State())
    /// Told of every change of `state` from the network thread, for the waits of `serve`.
    private let changes = Changes()

    /// The side client of `config` connecting in the background, or nil (logged) when it
    /// cannot be made (its broker settings are refused; the start goes on and reports what is
    /// wrong when it builds the gateway's own client).
    static func begin(_ config: GatewayConfig, logger: Logger) -> StartupStatusClient? {
        do {
            var configuration = try GatewayServer.failedToStartConfiguration(config)
            let topic = "\(config.output.prefix)/status/\(config.gateway.id)"
            configuration.will = MQTTConfiguration.Will(topic: topic, payload: StatusReporter.willPayload(), qos: .atLeastOnce, retain: true)
            let status = try StartupStatusClient(configuration: configuration, topic: topic, logger: logger)
            let client = status.state.withLock { $0.client }
            try client?.start()
            return status
        } catch {
            logger.notice("cannot publish starting", ["error": "\(error)"])
            return nil
        }
    }

    private init(configuration: MQTTConfiguration, topic: String, logger: Logger) throws {
        self.topic = topic
        self.configuration = configuration
        self.logger = logger
        self.startingPayload = Self.payload("starting")
        // The handlers hold this object weakly: the client is this object's, not the reverse.
        let client = try MQTTClient(
            configuration,
            onConnectionEvent: { [weak self] event in self?.record(event) },
            onAcknowledgement: { [weak self] acknowledgement in self?.record(acknowledgement) })
        state.withLock { $0.client = client }
    }

    /// The payload of a start's status: `status` with `problems` as its warnings, `since` now,
    /// the version (the gateway's own statuses add the counters).
    static func payload(_ status: String, problems: [String] = []) -> [UInt8] {
        JSONValue.object([
            "status": .string(status), "warnings": .array(problems.map { .string($0) }),
            "since": .string(ISO8601Time.format(WallClock.now(), milliseconds: true)), "version": .string(GatewayVersion.current),
        ]).serializedBytes()
    }

    /// A connection event, on the network thread: once connected, `starting` goes out (once,
    /// unless `serve` has already decided). Published with the lock released (no libmosquitto
    /// call under a Swift lock) and on the network thread, where its PUBACK is read, so its id
    /// is recorded before the answer, and a `failedToStart` (published there too, through
    /// ``MQTTClient/perform(_:)``) cannot come between the decision and the publish.
    private func record(_ event: MQTTConnectionEvent) {
        let publishing: MQTTClient? = state.withLock { state in
            switch event {
            case .connected:
                state.connected = true
                state.trouble = nil
                guard !state.closing, !state.startingSent else { return nil }
                state.startingSent = true
                return state.client
            case .refused(let code, let reason):
                state.trouble = "the broker refused the client: \(reason) (code \(code))"
            case .connectFailed(let error):
                state.trouble = "the broker is unreachable: \(error)"
            case .disconnected(let code, let reason):
                state.connected = false
                if code != 0 { state.trouble = "the connection was lost: \(reason)" }
            case .reconnecting, .subscribed:
                break
            }
            return nil
        }
        defer { changes.changed() }
        guard let client = publishing else { return }
        let id = try? client.publish(topic: topic, payload: startingPayload, qos: .atLeastOnce, retain: true)
        state.withLock { state in
            state.startingID = id
            if id == nil { state.trouble = "the client could not publish it" }
        }
    }

    /// An acknowledgement, on the network thread.
    private func record(_ acknowledgement: MQTTAcknowledgement) {
        let starting = state.withLock { state in
            if acknowledgement.messageId == state.startingID {
                state.startingAcknowledged = true
                return true
            }
            if acknowledgement.messageId == state.failedID { state.failedAcknowledged = true }
            return false
        }
        changes.changed()
        if starting {
            if acknowledgement.isSuccess {
                logger.info("published starting to the broker")
            } else {
                logger.notice("the broker refused starting", ["reason": acknowledgement.reason, "mqtt.username": configuration.username ?? ""])
            }
        }
    }

    /// After a good load: waits at most `bound` until the broker acknowledged `starting`, or
    /// the client gave up (a connection attempt failed, it lost the connection, or it could
    /// not publish), then
    /// disconnects (from here on it publishes nothing), so the gateway's own client can say
    /// `started` last.
    func finishBeforeStart(within bound: Duration = .seconds(2)) async {
        let seconds = Double(bound.components.seconds) + Double(bound.components.attoseconds) / 1e18
        _ = await changes.wait(until: {
            state.withLock { state in
                state.startingAcknowledged || (state.trouble != nil && (!state.connected || state.startingID == nil))
            }
        }, by: MonotonicClock.now() + seconds)
        let (acknowledged, trouble) = state.withLock { state in
            state.closing = true
            return (state.startingAcknowledged, state.trouble)
        }
        stop()
        if !acknowledged {
            logger.notice("could not publish starting: " + (trouble ?? "no answer from the broker within \(bound)"),
                          ["mqtt.clientId": configuration.clientId ?? "", "mqtt.username": configuration.username ?? ""])
        }
    }

    /// After a failed load: publishes the retained `failedToStart` with `problems` on this
    /// client (waiting for its connection as long as
    /// ``GatewayServer/publishFailedToStart(_:problems:logger:)`` would, 3 s), after the
    /// `starting` it may have sent, then disconnects.
    func finishFailed(problems: [String]) async {
        _ = await changes.wait(until: { state.withLock { $0.connected } }, by: MonotonicClock.now() + 3)
        let payload = Self.payload("failedToStart", problems: problems)
        // On the network thread, as `starting` (so after it, if it went out); right here when
        // no connection loop runs, and then it is not connected and publishes nothing.
        let published = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            guard let client = state.withLock({ $0.client }) else { return continuation.resume(returning: false) }
            client.perform { [self] in
                let connected = state.withLock { state in
                    state.closing = true
                    return state.connected
                }
                let id = connected ? try? client.publish(topic: topic, payload: payload, qos: .atLeastOnce, retain: true) : nil
                state.withLock { $0.failedID = id }
                continuation.resume(returning: id != nil)
            }
        }
        guard published else {
            stop()
            logger.notice("could not publish failedToStart: the broker is unreachable or refused the client",
                          ["mqtt.clientId": configuration.clientId ?? "", "mqtt.username": configuration.username ?? ""])
            return
        }
        _ = await changes.wait(until: { state.withLock { $0.failedAcknowledged } }, by: MonotonicClock.now() + 2)
        stop()
        logger.notice("published failedToStart to the broker")
    }

    /// Disconnects (the broker has what was sent before: ``MQTTClient/stop(last:)``) and drops
    /// the client.
    private func stop() {
        let client = state.withLock { state in
            defer { state.client = nil }
            return state.client
        }
        client?.stop()
    }
}
