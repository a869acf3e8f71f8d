internal import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

/// Runs `mosquitto_lib_init` once per process (it is not thread-safe; Swift initializes
/// globals exactly once).
let mosquittoLibraryInitialized: Bool = {
    mosquitto_lib_init()
    return true
}()

/// Applies what `configuration` says about the connection itself to a libmosquitto handle:
/// protocol version, send maximum, TCP_NODELAY, user name and password, TLS. Shared by
/// `MQTTClient` and `MQTTDirectPublisher`.
func applyConnectionOptions(_ handle: OpaquePointer, _ configuration: MQTTConfiguration) throws {
    let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
    try MosquittoError.check(
        mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, version), "mosquitto_int_option(PROTOCOL_VERSION)")
    try MosquittoError.check(
        mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, Int32(clamping: configuration.inflightWindow)),
        "mosquitto_int_option(SEND_MAXIMUM)")
    // Events are small and latency matters more than packet count: no Nagle delay.
    try MosquittoError.check(mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1), "mosquitto_int_option(TCP_NODELAY)")
    if let username = configuration.username {
        try MosquittoError.check(
            mosquitto_username_pw_set(handle, username, configuration.password), "mosquitto_username_pw_set")
    }
    if let tls = configuration.tls {
        try MosquittoError.check(
            mosquitto_tls_set(handle, tls.ca, nil, tls.cert, tls.key, nil), "mosquitto_tls_set(\(tls.ca))")
    }
}

/// An MQTT client over libmosquitto 2.0: one `struct mosquitto *`, one network thread, which
/// runs libmosquitto's read, write and keepalive steps around a `poll` of the socket and of an
/// eventfd that wakes it for ``perform(_:)``'s jobs.
///
/// - `start()` connects in the background and keeps reconnecting with backoff until `stop()`;
///   after every successful CONNACK it subscribes again to everything `subscribe` was asked
///   for, then reports `.connected` (publish `started` and retained state from there).
/// - `messages` yields what arrives; its queue never drops (see `MQTTMessages`).
/// - `publish` returns the message id at once; the broker's answer comes later through
///   `onAcknowledgement`, never awaited.
///
/// Sendable: libmosquitto's publish/subscribe/unsubscribe/disconnect are thread-safe when its
/// threading is on (they queue packets under its own mutexes; `mosquitto_threaded_set(true)`
/// here), the client wakes its network thread after each, and the client's own state is behind
/// a lock. So any task or thread may call any method at any time, including the handlers on
/// the network thread (except `stop()`, which waits for that thread).
public final class MQTTClient: @unchecked Sendable {
    /// The settings it was made with.
    public let configuration: MQTTConfiguration
    /// Received messages (single queue shared by all iterators).
    public let messages: MQTTMessages
    /// Connection events, also given to `onConnectionEvent` (buffer: the newest 256).
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>

    private let core: MQTTClientCore
    private let handle: OpaquePointer
    private let unmanagedCore: Unmanaged<MQTTClientCore>

    /// Creates the libmosquitto handle and applies `configuration` (nothing is sent yet).
    ///
    /// - Parameters:
    ///   - onConnectionEvent: called on the network thread for every `MQTTConnectionEvent`;
    ///     keep it short (it may call `publish` and `subscribe`).
    ///   - onAcknowledgement: called on the network thread for every PUBACK (QoS 1) or
    ///     written message (QoS 0); keep it short, never wait in it.
    /// - Throws: `MosquittoError` naming the setting libmosquitto rejected (e.g. an unreadable
    ///   TLS file, a keepalive out of range, a missing client id without clean start).
    public init(
        _ configuration: MQTTConfiguration,
        onConnectionEvent: @escaping @Sendable (MQTTConnectionEvent) -> Void = { _ in },
        onAcknowledgement: @escaping @Sendable (MQTTAcknowledgement) -> Void = { _ in }
    ) throws {
        _ = mosquittoLibraryInitialized
        if configuration.clientId == nil && !configuration.cleanStart {
            throw MosquittoError(
                code: Int32(MOSQ_ERR_INVAL.rawValue),
                message: "a persistent session (cleanStart false) needs a stable client id", call: "mosquitto_new")
        }
        let (stream, continuation) = AsyncStream.makeStream(
            of: MQTTConnectionEvent.self, bufferingPolicy: .bufferingNewest(256))
        let wakeFD = geotrigger_wake_fd()
        guard wakeFD >= 0 else {
            throw MosquittoError(code: Int32(MOSQ_ERR_ERRNO.rawValue), message: String(cString: strerror(errno)), call: "eventfd")
        }
        let core = MQTTClientCore(
            configuration: configuration,
            delegate: MQTTClosureDelegate(onConnectionEvent: onConnectionEvent, onAcknowledgement: onAcknowledgement),
            eventContinuation: continuation, wakeFD: wakeFD)
        let unmanagedCore = Unmanaged.passRetained(core)
        guard let handle = mosquitto_new(configuration.clientId, configuration.cleanStart, unmanagedCore.toOpaque())
        else {
            unmanagedCore.release()
            let code = errno == ENOMEM ? MOSQ_ERR_NOMEM : MOSQ_ERR_INVAL
            throw MosquittoError(code: Int32(code.rawValue), call: "mosquitto_new")
        }
        core.handle = handle
        self.configuration = configuration
        self.core = core
        self.handle = handle
        self.unmanagedCore = unmanagedCore
        self.messages = MQTTMessages(queue: core.queue)
        self.connectionEvents = stream
        // Every stored property is set: if this throws, Swift runs deinit, which destroys the
        // handle and releases the box (cleaning up here too would free them twice).
        try apply(configuration)
    }

