internal import CMosquitto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The state libmosquitto's callbacks and the network thread share with `MQTTClient`. It is
/// the `obj` passed to libmosquitto as an `Unmanaged` pointer (retained once by the client,
/// released after `mosquitto_destroy`), and retained again by the network thread while it runs.
final class MQTTClientCore: @unchecked Sendable {
    // @unchecked: the immutable properties are set in init; everything mutable is read and
    // written only with `lock` held (or is atomic, or in a `Mutex`); `handle` is a libmosquitto
    // handle, whose calls are thread-safe once `mosquitto_threaded_set(true)` is on
    // (libmosquitto's own mutexes).

    /// `starting`: `start()` calls libmosquitto (no lock held); `stop()` waits for it.
    enum Phase { case idle, starting, running, stopping, stopped }

    let configuration: MQTTConfiguration
    let queue: MessageQueue
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
    /// The owner of the network thread's work (see ``MQTTClientDelegate``). A plain property
    /// under `lock`: a closure kept in a generic `Mutex` gains a reabstraction thunk on every
    /// `withLock` (its `inout` is written back), and calls through it got slower with every
    /// message.
    var delegate: any MQTTClientDelegate
    /// The index in `configuration.endpoints` of the address of the current (or last) attempt.
    var endpointIndex = 0
    var thread: pthread_t?
    /// `MQTTClient.stop(last:)`'s job, taken by the network thread once it stops reading.
    var lastJob: (@Sendable () -> Void)?
    /// `start()`'s connect failed at once: the network thread reports it first.
    var firstConnectFailure: MosquittoError?

    /// The network thread batches its reads (see `batchBytes`).
    let batching = Atomic<Bool>(false)
    /// How many times the network thread began batching its reads.
    let batchesBegun = Atomic<Int>(0)
    /// An eventfd beside the socket in the network thread's `poll`: written to wake it for
    /// queued work or for a packet another thread queued (libmosquitto's own wake-up pipe is
    /// only read by `mosquitto_loop`, which this loop replaces).
    let wakeFD: Int32
    /// A wake-up was written and not taken yet: a burst of calls writes once.
    private let wakePending = Atomic<Bool>(false)
    /// The network thread's `pthread_self()` while it runs (0 otherwise).
    private let networkThread = Atomic<UInt>(0)
    private let work = Mutex(Work())

    /// Work handed to the network thread (``perform(_:)``).
    private struct Work {
        var jobs: [@Sendable () -> Void] = []
        /// A connection loop runs and will take the jobs.
        var looping = false
    }

    init(
        configuration: MQTTConfiguration,
        delegate: any MQTTClientDelegate,
        eventContinuation: AsyncStream<MQTTConnectionEvent>.Continuation,
        wakeFD: Int32
    ) {
        self.wakeFD = wakeFD
        self.configuration = configuration
        self.queue = MessageQueue(capacity: configuration.inboundCapacity, byteCapacity: configuration.inboundBytes)
        self.delegate = delegate
        self.eventContinuation = eventContinuation
    }

    deinit { close(wakeFD) }

    var isV5: Bool { configuration.protocolVersion == .v5 }

    // MARK: Work on the network thread

