import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/operations.md "Deploying on a Raspberry Pi" and `input.maxPayload`
    /// (docs/configuration.md "The config file"):
    /// with v5 the gateway announces a Maximum Packet Size (what it needs: the 1 MiB runtime
    /// fence limit, or `input.maxPayload` when larger, plus the headers), so the broker never
    /// delivers it a larger packet; a feed payload over `input.maxPayload` that fits is dropped
    /// as `oversize`.
    @Suite struct PacketLimits {
        @Test func brokerKeepsLargerPacketsFromTheGatewayAndOversizeIsCounted() async throws {
            let h = try ServeHarness("packets")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config(
                extra: "input: { maxPayload: 1024 },\n" + Security.feeds(h)))
            let input = "\(h.prefix)-in/devices/walker/location"
            // The watcher announces no limit: it receives the large packet the gateway must not.
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic, "\(h.prefix)-in/#"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            let oversize = Array(Payload.json(lat: 34.4570, lon: -119.7125, time: t0 - 5).utf8)
                + [UInt8](repeating: UInt8(ascii: " "), count: 5_000)
            let huge = [UInt8](repeating: UInt8(ascii: " "), count: 2 << 20)  // 2 MiB: over the announced size
            let ids = [
                try publisher.client.publish(topic: input, payload: oversize, qos: .atLeastOnce),
                try publisher.client.publish(topic: input, payload: huge, qos: .atLeastOnce),
            ]
            #expect(await publisher.waitAcknowledged(ids))
            #expect(publisher.acknowledgements.all.filter { ids.contains($0.messageId) }.allSatisfy { $0.isSuccess },
                    "the broker took both (this broker has no message_size_limit)")
            // The two valid updates after them give an enter: the gateway read past both.
            try await Security.expectEnter(h, watcher: watcher, publisher: publisher, gateway: gateway)
            #expect(await poll(timeout: .seconds(30)) { watcher.received(on: input).contains { $0.payloadSize == huge.count } },
                    "the 2 MiB packet reached a client without a limit")

            let counted = await watcher.waitStatus(h.statusTopic) { $0.counter("received") >= 3 && $0.dropped("oversize") >= 1 }
            #expect(counted.ok, "\(counted.status?.description ?? "no status")")
            let status = try #require(counted.status)
            print("packet limit: 5,000-byte payload (input.maxPayload 1024) -> dropped.oversize \(status.dropped("oversize"));",
                  "2 MiB payload -> not delivered to the gateway (received \(status.counter("received")) = the oversize one and 2 valid updates);",
                  "the watcher without a limit got \(watcher.received(on: input).count) messages on the input topic")
            #expect(status.counter("received") == 3, "the 2 MiB packet never reached the gateway: \(status)")
            #expect(status.dropped("oversize") == 1, "\(status)")
            #expect(status.counter("accepted") == 2, "\(status)")
            #expect(gateway.log.contains("oversize"), "\(tail(gateway.log))")
            #expect(gateway.terminate() == 0)
        }
    }
}
