internal import CGPS
#if canImport(Glibc)
import Glibc
#endif

/// The body of a `GPSDReader`'s thread: connect, read, yield, reconnect with backoff.
final class ReaderLoop: Sendable {
    let configuration: GPSDReader.Configuration
    let continuation: AsyncStream<GPSDEvent>.Continuation
    let stopSignal: StopSignal
    let clock: @Sendable () -> Double

    init(
        configuration: GPSDReader.Configuration,
        continuation: AsyncStream<GPSDEvent>.Continuation, stopSignal: StopSignal,
        clock: @escaping @Sendable () -> Double
    ) {
        self.configuration = configuration
        self.continuation = continuation
        self.stopSignal = stopSignal
        self.clock = clock
    }

    /// Runs until stopped, then finishes the stream. Blocks the calling (dedicated) thread.
    func run() {
        var tracker = GPSDFixTracker(clockSkewThreshold: configuration.clockSkewThreshold)
        let initialBackoff = max(0.01, configuration.initialBackoff)
        var backoff = initialBackoff
        while !stopSignal.isRequested {
            let failure: GPSDError
            do {
                let connection = try GPSDConnection(
                    host: configuration.host, port: configuration.port)
                continuation.yield(.connected)
                tracker.connectionStarted()
                backoff = initialBackoff
                guard let error = read(from: connection, tracker: &tracker) else { break }
                failure = error
            } catch {
                failure = error
            }
            continuation.yield(.disconnected(failure))
            pause(seconds: backoff)
            backoff = min(backoff * 2, max(initialBackoff, configuration.maximumBackoff))
        }
        continuation.finish()
    }

    /// Reads reports until the connection fails (returns the error) or a stop (returns nil).
    private func read(from connection: GPSDConnection, tracker: inout GPSDFixTracker)
        -> GPSDError?
    {
        while !stopSignal.isRequested {
            // An epoch's fix held for its missing fields is due after the tracker's settle time.
            var timeout = configuration.pollInterval
            if let deadline = tracker.releaseDeadline {
                let now = clock()
                yield(tracker.release(now: now, force: false))
                timeout = min(timeout, max(0, deadline - now))
            }
            guard connection.waitForReport(timeout: timeout) else { continue }
            let report: GPSDReport
            do {
                report = try connection.readReport()
            } catch {
                // What the lost connection delivered still counts.
                yield(tracker.release(now: clock(), force: true))
                return error
            }
            guard case .tpv(let tpv) = report else { continue }
            yield(tracker.events(for: tpv, now: clock()))
        }
        return nil
    }

    private func yield(_ events: [GPSDEvent]) {
        for event in events { continuation.yield(event) }
    }

    /// Sleeps `seconds`, waking early when a stop is requested.
    private func pause(seconds: Double) {
        var remaining = seconds
        let slice = max(0.01, min(configuration.pollInterval, 0.05))
        while remaining > 0, !stopSignal.isRequested {
            let step = min(slice, remaining)
            var request = timespec(
                tv_sec: Int(step), tv_nsec: Int((step - Double(Int(step))) * 1e9))
            nanosleep(&request, nil)
            remaining -= step
        }
    }
}
