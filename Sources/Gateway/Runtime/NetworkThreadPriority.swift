import MQTT

/// Keeps every thread of the process below the MQTT network threads (``ThreadPriorities``):
/// every 2 s, once each client's network thread runs, since threads appear later (the pool
/// grows, a store job runs on a new worker). A change to the whole process, so a service of
/// its own.
final class NetworkThreadPriority: Service, Sendable {
    let name = "thread-priorities"
    let clients: [MQTTClient]
    let logger: Logger
    private let stop = StopSignal()

    init(clients: [MQTTClient], logger: Logger) {
        self.clients = clients
        self.logger = logger
    }

    func run() async throws {
        await repeating(every: 2, until: stop) {
            // Only once every network thread runs: one not started yet must not be lowered.
            let exempt = clients.map(\.networkThreadID)
            if !exempt.isEmpty, !exempt.contains(nil) {
                let lowered = ThreadPriorities.lowerAll(except: exempt.compactMap { $0 })
                if lowered > 0 { logger.debug("lowered thread priorities below the MQTT network threads", ["threads": "\(lowered)"]) }
            }
        }
    }

    func shutdown() async { stop.fire() }
}
