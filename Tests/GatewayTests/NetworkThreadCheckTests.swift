import Foundation
import MQTT
import Store
import Testing
import TestSupport

@testable import Gateway

/// The owners of a client's network thread (``LocalBrokerLink``, ``UpstreamLink``) check in debug
/// builds that they run there (``MQTTClient/assertOnNetworkThread(_:)``): called from any other
/// thread they trap, which only a child process can show. On the network thread they pass:
/// every serve test goes through them.
@Suite struct NetworkThreadCheckTests {
    /// An upstream link over a client that never starts, with its outbox.
    static func link() async throws -> (UpstreamLink, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let logger = Logger(label: "thread-check")
        let warnings = Warnings(logger: logger)
        let client = try MQTTClient(MQTTConfiguration(clientId: "thread-check"))
        let outbox = OutboxPublisher(destination: .remote, client: client, store: store, window: 4,
                                     counters: GatewayCounters(), warnings: warnings, logger: logger)
        let connection = BrokerConnection(label: "remote", client: client, warnings: warnings, logger: logger)
        return (UpstreamLink(connection: connection, outbox: outbox), directory)
    }

    @Test func buildingTheLinkOffTheNetworkThreadDoesNotTrap() async throws {
        let (link, _) = try await Self.link()
        #expect(!link.connection.client.isNetworkThread)
    }

    #if DEBUG
    @Test func theUpstreamsAcknowledgementOffTheNetworkThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (link, _) = try await NetworkThreadCheckTests.link()
            link.handle(.acknowledged(MQTTAcknowledgement(messageId: 1, reasonCode: 0)))
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("handle(_:) must run on the client's network thread"))
    }

    @Test func theUpstreamsAfterReadsOffTheNetworkThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let (link, _) = try await NetworkThreadCheckTests.link()
            link.afterReads()
        }
    }
    #endif
}
