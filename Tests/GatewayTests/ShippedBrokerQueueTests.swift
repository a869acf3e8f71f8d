import Foundation
import MQTT
import Testing
import TestSupport

extension ServeTests.ShippedBroker {
    /// `max_queued_bytes` of the shipped geotrigger.conf, in bytes (nil: not set).
    static func queuedBytesBudget() throws -> Int? {
        let text = try String(contentsOfFile: "\(folder)/geotrigger.conf", encoding: .utf8)
        return text.split(separator: "\n").lazy.compactMap { line -> Int? in
            let words = line.split(separator: " ")
            return words.count == 2 && words[0] == "max_queued_bytes" ? Int(words[1]) : nil
        }.first
    }

    /// deploy/mosquitto/README.md "Queues": while the gateway is down (its persistent session
    /// disconnected), device v17 publishes 300 messages of 1 MiB at QoS 1 on its own topic,
    /// which the gateway's session subscribes to. The shipped broker queues at most
    /// `max_queued_bytes` of them for the session: its memory stays bounded while they come,
    /// after a restart (the session is saved and reloaded), and the gateway's session gets no
    /// more than that when it comes back. Without the line the broker held all 300 (300 MiB).
    @Test(.timeLimit(.minutes(8))) func aDeviceCannotFillTheBrokersMemoryWhileTheGatewayIsDown() async throws {
        let h = try ServeHarness("queuedbytes", broker: try Self.options())
        defer { h.close() }
        let mebibyte = 1 << 20
        let count = 300
        let topic = "devices/v17/location"
        let budget = try Self.queuedBytesBudget()
        let brokerMemory = { ServeTests.HostileInput.memory(pid: h.broker.pid ?? -1) }

        // The gateway's persistent session, subscribed as the gateway subscribes, then gone.
        func gatewaySession() throws -> MQTTProbe {
            try MQTTProbe(port: h.broker.port, clientId: Self.gatewayUser) { configuration in
                Self.credentials(Self.gatewayUser)(&configuration)
                configuration.cleanStart = false
            }
        }
        let first = try gatewaySession()
        try first.client.subscribe("devices/+/location", qos: .atLeastOnce)
        try first.client.start()
        #expect(await first.waitSubscribed("devices/+/location"), "\(describe(first))\n\(tail(h.brokerLog))")
        first.stop()
        let idle = brokerMemory()

        let device = try MQTTProbe(port: h.broker.port, clientId: "v17") { Self.credentials("v17")(&$0) }
        defer { device.stop() }
        try device.client.start()
        #expect(await device.waitConnected(), "\(describe(device))")
        let payload = [UInt8](repeating: UInt8(ascii: "x"), count: mebibyte)
        var ids: [Int32] = []
        for _ in 0..<count { ids.append(try device.client.publish(topic: topic, payload: payload, qos: .atLeastOnce)) }
        #expect(await device.waitAcknowledged(ids, timeout: .seconds(300)), "the broker acknowledged \(device.acknowledgements.count) of \(count)")
        let queued = brokerMemory()

        // A clean stop saves the session with what is queued in it; the start reloads it.
        try h.broker.restart()
        let reloaded = brokerMemory()

        // The gateway comes back: what the broker kept for it arrives, then a marker sent
        // after it (again while it has not arrived: one the broker dropped with a full queue).
        let second = try gatewaySession()
        defer { second.stop() }
        let sizes = Recorder<Int>()
        let stream = second.client.messages
        let reader = Task.detached { for await message in stream { sizes.append(message.payloadSize) } }
        defer { reader.cancel() }
        try second.client.start()
        #expect(await second.waitConnected(), "\(describe(second))")
        #expect(second.sessionPresentFlags == [true], "the gateway's session did not survive the restart")
        #expect(await device.waitConnected(count: 2), "\(describe(device))")
        let arrived = await poll(timeout: .seconds(180), interval: .milliseconds(500)) {
            if sizes.all.contains(3) { return true }
            _ = try? device.client.publish(topic: topic, payload: "end", qos: .atLeastOnce)
            return false
        }
        #expect(arrived, "the marker never reached the gateway's session\n\(tail(h.brokerLog))")
        let delivered = sizes.all.prefix { $0 != 3 }.count { $0 == mebibyte }
        print("""
            broker RSS with the shipped config (max_queued_bytes \(budget.map(String.init) ?? "not set")): \
            idle \(Int(idle.rss)) MiB; after \(count) x 1 MiB for the disconnected gateway session \(Int(queued.rss)) MiB \
            (peak \(Int(queued.peak)) MiB); after a restart \(Int(reloaded.rss)) MiB; \
            the session got \(delivered) of the \(count) messages when it came back
            """)
        #expect(budget != nil, "deploy/mosquitto/geotrigger.conf needs a max_queued_bytes line (the bytes queued per client)")
        let budgetBytes = budget ?? 0
        // The broker queues one message while its queue is under the budget: at most one over it.
        #expect(delivered <= budgetBytes / mebibyte + 1, "the broker queued \(delivered) MiB for the gateway's session, budget \(budgetBytes) bytes")
        #expect(delivered >= 1, "the session got none of the device's messages")
        // Memory: the queue's bytes and its bookkeeping, not the 300 MiB sent.
        let allowed = Double(budgetBytes / mebibyte) * 2 + 32
        #expect(queued.rss - idle.rss < allowed, "broker RSS grew \(queued.rss - idle.rss) MiB while the device published, expected under \(allowed)")
        #expect(reloaded.rss - idle.rss < allowed, "broker RSS after the restart is \(reloaded.rss - idle.rss) MiB over idle, expected under \(allowed)")
    }
}
