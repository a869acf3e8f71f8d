import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct BackPressure {
        @Test func slowConsumerWithTinyQueueLosesNothing() async throws {
            // mosquitto drops messages for a subscriber beyond max_queued_messages (default
            // 1000) even while it is online: give the broker room for the whole burst.
            let broker = try MosquittoProcess(.init(maxQueuedMessages: 10_000))
            let prefix = unique("slow")
            let count = 5_000
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub")) { $0.inboundCapacity = 16 }
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { subscriber.stop(); publisher.stop() }
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            try publisher.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))
            #expect(await publisher.waitConnected())
            for index in 0..<count {
                try publisher.client.publish(topic: "\(prefix)/n", payload: "\(index)", qos: .atLeastOnce)
            }
            // Let the queue fill up before consuming slowly.
            #expect(await poll { subscriber.client.inboundDepth == 16 }, "the 16-slot queue never filled")
            let received = Recorder<Int>()
            let messages = subscriber.client.messages
            let client = subscriber.client
            let sawFull = await withTaskGroup(of: Bool?.self) { group in
                group.addTask {
                    var sawFull = false
                    for await message in messages {
                        if client.inboundDepth == 16 { sawFull = true }
                        received.append(Int(message.payloadText) ?? -1)
                        if received.count % 500 == 0 { try? await Task.sleep(for: .milliseconds(50)) }
                        if received.count == count { break }
                    }
                    return sawFull
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(90))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first ?? false
            }
            #expect(sawFull, "the network thread never had to wait")
            #expect(received.all == Array(0..<count), "lost or reordered: \(received.count) of \(count)")
            #expect(subscriber.client.isConnected)
        }
    }
}