    /// Whether the caller is the network thread.
    var isNetworkThread: Bool { networkThread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Traps in debug builds when the caller is not the network thread (see
    /// ``MQTTClient/assertOnNetworkThread(_:)``); nothing in release builds.
    @inline(__always)
    func assertOnNetworkThread(_ function: StaticString = #function) {
        #if DEBUG
        precondition(isNetworkThread, "\(function) must run on the client's network thread")
        #endif
    }

    /// Runs `job` on the network thread between two reads of the socket, in the order handed
    /// over; or right here when the caller is that thread, or when no connection loop runs
    /// (before `start`, while waiting to reconnect, after `stop`), so that a job never waits
    /// for the broker.
    func perform(_ job: @escaping @Sendable () -> Void) {
        if isNetworkThread { return job() }
        let queued = work.withLock { work in
            guard work.looping else { return false }
            work.jobs.append(job)
            return true
        }
        guard queued else { return job() }
        wake()
    }

    /// Wakes the network thread out of `poll` (a no-op on that thread, which looks for packets
    /// to write after every step anyway). Called after any libmosquitto call that queues a
    /// packet.
    func wake() {
        guard !isNetworkThread, !wakePending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// On the network thread: takes the wake-up, then runs the jobs queued so far.
    private func runJobs() {
        var count: UInt64 = 0
        _ = read(wakeFD, &count, 8)
        // Cleared before the jobs are taken: a job queued from now on writes a new wake-up.
        wakePending.store(false, ordering: .sequentiallyConsistent)
        let jobs = work.withLock { work in
            defer { work.jobs.removeAll(keepingCapacity: true) }
            return work.jobs
        }
        for job in jobs { job() }
    }

    /// Marks whether a connection loop runs; when it ends, runs what was still queued (later
    /// jobs run on their callers' threads).
    private func setLooping(_ looping: Bool) {
        let left = work.withLock { work in
            work.looping = looping
            defer { work.jobs.removeAll() }
            return looping ? [] : work.jobs
        }
        for job in left { job() }
    }

    /// The delegate, read under `lock` (it may be replaced before `start()`).
    var currentDelegate: any MQTTClientDelegate {
        lock.lock()
        defer { lock.unlock() }
        return delegate
    }

    /// Tells the user: the delegate first, then the stream.
    func report(_ event: MQTTConnectionEvent) {
        currentDelegate.handle(.connection(event))
        eventContinuation.yield(event)
    }

    /// Sends one SUBSCRIBE and returns its message id; nil when not connected
    /// (`MOSQ_ERR_NO_CONN`: the subscription goes out after the next CONNACK). Call it with no
    /// lock held, on the network thread, and record the id (``recordSubscriptions(_:)``)
    /// before the callback returns: the SUBACK is read on that thread.
    func sendSubscribe(_ filter: String, qos: MQTTQoS) throws -> Int32? {
        assertOnNetworkThread()
        guard let handle else { return nil }
        // v5: on a resubscription to a session that still has it, do not resend retained
        // messages (the subscriber already had them); a new subscription still gets them.
        let options = isV5 ? Int32(MQTT_SUB_OPT_SEND_RETAIN_NEW.rawValue) : 0
        var messageId: Int32 = 0
        let code = mosquitto_subscribe_v5(handle, &messageId, filter, qos.rawValue, options, nil)
        if code == Int32(MOSQ_ERR_NO_CONN.rawValue) { return nil }
        try MosquittoError.check(code, "mosquitto_subscribe_v5")
        return messageId
    }

    /// Remembers the filters of SUBSCRIBEs sent, by message id, for their SUBACKs.
    func recordSubscriptions(_ sent: [(id: Int32, filter: String)]) {
        guard !sent.isEmpty else { return }
        lock.withLock {
            for (id, filter) in sent { pendingSubscriptions[id, default: []].append(filter) }
        }
    }

    /// On the network thread: subscribes `filter` now.
    func subscribeNow(_ filter: String, qos: MQTTQoS) throws {
        if let id = try sendSubscribe(filter, qos: qos) { recordSubscriptions([(id, filter)]) }
    }

    /// On the network thread: unsubscribes `filter` now (nothing when not connected).
    func unsubscribeNow(_ filter: String) throws {
        assertOnNetworkThread()
        guard let handle else { return }
        let code = mosquitto_unsubscribe_v5(handle, nil, filter, nil)
        if code != Int32(MOSQ_ERR_NO_CONN.rawValue) {
            try MosquittoError.check(code, "mosquitto_unsubscribe_v5(\(filter))")
        }
    }

    // MARK: Network thread

    /// The network thread: runs libmosquitto's loop, and after any failure (including the ones
    /// that make `mosquitto_loop_forever` give up for good in 2.0: a v5 CONNACK refusal is
    /// `MOSQ_ERR_PROTOCOL`, TLS errors are `MOSQ_ERR_TLS`) waits the backoff and reconnects,
    /// until `stop()`.
    func runNetworkLoop(connectPending: Bool) {
        guard let handle else { return }
        let threadID = geotrigger_thread_id()
        lock.withLock { networkThreadID = threadID }
        networkThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer { networkThread.store(0, ordering: .relaxed) }
        geotrigger_name_thread("mqtt-network")
        if let failure = lock.withLock({ () -> MosquittoError? in
            defer { firstConnectFailure = nil }
            return firstConnectFailure
        }) {
            report(.connectFailed(failure))
        }
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
            var stopDeadline: ContinuousClock.Instant?
            var disconnectQueued = false
            setLooping(true)
            repeat {
                // Stopping: nothing more is read (what the broker sent and was not read is not
                // acknowledged, so it stays in the session); the packets queued before the stop
                // are written, then the DISCONNECT, all within 2 s, after which the thread
                // leaves anyway (a connection still pending to an unresponsive host, a broker
                // that stopped reading).
                let (stopping, connecting, delegate): (Bool, Bool, any MQTTClientDelegate) =
                    lock.withLock { (phase != .running, !connackSucceeded, self.delegate) }
                if stopping {
                    let deadline = stopDeadline ?? .now + .seconds(2)
                    if stopDeadline == nil, !connecting, let last = lock.withLock({ lastJob }) {
                        // From here on nothing is read, so no acknowledgement releases a
                        // queued QoS 1 message any more: what `last` publishes goes after
                        // everything the broker gets from this connection but the DISCONNECT.
                        last()
                    }
                    stopDeadline = deadline
                    if ContinuousClock.now >= deadline { break }
                    if !connecting, !disconnectQueued, !mosquitto_want_write(handle) {
                        let socket = mosquitto_socket(handle)
                        if configuration.tls == nil, socket >= 0 {
                            disconnect(socket, until: deadline)
                            break
                        }
                        // TLS: libmosquitto writes the DISCONNECT and closes at once.
                        disconnectQueued = true
                        _ = mosquitto_disconnect_v5(handle, 0, nil)
                    }
                }
                code = turn(handle, timeout: stopping ? 100 : connecting ? 1000 : idleWait, reading: !stopping || connecting,
                            connecting: connecting, delegate: delegate)
            } while code == Int32(MOSQ_ERR_SUCCESS.rawValue)
            setLooping(false)
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
                report(.connectFailed(MosquittoError(code: code, call: "mosquitto_loop_read")))
            }
            if !waitBackoff() { break }
        }
    }

    /// Ends a plain TCP connection at a stop without losing what was written to it: the
    /// DISCONNECT (`E0 00`: normal disconnection, in v3.1.1 and v5), a half close, then what the
    /// broker still sends is read and dropped until it closes its side (on the DISCONNECT) or
    /// `deadline`. libmosquitto's own DISCONNECT closes the socket as soon as it is written, and
    /// a close while unread bytes wait (the broker sends until it reads the DISCONNECT) resets
    /// the connection: the kernel drops what it had not sent yet, the DISCONNECT and the last
    /// acknowledgements among it, and the broker publishes the will. The socket itself stays
    /// libmosquitto's, closed when the client is destroyed.
    private func disconnect(_ socket: Int32, until deadline: ContinuousClock.Instant) {
        func waitFor(_ events: Int32) -> Bool {
            let left = deadline - .now
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: socket, events: Int16(events), revents: 0)
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            return poll(&descriptor, 1, Int32(clamping: max(1, milliseconds))) >= 0
        }
        let packet: [UInt8] = [0xE0, 0x00]
        var written = 0
        while written < packet.count {
            let count = packet.withUnsafeBytes { send(socket, $0.baseAddress! + written, packet.count - written, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                written += count
            } else if count < 0, errno == EAGAIN || errno == EINTR, waitFor(POLLOUT) {
                continue
            } else {
                break
            }
        }
        if written == packet.count, shutdown(socket, Int32(SHUT_WR)) == 0 {
            var scratch = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = scratch.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count == 0 { break }
                if count < 0, errno != EAGAIN && errno != EINTR { break }
                if count < 0, !waitFor(POLLIN) { break }
            }
        }
        // What libmosquitto's disconnect callback would have reported.
        let wasConnected = lock.withLock {
            defer { isConnected = false }
            return isConnected
        }
        if wasConnected { report(.disconnected(code: 0, reason: "disconnected on request")) }
    }

