internal import CGPS
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Reads the gateway's own receiver from gpsd on a dedicated thread and yields `events`.
///
/// `start()` starts one POSIX thread that connects (`GPSDConnection`), waits for reports with
/// `gps_waiting` timeouts of `pollInterval` (so `stop()` is prompt), turns TPV reports into
/// `.fix`/`.noFix`/`.clockSkew`, and on failure yields `.disconnected` and retries with
/// exponential backoff until `stop()`. The stream finishes when the thread ends (after
/// `stop()`, or when the consumer stops iterating). The blocking libgps calls never run on the
/// Swift cooperative pool.
public final class GPSDReader: Sendable {
    /// Where gpsd is and how the reader behaves.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// First wait after a failed attempt; doubles per failure up to `maximumBackoff`.
        public var initialBackoff: Double
        public var maximumBackoff: Double
        /// Longest wait inside one `gps_waiting` call; bounds how long `stop()` takes.
        public var pollInterval: Double
        /// |fix time − system time| above this many seconds yields `.clockSkew`.
        public var clockSkewThreshold: Double
        /// Events kept for a consumer that falls behind; beyond it the oldest are dropped.
        public var bufferLimit: Int

        public init(
            host: String = "127.0.0.1", port: Int = 2947, initialBackoff: Double = 0.5,
            maximumBackoff: Double = 30, pollInterval: Double = 0.25,
            clockSkewThreshold: Double = 300, bufferLimit: Int = 1024
        ) {
            self.host = host
            self.port = port
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.pollInterval = pollInterval
            self.clockSkewThreshold = clockSkewThreshold
            self.bufferLimit = bufferLimit
        }
    }

    public let configuration: Configuration
    /// The events, in order; iterate once. Finishes after `stop()`.
    public let events: AsyncStream<GPSDEvent>
    private let continuation: AsyncStream<GPSDEvent>.Continuation
    private let stopSignal: StopSignal
    private let started = Mutex(false)
    private let clock: @Sendable () -> Double

    /// A reader for gpsd at `configuration.host`:`configuration.port`; `clock` gives the system
    /// time in seconds since 1970 for the clock skew check.
    public init(
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Double = GPSDReader.systemTime
    ) {
        self.configuration = configuration
        self.clock = clock
        let (stream, continuation) = AsyncStream.makeStream(
            of: GPSDEvent.self, bufferingPolicy: .bufferingNewest(max(1, configuration.bufferLimit)))
        self.events = stream
        self.continuation = continuation
        let stopSignal = StopSignal()
        self.stopSignal = stopSignal
        continuation.onTermination = { _ in stopSignal.request() }
    }

    deinit {
        stopSignal.request()
    }

    /// Starts the reader thread; later calls do nothing.
    public func start() {
        let first = started.withLock { started in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let loop = ReaderLoop(
            configuration: configuration, continuation: continuation, stopSignal: stopSignal,
            clock: clock)
        let context = Unmanaged.passRetained(loop).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                geotrigger_gps_name_thread("gpsd-reader")
                Unmanaged<ReaderLoop>.fromOpaque(context).takeRetainedValue().run()
                return nil
            }, context)
        if result == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<ReaderLoop>.fromOpaque(context).release()
            continuation.yield(
                .disconnected(GPSDError(code: result, message: "cannot start the reader thread",
                                        call: "pthread_create")))
            continuation.finish()
        }
    }

    /// Asks the reader to stop: it closes its connection and finishes `events` within about
    /// `pollInterval`. Does not wait.
    public func stop() {
        stopSignal.request()
        let neverStarted = started.withLock { started in
            defer { started = true }
            return !started
        }
        if neverStarted { continuation.finish() }
    }

    /// The system clock in seconds since 1970 (`CLOCK_REALTIME`).
    public static let systemTime: @Sendable () -> Double = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }
}

/// A flag the consumer side sets and the reader thread polls.
final class StopSignal: Sendable {
    private let flag = Atomic(false)
    func request() { flag.store(true, ordering: .releasing) }
    var isRequested: Bool { flag.load(ordering: .acquiring) }
}
