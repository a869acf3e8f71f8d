import Foundation
import Testing
import TestSupport

@testable import Gateway

/// A gateway built by ``GatewayServer/build(_:configFile:logger:)`` from a config file, as
/// `serve` builds it, running in the test's process (so a test can look at its parts: the
/// store, the committer, the counters), without its process-wide thread priorities. ``stop()``
/// shuts it down as SIGTERM does.
final class InProcessGateway: Sendable {
    let server: GatewayServer
    private let running: Task<Void, any Error>

    /// Builds the gateway of `configFile` and starts it.
    init(configFile: String) async throws {
        let setup = try GatewaySetup.load(configFile: configFile)
        server = try await GatewayServer.build(setup, configFile: configFile, logger: Logger(label: "in-process"), ownsProcess: false)
        running = Task { [server] in try await server.run() }
    }

    /// Shuts the gateway down and waits for it (its database is closed then).
    func stop() async throws {
        server.stop()
        try await running.value
    }
}
