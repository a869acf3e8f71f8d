internal import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

/// The state libmosquitto's callbacks and the network thread share with `MQTTClient`. It is
/// the `obj` passed to libmosquitto as an `Unmanaged` pointer (retained once by the client,
/// released after `mosquitto_destroy`), and retained again by the network thread while it runs.
final class MQTTClientCore: @unchecked Sendable {
    // @unchecked: the immutable properties are set in init; everything mutable is read and
    // written only with `lock` held; `handle` is a libmosquitto handle, whose calls are
    // thread-safe once `mosquitto_threaded_set(true)` is on (libmosquitto's own mutexes).

    enum Phase { case idle, running, stopping, stopped }

    let configuration: MQTTConfiguration
    let queue: MessageQueue
    let onConnectionEvent: @Sendable (MQTTConnectionEvent) -> Void
    let onAcknowledgement: @Sendable (MQTTAcknowledgement) -> Void
    let eventContinuation: AsyncStream<MQTTConnectionEvent>.Continuation
    let lock = ConditionLock()
    /// The `struct mosquitto *`; set once by `MQTTClient.init` right after `mosquitto_new`.
    var handle: OpaquePointer?

    // Guarded by `lock`.
    var phase = Phase.idle
    /// Subscriptions in the order they were made: sent again after every CONNACK success.
    var subscriptions: [(filter: String, qos: MQTTQoS)] = []
    /// SUBSCRIBE message id -> its filters, until the SUBACK arrives.
    var pendingSubscriptions: [Int32: [String]] = [:]
    /// The connection is up: CONNACK success, no disconnect since.
    var isConnected = false
    /// The current connection attempt got a successful CONNACK (stays set after it ends).
    var connackSucceeded = false
    /// The current connection attempt was refused in its CONNACK (already reported).
    var wasRefused = false
    /// Failed attempts since the last successful CONNACK (for the backoff).
    var failedAttempts = 0
    /// The network thread's kernel thread id, once it runs (0 before).
    var networkThreadID: Int32 = 0
    /// Offered every message on the network thread before it is queued (see
    /// `MQTTClient.setInlineHandler`). A plain property under `lock`: a closure kept in a
    /// generic `Mutex` gains a reabstraction thunk on every `withLock` (its `inout` is written
    /// back), and calls through it got slower with every message.
    var inlineHandler: (@Sendable (MQTTMessage) -> Bool)?
    /// The index in `configuration.endpoints` of the address of the current (or last) attempt.
    var endpointIndex = 0
    var thread: pthread_t?

    init(
        configuration: MQTTConfiguration,
        onConnectionEvent: @escaping @Sendable (MQTTConnectionEvent) -> Void,
        onAcknowledgement: @escaping @Sendable (MQTTAcknowledgement) -> Void,
        eventContinuation: AsyncStream<MQTTConnectionEvent>.Continuation
    ) {
        self.configuration = configuration
        self.queue = MessageQueue(capacity: configuration.inboundCapacity)
        self.onConnectionEvent = onConnectionEvent
        self.onAcknowledgement = onAcknowledgement
        self.eventContinuation = eventContinuation
    }

    var isV5: Bool { configuration.protocolVersion == .v5 }

    /// Tells the user: handler first, then the stream.
    func report(_ event: MQTTConnectionEvent) {
        onConnectionEvent(event)
        eventContinuation.yield(event)
    }

    /// Sends one SUBSCRIBE; call with `lock` held. `MOSQ_ERR_NO_CONN` is not an error: the
    /// subscription goes out after the next CONNACK.
    func sendSubscribeLocked(_ filter: String, qos: MQTTQoS) throws {
        guard let handle else { return }
        // v5: on a resubscription to a session that still has it, do not resend retained
        // messages (the subscriber already had them); a new subscription still gets them.
        let options = isV5 ? Int32(MQTT_SUB_OPT_SEND_RETAIN_NEW.rawValue) : 0
        var messageId: Int32 = 0
        let code = mosquitto_subscribe_v5(handle, &messageId, filter, qos.rawValue, options, nil)
        if code == Int32(MOSQ_ERR_NO_CONN.rawValue) { return }
        try MosquittoError.check(code, "mosquitto_subscribe_v5")
        pendingSubscriptions[messageId, default: []].append(filter)
    }

