import Foundation
import GeotriggerCore
import Testing
import TestSupport

@testable import Gateway

extension ServeTests {
    /// A SIGHUP reload leaves nothing of the previous fences behind: once the shards took the
    /// new snapshot, the start's snapshot (and with it its prepared fences) is gone, so the
    /// gateway goes back to its steady size (docs/architecture.md "Start and shutdown";
    /// `bench`-measured with a million fences in docs/performance.md).
    @Suite struct ReloadMemory {
        /// Holds what the test must not keep alive itself.
        final class Watch: @unchecked Sendable {
            weak var snapshot: EngineSnapshot?
            weak var fence: PreparedFence?
        }

        @Test func aReloadLetsGoOfTheStartsFences() async throws {
            let h = try ServeHarness("reload-memory")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config())
            let watch = Watch()
            let signals = SignalStream(signals: [])
            // Built in a scope of its own, so that only the gateway holds the loaded setup.
            let server = try await { () async throws -> GatewayServer in
                let setup = try GatewaySetup.load(configFile: config)
                watch.snapshot = setup.snapshot
                watch.fence = setup.snapshot.fences.first
                return try await GatewayServer.build(setup, configFile: config, logger: Logger(label: "reload"), ownsProcess: false, signals: signals)
            }()
            #expect(watch.snapshot != nil && watch.fence != nil)
            let running = Task { try await server.run() }
            signals.reload()
            let released = await poll(timeout: .seconds(30)) { watch.snapshot == nil && watch.fence == nil }
            #expect(released, "the start's snapshot is still held after the reload (snapshot \(watch.snapshot == nil ? "gone" : "kept"), fence \(watch.fence == nil ? "gone" : "kept"))")
            server.stop()
            try await running.value
        }
    }
}
