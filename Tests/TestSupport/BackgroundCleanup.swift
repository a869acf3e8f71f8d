import Foundation

/// Cleanup that waits for processes to exit (a gateway's SIGTERM, a broker's stop), run on a
/// thread of its own instead of the test's: the whole run's tests share a cooperative pool of
/// one thread per core (two on CI), and a test's `defer` that waits a second for a gateway to
/// stop holds one of them, stalling every other test's `await` meanwhile. The process waits
/// for every cleanup (up to a minute) before it exits, so no process outlives the run.
public enum BackgroundCleanup {
    private static let pending = DispatchGroup()
    private static let waitAtExit: Void = {
        atexit { _ = BackgroundCleanup.pending.wait(timeout: .now() + 60) }
    }()

    /// Runs `body` on a new thread; returns at once.
    public static func run(_ body: @escaping @Sendable () -> Void) {
        _ = waitAtExit
        pending.enter()
        Thread.detachNewThread {
            body()
            pending.leave()
        }
    }
}
