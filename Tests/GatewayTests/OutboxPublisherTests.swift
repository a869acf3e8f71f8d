import Foundation
import MQTT
import Store
import Synchronization
import Testing
import TestSupport

@testable import Gateway

/// `OutboxPublisher` on its own, against a real mosquitto and a real database file.
@Suite struct OutboxPublisherTests {
    /// QoS 0 events cannot be handed to libmosquitto without a connection: the pump stops at the
    /// first and hands nothing on. After the connect every one goes out, in order and once, in
    /// batches of the window, and the broker's "written" acknowledgements empty the outbox.
    @Test(.timeLimit(.minutes(2))) func qos0EventsWaitForTheConnectionThenGoOutInOrder() async throws {
        let directory = try TemporaryDirectory(prefix: "outbox")
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        var batch = StoreBatch()
        for i in 0..<30 {
            batch.outbox.append(OutboxMessage(destination: .local, eventID: "e\(i)", topic: "t/outbox",
                                              payload: Array("\(i)".utf8), qos: 0))
        }
        _ = try await store.submit(batch)

        let broker = try MosquittoProcess()
        let subscriber = try MQTTProbe(port: broker.port, clientId: DurabilityRig.unique("sub"))
        defer { subscriber.stop() }
        subscriber.collect()
        try subscriber.client.subscribe("t/outbox", qos: .atLeastOnce)
        try subscriber.client.start()
        #expect(await subscriber.waitSubscribed("t/outbox"))

        let logger = Logger(label: "test")
        // The acknowledgements go to the publisher, as `serve` routes them.
        let route = Mutex<OutboxPublisher?>(nil)
        let client = try MQTTClient(MQTTConfiguration(port: broker.port, clientId: DurabilityRig.unique("gw")),
                                    onAcknowledgement: { ack in route.withLock { $0 }?.acknowledged(ack) })
        let publisher = OutboxPublisher(
            destination: .local, client: client, store: store, window: 8, counters: GatewayCounters(),
            warnings: Warnings(logger: logger), logger: logger)
        route.withLock { $0 = publisher }
        let run = Task { try await publisher.run() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(subscriber.messages.count == 0)
        #expect(publisher.inflightCount.load(ordering: .relaxed) == 0)

        try client.start()
        #expect(await poll { client.isConnected })
        publisher.connected()
        #expect(await subscriber.waitMessages(30))
        try await Task.sleep(for: .milliseconds(200))
        #expect(subscriber.messages.all.map(\.payloadText) == (0..<30).map(String.init))
        #expect(await poll { (try? await store.outbox(.local, limit: 100).isEmpty) == true })

        await publisher.shutdown()
        _ = try? await run.value
        client.stop()
    }
}
