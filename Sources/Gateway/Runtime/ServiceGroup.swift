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
            group.addTask { [logger, onReload] in
                for await signal in signals.stream {
                    if signal == SIGHUP {
                        logger.notice("SIGHUP: reloading fences and triggers")
                        await onReload?()
                        continue
                    }
                    logger.notice("signal \(signal == SIGTERM ? "SIGTERM" : "SIGINT"): shutting down")
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

    func cancel() {
        sources.withLock { for source in $0 { source.cancel() } }
        continuation.finish()
    }
}
