import Foundation
@_spi(Benchmarks) import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    /// `MQTTClient.setInlineHandler` (the gateway's feeds) and `MQTTDirectPublisher` (the
    /// benchmark's load generator), against a real mosquitto.
    @Suite struct InlineAndDirect {
        @Test func inlineHandlerTakesWhatItReturnsTrueForAndTheRestIsQueuedInOrder() async throws {
            let taken = Recorder<String>()
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("inline", qos: .atLeastOnce) { subscriber in
                subscriber.client.setInlineHandler { message in
                    guard message.topic.hasSuffix("/inline") else { return false }
                    taken.append(message.payloadText)
                    return true
                }
                subscriber.collect()
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            for index in 0..<20 {
                try publisher.client.publish(topic: "\(prefix)/\(index % 3 == 0 ? "inline" : "queued")", payload: "\(index)", qos: .atLeastOnce)
            }
            #expect(await poll { taken.count + subscriber.messages.count >= 20 })
            let inline = (0..<20).filter { $0 % 3 == 0 }.map(String.init)
            let queued = (0..<20).filter { $0 % 3 != 0 }.map(String.init)
            #expect(taken.all == inline)
            #expect(subscriber.messages.all.map { $0.payloadText } == queued)
            #expect(subscriber.client.inboundDepth == 0)
        }

        /// While the handler holds the network thread, what the broker sends stays in the socket
        /// and `unreadBytes` shows it (the status's `queueDepth` is built on it), all but what
        /// the read that brought the first message took with it (at most `BufferedReads.capacity`).
        @Test func unreadBytesShowWhatWaitsInTheSocketWhileTheHandlerIsBusy() async throws {
            let release = DispatchSemaphore(value: 0)
            let taken = Recorder<String>()
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("unread", qos: .atMostOnce) { subscriber in
                subscriber.client.setInlineHandler { message in
                    if message.payloadText == "0" { release.wait() }
                    taken.append(message.payloadText)
                    return true
                }
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            #expect(subscriber.client.unreadBytes == 0)
            let payload = String(repeating: "x", count: 100)
            try publisher.client.publish(topic: "\(prefix)/t", payload: "0", qos: .atMostOnce)
            for _ in 1...400 { try publisher.client.publish(topic: "\(prefix)/t", payload: payload, qos: .atMostOnce) }
            #expect(
                await poll { subscriber.client.unreadBytes >= 400 * 100 - BufferedReads.capacity },
                "\(subscriber.client.unreadBytes) bytes unread")
            release.signal()
            #expect(await poll { taken.count == 401 })
            #expect(await poll { subscriber.client.unreadBytes == 0 })
        }

        @Test func directPublisherWritesInOrderAndCountsWhatLibmosquittoIsDoneWith() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("direct")
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
            defer { subscriber.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))

            let publisher = try MQTTDirectPublisher(MQTTConfiguration(port: broker.port, clientId: unique("direct")))
            #expect(publisher.finished == 0)
            for index in 0..<300 {
                var text = "\(index)"
                _ = try text.withUTF8 { bytes in
                    try publisher.publish(topic: "\(prefix)/\(index)", payload: UnsafeRawBufferPointer(bytes),
                                          qos: index % 2 == 0 ? .atMostOnce : .atLeastOnce)
                }
            }
            // QoS 0 counts once written, QoS 1 once acknowledged: only servicing reads the PUBACKs.
            let deadline = Date().addingTimeInterval(30)
            while publisher.finished < 300, Date() < deadline { try publisher.service(timeout: 0.01) }
            #expect(publisher.finished == 300)
            #expect(await subscriber.waitMessages(300))
            // In order within each QoS: QoS 1 beyond the broker's receive maximum (mosquitto's
            // default, 20) waits for acknowledgements, while QoS 0 goes out at once.
            let received = subscriber.messages.all
            for qos in [MQTTQoS.atMostOnce, .atLeastOnce] {
                #expect(received.filter { $0.qos == qos }.map(\.payloadText)
                        == (0..<300).filter { ($0 % 2 == 0) == (qos == .atMostOnce) }.map(String.init))
            }
            publisher.disconnect()
        }

        @Test func directPublisherWithoutABrokerThrowsNamingTheAddress() throws {
            let port = try FreePort.next()
            let error = #expect(throws: MosquittoError.self) {
                _ = try MQTTDirectPublisher(MQTTConfiguration(port: port, clientId: unique("nobody")), timeout: 2)
            }
            #expect(error?.call == "mosquitto_connect(127.0.0.1:\(port))", "\(String(describing: error))")
        }
    }
}