    /// The most `mosquitto_loop_read` calls in one turn.
    static let readCalls = 64

    /// Read batching (buffered-read sockets only). A turn that took at least `batchBytes`
    /// from the socket shows that messages arrive faster than the thread turns; from then on
    /// the socket's SO_RCVLOWAT is `batchBytes`, so `poll` wakes the thread once that much has
    /// arrived, and at most `batchWait` ms later it reads whatever came. One wake-up and read
    /// then take dozens of messages where they took one or two; the broker, whose writes are
    /// acknowledged less often, sends fewer and larger TCP segments. A turn that finds less
    /// than an eighth of `batchBytes` goes back to waking for every byte: a message waits at
    /// most `batchWait` for its batch, none after a quiet turn, and an idle connection does not
    /// wake every millisecond.
    static let batchBytes: Int32 = 4096
    static let batchWait: Int32 = 1

    /// How long (ms) a connected turn waits in `poll` with nothing to read, write or run: a
    /// quarter of the keepalive (at least 1 s; a minute without one). `mosquitto_loop_misc`
    /// sends the PINGREQ once `keepalive` passed since the last packet out or in, so it goes at
    /// most a quarter late, well before the broker's limit of one and a half keepalives; jobs
    /// and stops wake the thread through the eventfd, packets through the socket.
    var idleWait: Int32 {
        configuration.keepalive > 0 ? Int32(clamping: max(1000, configuration.keepalive * 250)) : 60_000
    }

