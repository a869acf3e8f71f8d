import MQTT

/// Keeps every thread of the process below the MQTT network threads (``ThreadPriorities``),
/// once each client's network thread runs. A thread inherits its creator's nice value, so most
/// new threads start lowered; one a network thread created (a worker it woke) does not, so it
/// looks again: 2 s after a look that lowered some thread, else twice as long as the last time,
/// up to ``longestInterval`` (an idle gateway, whose threads are all lowered, wakes for it once
/// a minute). A change to the whole process, so a service of its own.
final class NetworkThreadPriority: Service, Sendable {
    let name = "thread-priorities"
    let clients: [MQTTClient]
    let logger: Logger
    private let stop = StopSignal()
    /// The first and the longest time between two looks (seconds).
    static let shortestInterval: Double = 2
    static let longestInterval: Double = 60

    init(clients: [MQTTClient], logger: Logger) {
        self.clients = clients
        self.logger = logger
    }

    func run() async throws {
        var interval = Self.shortestInterval
        await repeating(until: stop) {
            // Only once every network thread runs: one not started yet must not be lowered.
            let exempt = clients.map(\.networkThreadID)
            var lowered = 0
            if !exempt.isEmpty, !exempt.contains(nil) {
                lowered = ThreadPriorities.lowerAll(except: exempt.compactMap { $0 })
                if lowered > 0 { logger.debug("lowered thread priorities below the MQTT network threads", ["threads": "\(lowered)"]) }
                interval = lowered > 0 ? Self.shortestInterval : min(Self.longestInterval, interval * 2)
            }
            return MonotonicClock.now() + interval
        }
    }

    func shutdown() async { stop.fire() }
}
