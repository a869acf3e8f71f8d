import Foundation
import Synchronization
import Testing
import TestSupport

@testable import Gateway

/// A gateway built by ``GatewayServer/build(_:configFile:logger:)`` from a config file, as
/// `serve` builds it, running in the test's process (so a test can look at its parts: the
/// store, the committer, the counters), without its process-wide thread priorities. ``stop()``
/// shuts it down as SIGTERM does.
final class InProcessGateway: Sendable {
    let server: GatewayServer
    private let running = Mutex<Task<Void, any Error>?>(nil)

    /// Builds the gateway of `configFile` and, if `start`, starts it (else ``start()`` does, so
    /// a test can commit rows to its store before the clients and services start).
    init(configFile: String, start: Bool = true) async throws {
        let setup = try GatewaySetup.load(configFile: configFile)
        server = try await GatewayServer.build(setup, configFile: configFile, logger: Logger(label: "in-process"), ownsProcess: false)
        if start { self.start() }
    }

    /// Starts the clients and runs the services (``GatewayServer/run()``); once only.
    func start() {
        running.withLock { task in
            precondition(task == nil, "the gateway was started already")
            task = Task { [server] in try await server.run() }
        }
    }

    /// Shuts the gateway down and waits for it (its database is closed then; also when it was
    /// never started).
    func stop() async throws {
        server.stop()
        guard let task = running.withLock({ $0 }) else { return await server.store.close() }
        try await task.value
    }
}
