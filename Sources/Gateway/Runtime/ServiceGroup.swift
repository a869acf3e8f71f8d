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
    /// The running group's signals, and whether ``stop()`` was called (before or during ``run()``).
    private let stopping = Mutex<(signals: SignalStream?, stopped: Bool)>((nil, false))

    public init(services: [any Service], logger: Logger, onReload: (@Sendable () async -> Void)? = nil) {
        self.services = services
        self.logger = logger
        self.onReload = onReload
    }

    /// Runs every service until a termination signal, or until one of them fails (then the
    /// others are shut down too and the error is rethrown).
    public func run() async throws {
        let signals = SignalStream(signals: [SIGTERM, SIGINT, SIGHUP])
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
                    logger.notice("\(signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "stop()"): shutting down")
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

/// Delivers POSIX signals as an AsyncStream through Dispatch signal sources.
final class SignalStream: Sendable {
    let stream: AsyncStream<Int32>
    private let sources: Mutex<[any DispatchSourceSignal]>
    private let continuation: AsyncStream<Int32>.Continuation

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        self.continuation = continuation
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = Mutex(sources)
    }

    /// Ends the stream's wait as a termination signal would (0: not a signal).
    func stop() { continuation.yield(0) }

    func cancel() {
        sources.withLock { for source in $0 { source.cancel() } }
        continuation.finish()
    }
}
