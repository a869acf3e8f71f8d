import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts services in order and, on SIGTERM or SIGINT, shuts them down in reverse order
/// (so the gpsd reader stops first and the store closes last). SIGHUP calls `onReload` in a
/// task of its own, which a termination signal cancels.
///
/// Each service's `shutdown()` is awaited, and then the end of its `run()`, before the next
/// one's. The shutdown is bounded (docs/architecture.md "Start and shutdown"): each service
/// gets ``Timing/shutdownDeadline`` for both; one that takes longer is logged as an error and
/// the group goes on with the next (a stuck shutdown task is cancelled and left behind). Then
/// the `run()` calls still going get ``Timing/grace`` to return, and the ones still going
/// after it are cancelled (and logged).
public final class ServiceGroup: Sendable {
    /// The bounds of the shutdown.
    public struct Timing: Sendable {
        /// How long one service's `shutdown()` may take (seconds). Every service's own waits
        /// are bounded below it: the longest, the remote outbox's wait for its PUBACKs, is 5 s.
        public var shutdownDeadline: Double
        /// How long the `run()` calls still going after the ordered shutdown get before they
        /// are cancelled (seconds): an outbox's last progress commit, say.
        public var grace: Double

        public init(shutdownDeadline: Double, grace: Double) {
            self.shutdownDeadline = shutdownDeadline
            self.grace = grace
        }

        /// 10 s per service and 5 s of grace: with the gateway's 14 services or so, a stop
        /// takes at most a few minutes even if every part hangs (a normal one takes about a
        /// second). The systemd unit's `TimeoutStopSec` ends a slower one.
        public static let standard = Timing(shutdownDeadline: 10, grace: 5)
    }

    private let services: [any Service]
    private let logger: Logger
    private let timing: Timing
    private let onReload: (@Sendable () async -> Void)?
    /// Signals taken since before the group was built (`serve`), else made by ``run()``.
    private let early: SignalStream?
    /// The running group's signals, and whether ``stop()`` was called (before or during ``run()``).
    private let stopping = Mutex<(signals: SignalStream?, stopped: Bool)>((nil, false))

    /// `signals`: a stream made when the process began to start (SIGTERM, SIGINT, SIGHUP), so
    /// that a signal during start-up is kept for ``run()``.
    init(services: [any Service], logger: Logger, signals: SignalStream? = nil, timing: Timing = .standard,
         onReload: (@Sendable () async -> Void)? = nil) {
        self.services = services
        self.logger = logger
        self.timing = timing
        self.early = signals
        self.onReload = onReload
    }

    /// What ended in the group's task group.
    private enum Ended: Sendable {
        /// The `run()` of `services[index]` returned, or threw `error`.
        case service(index: Int, error: (any Error)?)
        /// The signal task: a termination signal or ``stop()``, or the stream's end.
        case signals
        /// The grace period after the ordered shutdown is over.
        case grace
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
        // Fired when each service's run() has returned (or thrown).
        let exits = services.map { _ in StopSignal() }
        let failure: (any Error)? = await withTaskGroup(of: Ended.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask { [logger] in
                    defer { exits[index].fire() }
                    do {
                        try await service.run()
                        return .service(index: index, error: nil)
                    } catch {
                        logger.error("service stopped with an error", ["service": service.name, "error": "\(error)"])
                        return .service(index: index, error: error)
                    }
                }
            }
            group.addTask { [logger, onReload, signals, timing] in
                // A reload runs beside this loop, so a termination signal during a long one is
                // taken at once: the reload is cancelled and the shutdown starts once it has
                // ended (within the shutdown deadline). A SIGHUP during a reload runs after it.
                var reload: Task<Void, Never>?
                for await signal in signals.stream {
                    if signal == SIGHUP {
                        logger.notice("SIGHUP: reloading fences and triggers")
                        let previous = reload
                        reload = Task {
                            await withTaskCancellationHandler { await previous?.value } onCancel: { previous?.cancel() }
                            guard !Task.isCancelled else { return }
                            await onReload?()
                        }
                        continue
                    }
                    logger.notice("shutting down", ["signal": signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "none (stop())"])
                    break
                }
                if let reload {
                    reload.cancel()
                    let ended = StopSignal()
                    Task {
                        await reload.value
                        ended.fire()
                    }
                    _ = await ended.sleep(seconds: timing.shutdownDeadline)
                    if !ended.isFired {
                        logger.error("the reload did not end in time; shutting down beside it", ["deadline.seconds": "\(timing.shutdownDeadline)"])
                    }
                }
                return .signals
            }
            var running = Set(services.indices)
            var failure: (any Error)?
            func note(_ ended: Ended?) {
                guard case .service(let index, let error)? = ended else { return }
                running.remove(index)
                if let error, failure == nil { failure = error }
            }
            // Whichever ends first (normally the signal task) starts the ordered shutdown.
            note(await group.next())
            // In a task of its own: a cancelled caller still gets the ordered shutdown, with
            // deadlines that its cancellation does not cut short.
            await Task { await shutDownInReverse(exits: exits) }.value
            signals.cancel()
            // The run() calls still going get the grace period, then are cancelled.
            if !running.isEmpty {
                group.addTask { [grace = timing.grace] in
                    try? await Task.sleep(for: .milliseconds(Int((grace * 1000).rounded(.up))))
                    return .grace
                }
            }
            var cancelled = false
            while let ended = await group.next() {
                note(ended)
                if case .grace = ended, !running.isEmpty {
                    cancelled = true
                    logger.error("services still running after the shutdown and its grace period; cancelled", [
                        "services": running.sorted().map { services[$0].name }.joined(separator: ","),
                        "grace.seconds": "\(timing.grace)",
                    ])
                    group.cancelAll()
                } else if running.isEmpty, !cancelled {
                    cancelled = true
                    group.cancelAll()  // only the grace timer (and the ended signal task) is left
                }
            }
            return failure
        }
        if let failure { throw failure }
    }

    /// Calls every service's `shutdown()` in the reverse order and awaits the end of its
    /// `run()` (`exits`, by index), both within ``Timing/shutdownDeadline``, before the next: a
    /// service stops only once the ones started after it have ended. One that takes longer is
    /// logged (its shutdown task cancelled) and the group goes on with the next.
    private func shutDownInReverse(exits: [StopSignal]) async {
        for (index, service) in services.enumerated().reversed() {
            let started = MonotonicClock.now()
            let done = StopSignal()
            let shutdown = Task {
                await service.shutdown()
                done.fire()
            }
            _ = await done.sleep(seconds: timing.shutdownDeadline)
            guard done.isFired else {
                shutdown.cancel()
                logger.error("service did not shut down in time; going on with the next", [
                    "service": service.name, "deadline.seconds": "\(timing.shutdownDeadline)",
                ])
                continue
            }
            _ = await exits[index].sleep(seconds: max(0, started + timing.shutdownDeadline - MonotonicClock.now()))
            if !exits[index].isFired {
                logger.error("service's run did not end in time after its shutdown; going on with the next", [
                    "service": service.name, "deadline.seconds": "\(timing.shutdownDeadline)",
                ])
            }
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

    /// Asks for a reload as SIGHUP does (an in-process gateway has no signal of its own).
    func reload() { continuation.yield(SIGHUP) }

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