    // MARK: Network thread

    /// The network thread: runs libmosquitto's loop, and after any failure (including the ones
    /// that make `mosquitto_loop_forever` give up for good in 2.0: a v5 CONNACK refusal is
    /// `MOSQ_ERR_PROTOCOL`, TLS errors are `MOSQ_ERR_TLS`) waits the backoff and reconnects,
    /// until `stop()`.
    func runNetworkLoop(connectPending: Bool) {
        guard let handle else { return }
        lock.withLock { networkThreadID = geotrigger_thread_id() }
        geotrigger_name_thread("mqtt-network")
        var needsConnect = !connectPending
        while true {
            if needsConnect {
                lock.lock()
                isConnected = false
                connackSucceeded = false
                wasRefused = false
                let stopping = phase != .running
                let endpoints = configuration.endpoints
                // Several addresses: every attempt goes to the next one (a cluster's surviving node).
                let endpoint: MQTTConfiguration.Endpoint? =
                    endpoints.count > 1 ? endpoints[(endpointIndex + 1) % endpoints.count] : nil
                if endpoint != nil { endpointIndex = (endpointIndex + 1) % endpoints.count }
                lock.unlock()
                if stopping { break }
                // mosquitto_connect_async keeps the v5 CONNECT properties stored by the first
                // connect (it only replaces host, port and keepalive), as reconnect_async does.
                let code = endpoint.map {
                    mosquitto_connect_async(handle, $0.host, Int32(clamping: $0.port), Int32(clamping: configuration.keepalive))
                } ?? mosquitto_reconnect_async(handle)
                if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
                    let call = endpoint.map { "mosquitto_connect_async(\($0))" } ?? "mosquitto_reconnect_async"
                    report(.connectFailed(MosquittoError(code: code, call: call)))
                    if !waitBackoff() { break }
                    continue
                }
            }
            needsConnect = true
            var code = Int32(MOSQ_ERR_SUCCESS.rawValue)
            var stoppingTurns = 0
            repeat {
                // Stopping: give the DISCONNECT up to 20 short turns (2 s) to go out, then
                // leave anyway (a connection still pending to an unresponsive host).
                let stopping = lock.withLock { phase != .running }
                if stopping {
                    stoppingTurns += 1
                    if stoppingTurns > 20 { break }
                }
                code = mosquitto_loop(handle, stopping ? 100 : 1000, 64)
            } while code == Int32(MOSQ_ERR_SUCCESS.rawValue)
            lock.lock()
            let stopping = phase != .running
            let wasConnected = connackSucceeded
            let refused = wasRefused
            isConnected = false
            connackSucceeded = false
            wasRefused = false
            lock.unlock()
            if stopping { break }
            if !wasConnected && !refused {
                // Failed before any CONNACK; an accepted connection's end was reported by the
                // disconnect callback.
                report(.connectFailed(MosquittoError(code: code, call: "mosquitto_loop")))
            }
            if !waitBackoff() { break }
        }
    }

    /// Waits the backoff for the next attempt; `false` when `stop()` was called meanwhile.
    private func waitBackoff() -> Bool {
        lock.lock()
        let delay = configuration.reconnect.delay(attempt: failedAttempts)
        failedAttempts += 1
        let running = phase == .running
        lock.unlock()
        guard running else { return false }
        report(.reconnecting(after: delay))
        let deadline = ConditionLock.deadline(after: delay)
        lock.lock()
        defer { lock.unlock() }
        while phase == .running {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            if now.tv_sec > deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec) {
                return true
            }
            lock.wait(until: deadline)
        }
        return false
    }
}
