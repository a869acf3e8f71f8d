import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct RoundTrip {
        @Test(arguments: [MQTTConfiguration.ProtocolVersion.v5, .v311])
        func publishSubscribeRoundTrip(version: MQTTConfiguration.ProtocolVersion) async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("roundtrip")
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"), protocolVersion: version)
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"), protocolVersion: version)
            defer { subscriber.stop(); publisher.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            try publisher.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"), "\(describe(subscriber))")
            #expect(await publisher.waitConnected(), "\(describe(publisher))")

            let id0 = try publisher.client.publish(topic: "\(prefix)/a", payload: "zero", qos: .atMostOnce)
            let id1 = try publisher.client.publish(topic: "\(prefix)/b", payload: [0, 1, 2, 255], qos: .atLeastOnce)
            #expect(await subscriber.waitMessages(2))
            let received = subscriber.messages.all
            #expect(received.map(\.topic) == ["\(prefix)/a", "\(prefix)/b"])
            #expect(received.first?.payloadText == "zero")
            #expect(received.first?.qos == .atMostOnce)
            #expect(received.last?.payload == [0, 1, 2, 255])
            #expect(received.last?.qos == .atLeastOnce)
            #expect(received.allSatisfy { !$0.retain })
            #expect(await publisher.waitAcknowledged([id0, id1]))
            #expect(publisher.acknowledgements.all.allSatisfy { $0.isSuccess })
        }

        @Test func v5ResponseTopicAndCorrelationDataArrive() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("request")
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { subscriber.stop(); publisher.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#")
            try subscriber.client.start()
            try publisher.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))
            #expect(await publisher.waitConnected())
            try publisher.client.publish(
                topic: "\(prefix)/ask", payload: "?", qos: .atLeastOnce,
                properties: MQTTPublishProperties(responseTopic: "\(prefix)/answer", correlationData: [7, 8, 9]))
            #expect(await subscriber.waitMessages(1))
            let message = try #require(subscriber.messages.all.first)
            #expect(message.responseTopic == "\(prefix)/answer")
            #expect(message.correlationData == [7, 8, 9])
        }

        @Test func qos1AcknowledgementsComeBackByMessageId() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("acks")
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            var ids: [Int32] = []
            for index in 0..<200 {
                ids.append(try publisher.client.publish(topic: "\(prefix)/\(index)", payload: "\(index)", qos: .atLeastOnce))
            }
            #expect(Set(ids).count == ids.count, "message ids are distinct")
            #expect(await publisher.waitAcknowledged(ids))
            let acknowledged = publisher.acknowledgements.all
            #expect(acknowledged.count == 200)
            // No subscriber: v5 brokers may answer 0x10 "no matching subscribers", still a success.
            #expect(acknowledged.allSatisfy { $0.isSuccess }, "\(acknowledged.filter { !$0.isSuccess })")
        }

        @Test func qos0WithoutConnectionThrowsQos1IsKeptForLater() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("offline")
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
            defer { publisher.stop(); subscriber.stop() }
            // Not started: QoS 0 needs a connection, QoS 1 is queued by libmosquitto.
            let error = #expect(throws: MosquittoError.self) {
                try publisher.client.publish(topic: "\(prefix)/x", payload: "lost", qos: .atMostOnce)
            }
            #expect(error?.isNoConnection == true, "\(String(describing: error))")
            let id = try publisher.client.publish(topic: "\(prefix)/x", payload: "kept", qos: .atLeastOnce)
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#")
            try subscriber.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))
            try publisher.client.start()
            #expect(await publisher.waitAcknowledged([id]))
            #expect(await subscriber.waitMessages(1))
            #expect(subscriber.messages.all.map(\.payloadText) == ["kept"])
        }

        @Test func invalidFilterAndTopicAreErrorsNamingTheCall() throws {
            let client = try MQTTClient(MQTTConfiguration(port: 1, clientId: unique("bad")))
            let filterError = #expect(throws: MosquittoError.self) { try client.subscribe("a/#/b") }
            #expect(filterError?.call.contains("a/#/b") == true)
            let topicError = #expect(throws: MosquittoError.self) {
                try client.publish(topic: "a/+", payload: "x", qos: .atLeastOnce)
            }
            #expect(topicError?.call.contains("mosquitto_publish_v5") == true)
            #expect(throws: MosquittoError.self) { try MQTTClient(MQTTConfiguration(clientId: nil)) }
        }
    }
}

