import Foundation
import MQTT
import Testing
import TestSupport

/// A delegate that takes every message and copies payloads only up to `limit` bytes.
private final class PayloadLimitDelegate: MQTTClientDelegate {
    let limit: Int
    let taken = Recorder<MQTTMessage>()
    let events = Recorder<MQTTClientEvent>()

    init(limit: Int) { self.limit = limit }

    func acceptsPayload(size: Int, topic: String) -> Bool { size <= limit }
    func take(_ message: MQTTMessage) -> Bool {
        taken.append(message)
        return true
    }
    func afterReads() {}
    func handle(_ event: MQTTClientEvent) { events.append(event) }
}

extension MQTTIntegrationTests {
    /// `MQTTConfiguration.maximumPacketSize` against the real mosquitto, and payloads the
    /// delegate declines arriving without a copy.
    @Suite struct PacketLimits {
        @Test func brokerDropsLargerPacketsAndDeclinedPayloadsAreNotCopied() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("limit")
            var configuration = MQTTConfiguration(
                port: broker.port, clientId: unique("limited"), sessionExpiry: 3600,
                reconnect: .init(minimum: .milliseconds(200), maximum: .seconds(1)))
            configuration.maximumPacketSize = 4_000
            let subscriber = try MQTTClient(configuration)
            let delegate = PayloadLimitDelegate(limit: 1_000)
            subscriber.setDelegate(delegate)
            defer { subscriber.stop() }
            try subscriber.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.start()
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            let subscribed = await poll {
                delegate.events.contains { if case .connection(.subscribed(let filters, let codes)) = $0 { filters == ["\(prefix)/#"] && codes.allSatisfy { $0 < 0x80 } } else { false } }
            }
            #expect(subscribed, "\(delegate.events.all)")

            // In order: copied, declined (offered empty), over the packet size (never sent), a marker.
            let sizes = [500, 2_000, 10_000, 10]
            var ids: [Int32] = []
            for (index, size) in sizes.enumerated() {
                ids.append(try publisher.client.publish(
                    topic: "\(prefix)/\(index)", payload: [UInt8](repeating: UInt8(ascii: "x"), count: size), qos: .atLeastOnce))
            }
            #expect(await publisher.waitAcknowledged(ids))
            #expect(await poll { delegate.taken.contains { $0.topic == "\(prefix)/3" } }, "\(broker.log.suffix(2000))")
            let taken = delegate.taken.all
            print("packet limit 4000, copy limit 1000: received",
                  taken.map { "\($0.topic.split(separator: "/").last!): \($0.payload.count) of \($0.payloadSize) bytes copied" })
            #expect(taken.map(\.topic) == ["\(prefix)/0", "\(prefix)/1", "\(prefix)/3"], "the 10,000-byte packet is dropped by the broker")
            #expect(taken.map(\.payload.count) == [500, 0, 10])
            #expect(taken.map(\.payloadSize) == [500, 2_000, 10])
            #expect(taken.map(\.isPayloadOmitted) == [false, true, false])
        }
    }
}