    deinit {
        stop()
        mosquitto_destroy(handle)
        unmanagedCore.release()
    }

    private func apply(_ configuration: MQTTConfiguration) throws {
        try applyConnectionOptions(handle, configuration)
        try MosquittoError.check(mosquitto_threaded_set(handle, true), "mosquitto_threaded_set")
        if let will = configuration.will {
            try will.payload.withUnsafeBytes { bytes in
                try MosquittoError.check(
                    mosquitto_will_set(
                        handle, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos.rawValue, will.retain),
                    "mosquitto_will_set(\(will.topic))")
            }
        }
        mosquitto_connect_v5_callback_set(handle, mqttOnConnect)
        mosquitto_disconnect_v5_callback_set(handle, mqttOnDisconnect)
        mosquitto_publish_v5_callback_set(handle, mqttOnPublish)
        mosquitto_message_v5_callback_set(handle, mqttOnMessage)
        mosquitto_subscribe_v5_callback_set(handle, mqttOnSubscribe)
    }

    // MARK: Lifecycle

    /// Starts connecting in the background (`mosquitto_connect_async`, then the network
    /// thread). Returns at once; watch `connectionEvents`. An unreachable broker is not an
    /// error here: the client retries with backoff. Calling it again does nothing.
    ///
    /// - Throws: `MosquittoError` for settings the connect rejects (bad host or port,
    ///   keepalive out of range) or when the thread cannot start.
    public func start() throws {
        core.lock.lock()
        guard core.phase == .idle else {
            core.lock.unlock()
            return
        }
        // Claimed: another start returns, a stop waits for the end of this one. libmosquitto
        // is called with the lock released.
        core.phase = .starting
        core.endpointIndex = 0
        core.lock.unlock()
        let connectPending: Bool
        do {
            connectPending = try connectFirst()
        } catch {
            core.lock.withLock {
                core.phase = .idle
                core.lock.broadcast()
            }
            throw error
        }
        core.lock.lock()
        defer { core.lock.unlock() }
        core.phase = .running
        core.lock.broadcast()
        let argument = Unmanaged.passRetained(core).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            connectPending ? { mqttNetworkThreadMain($0) } : { mqttNetworkThreadMainAfterFailure($0) },
            argument)
        guard created == 0 else {
            Unmanaged<MQTTClientCore>.fromOpaque(argument).release()
            core.phase = .idle
            core.firstConnectFailure = nil
            throw MosquittoError(
                code: Int32(MOSQ_ERR_ERRNO.rawValue), message: String(cString: strerror(created)),
                call: "pthread_create")
        }
        core.thread = thread
    }

    /// `start()`'s first `mosquitto_connect_async` with the CONNECT properties, no lock held:
    /// true when the connection is pending, false when the broker is unreachable right now (the
    /// network thread reports that and retries).
    private func connectFirst() throws -> Bool {
        let configuration = self.configuration
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if configuration.protocolVersion == .v5 && configuration.sessionExpiry > 0 {
            try MosquittoError.check(
                mosquitto_property_add_int32(
                    &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), configuration.sessionExpiry),
                "mosquitto_property_add_int32(SESSION_EXPIRY_INTERVAL)")
        }
        if configuration.protocolVersion == .v5, let size = configuration.maximumPacketSize {
            try MosquittoError.check(
                mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), size),
                "mosquitto_property_add_int32(MAXIMUM_PACKET_SIZE)")
        }
        let first = configuration.endpoints[0]
        let code = geotrigger_mosquitto_connect_async_v5(
            handle, first.host, Int32(clamping: first.port), Int32(clamping: configuration.keepalive),
            properties)
        switch code {
        case Int32(MOSQ_ERR_SUCCESS.rawValue):
            return true
        case Int32(MOSQ_ERR_INVAL.rawValue), Int32(MOSQ_ERR_NOT_SUPPORTED.rawValue), Int32(MOSQ_ERR_NOMEM.rawValue),
            Int32(MOSQ_ERR_PROTOCOL.rawValue), Int32(MOSQ_ERR_DUPLICATE_PROPERTY.rawValue):
            throw MosquittoError(
                code: code,
                message: String(cString: mosquitto_strerror(code))
                    + " (host \"\(first.host)\", port \(first.port), keepalive \(configuration.keepalive))",
                call: "mosquitto_connect_async")
        default:
            // Unreachable right now (refused, name lookup failed...): the network thread reports
            // it (the delegate hears it there) and retries.
            let failure = MosquittoError(code: code, call: "mosquitto_connect_async")
            core.lock.withLock { core.firstConnectFailure = failure }
            return false
        }
    }

    /// Disconnects cleanly (DISCONNECT, so no will) and waits for the network thread to end
    /// (at most a few seconds). From the call on nothing more is read: the thread only writes
    /// what is queued, the DISCONNECT last, so every message read was acknowledged before it,
    /// and what the broker sent after stays unacknowledged in its session. The `messages`
    /// sequence then ends once drained. A stopped client cannot start again. Blocks the
    /// calling thread: call it at shutdown, not in a handler.
    ///
    /// `last` runs on the network thread once it has stopped reading, if connected: a QoS 0
    /// message published there is the last one the broker gets before the DISCONNECT. (One
    /// published before the stop can be overtaken: a QoS 1 message waiting for a free slot of
    /// the broker's receive maximum goes out when an acknowledgement is read, and one queued at
    /// the stop never does.)
    public func stop(last: (@Sendable () -> Void)? = nil) {
        core.lock.lock()
        while core.phase == .starting { core.lock.wait() }
        guard core.phase == .running, let thread = core.thread else {
            if core.phase == .idle { core.phase = .stopped }
            core.lock.unlock()
            core.queue.close()
            core.eventContinuation.finish()
            return
        }
        core.phase = .stopping
        core.lastJob = last
        core.lock.broadcast()
        core.lock.unlock()
        core.queue.close()
        // The network thread writes what is queued, then the DISCONNECT.
        core.wake()
        pthread_join(thread, nil)
        core.lock.withLock {
            core.phase = .stopped
            core.thread = nil
        }
        core.eventContinuation.finish()
    }

    // MARK: Subscriptions

    /// Subscribes now if connected, and again after every reconnect (in MQTT v5 with
    /// "retained messages only if the subscription is new"). Subscribing to a filter again
    /// replaces its QoS. The broker's answer arrives as `.subscribed`.
    ///
    /// The SUBSCRIBE is sent on the network thread (``perform(_:)``), where its SUBACK is read,
    /// so its message id is known before the answer; with no connection loop running it is not
    /// sent at all (not connected: the next CONNACK subscribes it).
    ///
    /// - Throws: `MosquittoError` for an invalid filter, or, called on the network thread, if
    ///   libmosquitto refuses it (from elsewhere a refusal shows as a missing `.subscribed`, as
    ///   after a CONNACK).
    public func subscribe(_ filter: String, qos: MQTTQoS = .atLeastOnce) throws {
        try MosquittoError.check(mosquitto_sub_topic_check(filter), "mosquitto_sub_topic_check(\(filter))")
        core.lock.withLock {
            if let index = core.subscriptions.firstIndex(where: { $0.filter == filter }) {
                core.subscriptions[index].qos = qos
            } else {
                core.subscriptions.append((filter, qos))
            }
        }
        if core.isNetworkThread { return try core.subscribeNow(filter, qos: qos) }
        core.perform { [core] in
            guard core.isNetworkThread else { return }
            try? core.subscribeNow(filter, qos: qos)
        }
    }

    /// Removes `filter` from the subscriptions (and from the broker's session if connected).
    /// The UNSUBSCRIBE is sent on the network thread, as ``subscribe(_:qos:)``'s SUBSCRIBE.
    ///
    /// - Throws: `MosquittoError`, called on the network thread, if libmosquitto refuses it.
    public func unsubscribe(_ filter: String) throws {
        core.lock.withLock { core.subscriptions.removeAll { $0.filter == filter } }
        if core.isNetworkThread { return try core.unsubscribeNow(filter) }
        core.perform { [core] in
            guard core.isNetworkThread else { return }
            try? core.unsubscribeNow(filter)
        }
    }

    // MARK: Publishing

    /// Queues a message and returns its message id at once; the broker's answer comes later
    /// through `onAcknowledgement` with that id (never wait for it here or in a handler).
    ///
    /// QoS 1 messages are kept by libmosquitto until their PUBACK and resent after a
    /// reconnect, so they may be published while disconnected. QoS 0 needs a connection.
    /// `properties` need MQTT v5.
    ///
    /// - Throws: `MosquittoError`: not connected (QoS 0, `isNoConnection`), invalid topic,
    ///   payload too large, properties on v3.1.1.
    @discardableResult
    public func publish(
        topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTPublishProperties? = nil
    ) throws -> Int32 {
        var messageId: Int32 = 0
        var list: OpaquePointer?
        defer { mosquitto_property_free_all(&list) }
        if let properties {
            if let responseTopic = properties.responseTopic {
                try MosquittoError.check(
                    mosquitto_property_add_string(&list, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), responseTopic),
                    "mosquitto_property_add_string(RESPONSE_TOPIC)")
            }
            if let correlationData = properties.correlationData {
                try correlationData.withUnsafeBytes { bytes in
                    try MosquittoError.check(
                        mosquitto_property_add_binary(
                            &list, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress,
                            UInt16(clamping: bytes.count)),
                        "mosquitto_property_add_binary(CORRELATION_DATA)")
                }
            }
        }
        let code = mosquitto_publish_v5(
            handle, &messageId, topic, Int32(clamping: payload.count), payload.baseAddress, qos.rawValue, retain, list)
        core.wake()
        // libmosquitto 2.0 queues a QoS 1/2 message before it tries to send it, and returns
        // MOSQ_ERR_NO_CONN when the send fails for want of a connection: the message stays
        // queued and goes out after the next CONNACK, so for QoS > 0 that is a success.
        if code == Int32(MOSQ_ERR_NO_CONN.rawValue) && qos != .atMostOnce && messageId != 0 {
            return messageId
        }
        try MosquittoError.check(code, "mosquitto_publish_v5(\(topic))")
        return messageId
    }

    /// `publish` with a byte payload.
    @discardableResult
    public func publish(
        topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTPublishProperties? = nil
    ) throws -> Int32 {
        try payload.withUnsafeBytes { bytes in
            try publish(topic: topic, payload: bytes, qos: qos, retain: retain, properties: properties)
        }
    }

    /// `publish` with a text payload (sent as UTF-8).
    @discardableResult
    public func publish(
        topic: String, payload: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false,
        properties: MQTTPublishProperties? = nil
    ) throws -> Int32 {
        var payload = payload
        return try payload.withUTF8 { bytes in
            try publish(
                topic: topic, payload: UnsafeRawBufferPointer(bytes), qos: qos, retain: retain, properties: properties)
        }
    }

    /// Runs `job` on the network thread, between two reads of the socket, in the order handed
    /// over; at once where the caller is that thread, or where no connection loop runs (before
    /// `start`, while waiting to reconnect, after `stop`). Keep it short and never wait in it.
    ///
    /// Publishing from there avoids contention on libmosquitto's mutexes, which every read
    /// takes: a thread that holds one while it is preempted (a low-priority one, on a busy box)
    /// stalls the reading of the broker's messages behind it.
    public func perform(_ job: @escaping @Sendable () -> Void) { core.perform(job) }

    /// Publishes `messages` in order on the network thread (``perform(_:)``), each as `publish`
    /// would (its v5 response topic and correlation data as properties), and returns their
    /// message ids or the errors `publish` threw, in the same order.
    public func publish(_ messages: [MQTTMessage]) async -> [Result<Int32, any Error>] {
        await withCheckedContinuation { continuation in
            core.perform { [self] in
                continuation.resume(returning: messages.map { message in
                    let properties = message.responseTopic == nil && message.correlationData == nil ? nil
                        : MQTTPublishProperties(responseTopic: message.responseTopic, correlationData: message.correlationData)
                    return Result {
                        try publish(topic: message.topic, payload: message.payload, qos: message.qos,
                                    retain: message.retain, properties: properties)
                    }
                })
            }
        }
    }

    // MARK: State

    /// The broker address of the current connection (or of the last attempt): one of
    /// `configuration.endpoints`.
    public var endpoint: MQTTConfiguration.Endpoint {
        let endpoints = configuration.endpoints
        return endpoints[core.lock.withLock { core.endpointIndex } % endpoints.count]
    }

    /// Whether the connection is up (CONNACK success and no disconnect since).
    public var isConnected: Bool { core.lock.withLock { core.isConnected } }

    /// The kernel thread id of the network thread (the one that reads the socket and runs the
    /// inline handler); nil until that thread has started. For callers that set thread
    /// priorities.
    public var networkThreadID: Int32? {
        let id = core.lock.withLock { core.networkThreadID }
        return id == 0 ? nil : id
    }

    /// Whether the caller is the network thread (the one that reads the socket and runs the
    /// inline handler and the after-reads handler).
    public var isNetworkThread: Bool { core.isNetworkThread }

    /// For code that must run on the network thread (an ``MQTTClientDelegate``'s methods, work
    /// it owns): in debug builds traps, naming `function`, when the caller is another thread;
    /// in release builds does nothing.
    public func assertOnNetworkThread(_ function: StaticString = #function) {
        #if DEBUG
        core.assertOnNetworkThread(function)
        #endif
    }

    /// Messages received and waiting in the inbound queue.
    public var inboundDepth: Int { core.queue.depth }

    /// Whether the current connection's socket is read through a buffer (``BufferedReads``;
    /// ``MQTTConfiguration/bufferedReads``, no TLS, and a process that links
    /// `ReadInterposition`). False while not connected.
    public var readsBuffered: Bool { BufferedReads.isRegistered(mosquitto_socket(handle)) }

    /// Whether the network thread batches its reads now: messages came faster than it turned,
    /// so it waits until 4 KB have arrived or 1 ms has passed (buffered reads only).
    public var batchesReads: Bool { core.batching.load(ordering: .relaxed) }

    /// How many times the network thread began batching its reads.
    public var readBatchesBegun: Int { core.batchesBegun.load(ordering: .relaxed) }

    /// Bytes the broker sent that the network thread has not read from the socket yet (0 when
    /// not connected): how far behind it is, when an inline handler does the work. One
    /// system call. Up to ``BufferedReads/capacity`` bytes already taken into the read buffer
    /// are not counted.
    public var unreadBytes: Int { max(0, Int(geotrigger_socket_unread_bytes(mosquitto_socket(handle)))) }

    /// Installs the owner of the network thread's work (messages first, the end of each burst
    /// of reads, acknowledgements and connection events), in place of the handlers given to
    /// `init`, ``setInlineHandler(_:)`` and ``setAfterReads(_:)``. Set it before `start()`.
    public func setDelegate(_ delegate: any MQTTClientDelegate) {
        core.lock.lock()
        core.delegate = delegate
        core.lock.unlock()
    }

    /// Offers every received message to `handler` on libmosquitto's network thread, before it
    /// is queued for `messages`: a message the handler takes (returns true) is not queued.
    /// This saves the thread hop per message (a wake-up of a waiting task) where the work is
    /// short and needs no `await`. The handler runs on a thread that is not Swift's, in arrival
    /// order; while it runs, nothing else is read from the broker, so it may block that thread
    /// for back-pressure, as a full queue does. Set it before `start()`; nil removes it. For a
    /// client without ``setDelegate(_:)`` (the closure API).
    public func setInlineHandler(_ handler: (@Sendable (MQTTMessage) -> Bool)?) {
        updateClosures { $0.with(inlineHandler: handler) }
    }

    /// Calls `handler` on the network thread in every turn of its loop, after the jobs of
    /// ``perform(_:)`` and the burst of reads (every message the inline handler took in that
    /// turn), also when reading lost the connection, and before the turn writes what is queued:
    /// what it publishes goes out in the same turn. So work the inline handler gathers from a
    /// burst of messages can be finished once per burst. It takes effect from the next turn; nil
    /// removes it. For a client without ``setDelegate(_:)`` (the closure API).
    public func setAfterReads(_ handler: (@Sendable () -> Void)?) {
        updateClosures { $0.with(afterReads: handler) }
    }

    private func updateClosures(_ change: (MQTTClosureDelegate) -> MQTTClosureDelegate) {
        core.lock.lock()
        defer { core.lock.unlock() }
        guard let closures = core.delegate as? MQTTClosureDelegate else {
            preconditionFailure("MQTTClient: the closure handlers of a client that has a delegate")
        }
        core.delegate = change(closures)
    }
}
