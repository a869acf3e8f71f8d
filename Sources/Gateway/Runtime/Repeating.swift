import Synchronization

/// Runs `body` at once and then every `interval` seconds (on the monotonic clock) until
/// `stopped` is set, looking at `stopped` four times a second: the loop of the gateway's
/// periodic services (journal retention, thread priorities).
func repeating(every interval: Double, until stopped: borrowing Atomic<Bool>, _ body: () async -> Void) async {
    var next = 0.0
    while !stopped.load(ordering: .relaxed) {
        let now = MonotonicClock.now()
        if now >= next {
            next = now + interval
            await body()
        }
        try? await Task.sleep(for: .milliseconds(250))
    }
}
