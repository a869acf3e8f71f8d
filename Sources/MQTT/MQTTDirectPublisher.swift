internal import CMosquitto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A connection that only publishes, driven by the one thread that uses it: no network
/// thread. `publish` writes the packet to the socket at once, where ``MQTTClient`` queues it
/// and wakes its network thread to write it (a wake-up and two context switches per message).
/// Made for load generators, which publish from a loop of their own and call ``service(timeout:)``
/// between bursts (acknowledgements, keepalive, what the socket could not take at once).
///
/// No reconnect: after the connection drops, `publish` throws. Not thread-safe: one thread at a
/// time (it may be created on one thread and used on another). Behind `@_spi(Benchmarks)`: the
/// benchmarks' load generator and its tests use it, the gateway never does.
@_spi(Benchmarks) public final class MQTTDirectPublisher: @unchecked Sendable {
    // @unchecked: used by one thread at a time (documented); the counters are atomics.
    final class Counters: Sendable {
        /// Messages libmosquitto is done with: QoS 0 written, QoS 1 acknowledged.
        let finished = Atomic<Int>(0)
        /// CONNACK: 0 none yet, 1 accepted, 2 refused.
        let connack = Atomic<Int>(0)
    }

    private let handle: OpaquePointer
    private let counters: Counters
    private let unmanagedCounters: Unmanaged<Counters>
    private var connected = false

    /// Connects to the first address of `configuration` (clean session, its protocol version,
    /// keepalive, user name, TLS and TCP_NODELAY) and waits up to `timeout` seconds for the CONNACK.
    ///
    /// - Throws: `MosquittoError` when the broker cannot be reached, refuses the connection or
    ///   does not answer in time.
    public init(_ configuration: MQTTConfiguration, timeout: Double = 10) throws {
        _ = mosquittoLibraryInitialized
        let counters = Counters()
        let unmanagedCounters = Unmanaged.passRetained(counters)
        guard let handle = mosquitto_new(configuration.clientId, true, unmanagedCounters.toOpaque()) else {
            unmanagedCounters.release()
            throw MosquittoError(code: Int32(MOSQ_ERR_NOMEM.rawValue), call: "mosquitto_new")
        }
        self.handle = handle
        self.counters = counters
        self.unmanagedCounters = unmanagedCounters
        try applyConnectionOptions(handle, configuration)
        mosquitto_publish_v5_callback_set(handle) { _, object, _, _, _ in
            guard let object else { return }
            Unmanaged<Counters>.fromOpaque(object).takeUnretainedValue().finished.add(1, ordering: .relaxed)
        }
        mosquitto_connect_v5_callback_set(handle) { _, object, code, _, _ in
            guard let object else { return }
            Unmanaged<Counters>.fromOpaque(object).takeUnretainedValue().connack.store(code == 0 ? 1 : 2, ordering: .relaxed)
        }
        let endpoint = configuration.endpoints[0]
        try MosquittoError.check(
            mosquitto_connect(handle, endpoint.host, Int32(clamping: endpoint.port), Int32(clamping: configuration.keepalive)),
            "mosquitto_connect(\(endpoint.host):\(endpoint.port))")
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let deadline = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + timeout
        while counters.connack.load(ordering: .relaxed) == 0 {
            try service(timeout: 0.1)
            clock_gettime(CLOCK_MONOTONIC, &now)
            if Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 > deadline {
                throw MosquittoError(code: Int32(MOSQ_ERR_CONN_LOST.rawValue), message: "no CONNACK within \(timeout) s", call: "mosquitto_connect")
            }
        }
        guard counters.connack.load(ordering: .relaxed) == 1 else {
            throw MosquittoError(code: Int32(MOSQ_ERR_CONN_REFUSED.rawValue), call: "mosquitto_connect")
        }
        connected = true
    }

    deinit {
        disconnect()
        mosquitto_destroy(handle)
        unmanagedCounters.release()
    }

    /// Messages libmosquitto is done with so far: QoS 0 written to the socket, QoS 1
    /// acknowledged by the broker.
    public var finished: Int { counters.finished.load(ordering: .relaxed) }

    /// Publishes one message: written to the socket now if it takes it, else when
    /// ``service(timeout:)`` finds it writable. Returns the message id.
    @discardableResult
    public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS) throws -> Int32 {
        var messageId: Int32 = 0
        try MosquittoError.check(
            mosquitto_publish_v5(handle, &messageId, topic, Int32(clamping: payload.count), payload.baseAddress, qos.rawValue, false, nil),
            "mosquitto_publish_v5(\(topic))")
        return messageId
    }

    /// Reads what the broker sent (acknowledgements, PINGRESP), writes what waits and keeps
    /// the connection alive; waits up to `timeout` seconds (rounded down to milliseconds) for
    /// the socket when there is nothing to do.
    public func service(timeout: Double = 0) throws {
        try MosquittoError.check(mosquitto_loop(handle, Int32(timeout * 1000), 1), "mosquitto_loop")
    }

    /// Sends DISCONNECT (once) and gives it a moment to be written.
    public func disconnect() {
        guard connected else { return }
        connected = false
        if mosquitto_disconnect(handle) == Int32(MOSQ_ERR_SUCCESS.rawValue) {
            _ = mosquitto_loop(handle, 10, 1)
        }
    }
}