    /// One turn of the connection loop, as `mosquitto_loop` does it but with the wake-up eventfd
    /// beside the socket: waits up to `timeout` ms for either, runs the queued jobs, reads what
    /// arrived, calls the delegate's `afterReads` (also when reading lost the connection), writes what is
    /// queued, and sends a PINGREQ when due. Returns libmosquitto's code: anything but success
    /// ends the connection.
    /// `reading`: false while stopping, when the turn only writes what is queued.
    private func turn(_ handle: OpaquePointer, timeout: Int32, reading: Bool, connecting: Bool, delegate: any MQTTClientDelegate) -> Int32 {
        let success = Int32(MOSQ_ERR_SUCCESS.rawValue)
        let socket = mosquitto_socket(handle)
        guard socket >= 0 else { return Int32(MOSQ_ERR_NO_CONN.rawValue) }
        // A new connection's socket (its close unregistered the last one).
        if configuration.bufferedReads, configuration.tls == nil, BufferedReads.isInterposed, !BufferedReads.isRegistered(socket) {
            BufferedReads.register(socket)
            batching.store(false, ordering: .relaxed)  // a new socket wakes for every byte
        }
        let writable = mosquitto_want_write(handle) ? Int16(POLLOUT) : 0
        // Packets already taken from the socket (a burst ended before them) are there to read
        // whatever poll says: no waiting then.
        let held = reading && BufferedReads.heldBytes(socket) > 0
        let batched = reading && batching.load(ordering: .relaxed)
        let wait = held ? 0 : batched ? min(timeout, Self.batchWait) : timeout
        let (ready, events, woken) = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { fds in
            fds[0] = pollfd(fd: socket, events: (reading ? Int16(POLLIN) : 0) | writable, revents: 0)
            fds[1] = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
            return (poll(fds.baseAddress, 2, wait), fds[0].revents, fds[1].revents != 0)
        }
        if ready < 0 { return errno == EINTR ? success : Int32(MOSQ_ERR_ERRNO.rawValue) }
        if woken { runJobs() }
        // Before the CONNACK, a writable socket may be a TLS handshake that can go on, and
        // libmosquitto takes that step in its read call (mosquitto_loop does it on writable).
        // Batching, the socket is read whatever poll said: fewer than `batchBytes` may be there.
        var read = success
        let taken = BufferedReads.takenBytes(socket)
        if reading, held || batched || events & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0 || (connecting && events & Int16(POLLOUT) != 0) {
            read = readBurst(handle, calls: connecting ? 1 : Self.readCalls)
        }
        if read == success, mosquitto_socket(handle) == socket, BufferedReads.isRegistered(socket) {
            adjustBatching(socket, took: BufferedReads.takenBytes(socket) - taken, batched: batched, held: held)
        }
        delegate.afterReads()
        if read != success || mosquitto_socket(handle) < 0 { return read }
        // The jobs, the packets just read (PUBACKs for QoS 1) and `afterReads` may have queued
        // packets.
        if mosquitto_want_write(handle) {
            let code = mosquitto_loop_write(handle, 1)
            if code != success || mosquitto_socket(handle) < 0 { return code }
        }
        return mosquitto_loop_misc(handle)
    }

    /// Begins batching after a turn that took `batchBytes` or more, ends it after one that took
    /// less than an eighth of that (see `batchBytes`). A turn that began with packets `held` in
    /// the buffer may begin it (a flood that first came in short reads keeps every later turn
    /// held until it ends) but not end it: what it took says little of the socket then.
    private func adjustBatching(_ socket: Int32, took: Int, batched: Bool, held: Bool) {
        let begin = !batched && took >= Int(Self.batchBytes)
        guard begin || (batched && !held && took < Int(Self.batchBytes) / 8) else { return }
        var lowWater: Int32 = begin ? Self.batchBytes : 1
        setsockopt(socket, SOL_SOCKET, SO_RCVLOWAT, &lowWater, socklen_t(MemoryLayout<Int32>.size))
        batching.store(begin, ordering: .relaxed)
        if begin { batchesBegun.add(1, ordering: .relaxed) }
    }

    /// Reads up to `calls` times. One call reads only as many packets as libmosquitto has QoS > 0
    /// messages in flight (at least one); under load reading on until the socket is empty (its
    /// last read() left EAGAIN) saves a poll() per packet or two. Bounded, so that jobs and
    /// writes wait for a bounded burst. Returns libmosquitto's code; the connection is lost when
    /// it is not success or the socket is closed.
    private func readBurst(_ handle: OpaquePointer, calls: Int) -> Int32 {
        let success = Int32(MOSQ_ERR_SUCCESS.rawValue)
        for _ in 0..<calls {
            errno = 0
            let code = mosquitto_loop_read(handle, 1)
            if code != success || mosquitto_socket(handle) < 0 { return code }
            if errno == EAGAIN { break }
        }
        return success
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
