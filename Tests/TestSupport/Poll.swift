import Foundation

/// Checks `condition` every `interval` until it holds or `timeout` passes; returns whether it
/// held. Use it instead of a fixed sleep: `#expect(await poll { received.count == 10 })`.
/// The default timeout is generous, for 2 loaded cores.
public func poll(
    timeout: Duration = .seconds(30), interval: Duration = .milliseconds(20),
    until condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if try await condition() { return true }
        if clock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// The blocking form of `poll`, for plumbing that is not async (process start and stop).
public func pollBlocking(
    timeout: Duration = .seconds(30), interval: Duration = .milliseconds(20), until condition: () -> Bool
) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while true {
        if condition() { return true }
        if clock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
    }
}
