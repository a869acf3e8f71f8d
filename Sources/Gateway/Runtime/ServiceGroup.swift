import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts services in order and, on SIGTERM or SIGINT, shuts them down in reverse order
/// (so the gpsd reader stops first and the store closes last). SIGHUP calls `onReload`.
public final class ServiceGroup: Sendable {
    private let services: [any Service]
    private let logger: Logger
    private let onReload: (@Sendable () async -> Void)?
    /// Signals taken since before the group was built (`serve`), else made by ``run()``.
    private let early: SignalStream?
    /// The running group's signals, and whether ``stop()`` was called (before or during ``run()``).
    private let stopping = Mutex<(signals: SignalStream?, stopped: Bool)>((nil, false))

    /// `signals`: a stream made when the process began to start (SIGTERM, SIGINT, SIGHUP), so
    /// that a signal during start-up is kept for ``run()``.
    init(services: [any Service], logger: Logger, signals: SignalStream? = nil, onReload: (@Sendable () async -> Void)? = nil) {
        self.services = services
        self.logger = logger
        self.early = signals
        self.onReload = onReload
    }

    /// Runs every service until a termination signal, or until one of them fails (then the
    /// others are shut down too and the error is rethrown).
    public func run() async throws {
        let signals = early ?? SignalStream.gateway()
        defer { signals.cancel() }
        let stopped = stopping.withLock { state in
            state.signals = signals
            return state.stopped
        }
        if stopped { signals.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { [logger] in
                    do {
                        try await service.run()
                    } catch {
                        logger.error("service stopped with an error", ["service": service.name, "error": "\(error)"])
                        throw error
                    }
                }
            }
            group.addTask { [logger, onReload, signals] in
                for await signal in signals.stream {
                    if signal == SIGHUP {
                        logger.notice("SIGHUP: reloading fences and triggers")
                        await onReload?()
                        continue
                    }
                    logger.notice("shutting down", ["signal": signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "none (stop())"])
                    return
                }
            }
            // Whichever ends first (normally the signal task) starts the ordered shutdown.
            var failure: (any Error)?
            do { try await group.next() } catch { failure = error }
            for service in services.reversed() { await service.shutdown() }
            signals.cancel()
            while !group.isEmpty {
                do { try await group.next() } catch { failure = failure ?? error }
            }
            if let failure { throw failure }
        }
    }
}

extension ServiceGroup {
    /// Starts the ordered shutdown as SIGTERM does (for a group run in process, such as a test's).
    public func stop() {
        let signals = stopping.withLock { state in
            state.stopped = true
            return state.signals
        }
        signals?.stop()
    }
}

/// Delivers POSIX signals as an AsyncStream. The signals' handlers are installed at once
/// (``SignalHub``), so a signal that arrives while the gateway is still starting is kept and
/// taken by ``ServiceGroup/run()`` when it begins: a SIGTERM during start-up stops the gateway
/// in order, never lost, never the default action.
final class SignalStream: Sendable {
    let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    private let registration: Int

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        self.continuation = continuation
        registration = SignalHub.shared.register(signals: signals) { continuation.yield($0) }
    }

    /// The signals a ``ServiceGroup`` takes: SIGTERM, SIGINT (stop), SIGHUP (reload).
    static func gateway() -> SignalStream { SignalStream(signals: [SIGTERM, SIGINT, SIGHUP]) }

    /// Ends the stream's wait as a termination signal would (0: not a signal).
    func stop() { continuation.yield(0) }

    func cancel() {
        SignalHub.shared.unregister(registration)
        continuation.finish()
    }
}

/// The process's handlers for the signals ``SignalStream``s wait for: each writes the signal's
/// number into a pipe (all a handler may safely do), and one thread reads the pipe and hands
/// each number to the streams registered for it. Once installed, a handler stays: a signal
/// nobody waits for any more is ignored.
final class SignalHub: Sendable {
    static let shared = SignalHub()

    private struct Listener {
        var signals: Set<Int32>
        var deliver: @Sendable (Int32) -> Void
    }

    private let state = Mutex<(next: Int, listeners: [Int: Listener], installed: Set<Int32>)>((0, [:], []))
    private let readEnd: Int32

    private init() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { fatalError("pipe for signal delivery failed: errno \(errno)") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        readEnd = fds[0]
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        signalPipeWriteEnd.store(fds[1], ordering: .releasing)
        // A thread of its own, blocked in read(2) for the life of the process.
        DispatchQueue(label: "geotrigger.signals").async { [self] in readLoop() }
    }

    func register(signals: [Int32], deliver: @escaping @Sendable (Int32) -> Void) -> Int {
        state.withLock { state in
            for number in signals where state.installed.insert(number).inserted {
                _ = signal(number) { number in
                    var byte = UInt8(truncatingIfNeeded: number)
                    _ = write(signalPipeWriteEnd.load(ordering: .acquiring), &byte, 1)
                }
            }
            state.next += 1
            state.listeners[state.next] = Listener(signals: Set(signals), deliver: deliver)
            return state.next
        }
    }

    func unregister(_ registration: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: registration) }
    }

    private func readLoop() {
        var byte: UInt8 = 0
        while true {
            let n = read(readEnd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            guard n == 1 else { return }
            let number = Int32(byte)
            let deliveries = state.withLock { $0.listeners.values.filter { $0.signals.contains(number) }.map(\.deliver) }
            for deliver in deliveries { deliver(number) }
        }
    }
}

/// The signal pipe's write end, for the handlers (a C function pointer captures nothing).
private let signalPipeWriteEnd = Atomic<Int32>(-1)
