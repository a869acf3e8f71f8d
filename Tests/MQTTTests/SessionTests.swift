import Foundation
import MQTT
import Testing
import TestSupport

extension MQTTIntegrationTests {
    @Suite struct Sessions {
        /// The broker goes away for a few seconds and comes back with its persistence
        /// database: both clients reconnect by themselves, the subscriber's session is still
        /// there, and QoS 1 messages published during the outage (queued in the publisher)
        /// and after it all arrive.
        @Test func brokerRestartWithPersistenceKeepsTheSession() async throws {
            let broker = try MosquittoProcess(.init(persistence: true))
            let prefix = unique("restart")
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { subscriber.stop(); publisher.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            try publisher.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))
            #expect(await publisher.waitConnected())
            try publisher.client.publish(topic: "\(prefix)/before", payload: "before", qos: .atLeastOnce)
            #expect(await subscriber.waitMessages(1))

            broker.stop()
            #expect(await subscriber.waitDisconnected(), "\(describe(subscriber))")
            #expect(await publisher.waitDisconnected())
            var ids: [Int32] = []
            for index in 0..<10 {
                ids.append(try publisher.client.publish(topic: "\(prefix)/during", payload: "during \(index)", qos: .atLeastOnce))
            }
            // Down for a while: the clients keep retrying (not an assertion).
            #expect(await poll(timeout: .seconds(10)) {
                subscriber.events.all.filter { if case .connectFailed = $0 { true } else { false } }.count >= 2
            })
            try broker.start()

            #expect(await subscriber.waitConnected(count: 2), "\(describe(subscriber))")
            #expect(await publisher.waitConnected(count: 2))
            #expect(subscriber.sessionPresentFlags == [false, true], "the session did not survive the restart")
            #expect(await publisher.waitAcknowledged(ids))
            for index in 0..<10 {
                try publisher.client.publish(topic: "\(prefix)/after", payload: "after \(index)", qos: .atLeastOnce)
            }
            #expect(await subscriber.waitMessages(21), "\(subscriber.messages.count) of 21")
            let payloads = Set(subscriber.messages.all.map(\.payloadText))
            #expect(payloads.isSuperset(of: (0..<10).map { "during \($0)" }))
            #expect(payloads.isSuperset(of: (0..<10).map { "after \($0)" }))
        }

        /// Without persistence the broker forgets the session: the client subscribes again on
        /// its own after the CONNACK.
        @Test func brokerRestartWithoutPersistenceSubscribesAgain() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("resubscribe")
            let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { subscriber.stop(); publisher.stop() }
            subscriber.collect()
            try subscriber.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try subscriber.client.start()
            try publisher.client.start()
            #expect(await subscriber.waitSubscribed("\(prefix)/#"))
            try broker.restart()
            #expect(await subscriber.waitConnected(count: 2), "\(describe(subscriber))")
            #expect(subscriber.sessionPresentFlags == [false, false])
            #expect(await subscriber.waitSubscribed("\(prefix)/#", count: 2), "\(describe(subscriber))")
            #expect(await publisher.waitConnected(count: 2))
            try publisher.client.publish(topic: "\(prefix)/x", payload: "back", qos: .atLeastOnce)
            #expect(await subscriber.waitMessages(1))
            #expect(subscriber.messages.all.map(\.payloadText) == ["back"])
        }

        /// A client that stops and comes back with the same id and clean start off finds its
        /// session, with the QoS 1 messages published while it was gone, without subscribing.
        @Test(arguments: [MQTTConfiguration.ProtocolVersion.v5, .v311])
        func restartedClientGetsMessagesQueuedWhileAway(version: MQTTConfiguration.ProtocolVersion) async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("away")
            let clientId = unique("gateway")
            let first = try MQTTProbe(port: broker.port, clientId: clientId, protocolVersion: version)
            try first.client.subscribe("\(prefix)/#", qos: .atLeastOnce)
            try first.client.start()
            #expect(await first.waitSubscribed("\(prefix)/#"))
            first.stop()

            let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
            defer { publisher.stop() }
            try publisher.client.start()
            #expect(await publisher.waitConnected())
            var ids: [Int32] = []
            for index in 0..<10 {
                ids.append(try publisher.client.publish(topic: "\(prefix)/n", payload: "\(index)", qos: .atLeastOnce))
            }
            #expect(await publisher.waitAcknowledged(ids))

            let second = try MQTTProbe(port: broker.port, clientId: clientId, protocolVersion: version)
            defer { second.stop() }
            second.collect()
            try second.client.start()
            #expect(await second.waitConnected())
            #expect(second.sessionPresentFlags == [true])
            #expect(await second.waitMessages(10), "\(second.messages.count) of 10")
            #expect(second.messages.all.map(\.payloadText) == (0..<10).map { "\($0)" })
        }

        /// The will goes out when the connection dies without a DISCONNECT. Here the client's
        /// network thread is kept waiting by a full inbound queue nobody reads, so it sends no
        /// keepalive and the broker drops it after 1.5 x 5 s.
        @Test func willIsPublishedWhenTheConnectionDiesUngracefully() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("will")
            let watcher = try MQTTProbe(port: broker.port, clientId: unique("watcher"))
            let stalled = try MQTTProbe(port: broker.port, clientId: unique("stalled")) {
                $0.keepalive = 5
                $0.inboundCapacity = 1
                $0.will = .init(topic: "\(prefix)/status", payload: #"{"status":"offline"}"#, qos: .atLeastOnce, retain: true)
            }
            defer { watcher.stop(); stalled.stop() }
            watcher.collect()
            try watcher.client.subscribe("\(prefix)/status")
            try watcher.client.start()
            #expect(await watcher.waitSubscribed("\(prefix)/status"))
            try stalled.client.subscribe("\(prefix)/flood")
            try stalled.client.start()
            #expect(await stalled.waitSubscribed("\(prefix)/flood"))
            for index in 0..<5 {
                try watcher.client.publish(topic: "\(prefix)/flood", payload: "\(index)", qos: .atLeastOnce)
            }
            #expect(await watcher.waitMessages(1, timeout: .seconds(40)), "no will\n\(broker.log.suffix(2000))")
            let will = try #require(watcher.messages.all.first)
            #expect(will.topic == "\(prefix)/status")
            #expect(will.payloadText == #"{"status":"offline"}"#)
        }

        /// A clean stop sends DISCONNECT: no will.
        @Test func cleanStopSendsNoWill() async throws {
            let broker = try MosquittoProcess()
            let prefix = unique("nowill")
            let watcher = try MQTTProbe(port: broker.port, clientId: unique("watcher"))
            let client = try MQTTProbe(port: broker.port, clientId: unique("client")) {
                $0.will = .init(topic: "\(prefix)/status", payload: "offline", qos: .atLeastOnce, retain: false)
            }
            defer { watcher.stop() }
            watcher.collect()
            try watcher.client.subscribe("\(prefix)/#")
            try watcher.client.start()
            #expect(await watcher.waitSubscribed("\(prefix)/#"))
            try client.client.start()
            #expect(await client.waitConnected())
            client.stop()
            #expect(client.events.contains { $0 == .disconnected(code: 0, reason: "disconnected on request") })
            // A marker published after the stop arrives after any will would have.
            try watcher.client.publish(topic: "\(prefix)/marker", payload: "marker", qos: .atLeastOnce)
            #expect(await watcher.waitMessages(1))
            #expect(watcher.messages.all.map(\.payloadText) == ["marker"])
        }

        /// `stop(last:)`: the message `last` publishes is the last one before the DISCONNECT,
        /// even when a retained QoS 1 message on its topic waits behind a full window (the
        /// broker's receive maximum is 2, 3,000 messages are queued). Published before the
        /// stop, the QoS 0 message would go out at once and the waiting one after it, as the
        /// acknowledgements free the window.
        @Test func theLastMessageOfAStopGoesAfterEverythingQueued() async throws {
            let broker = try MosquittoProcess(.init(maxInflightMessages: 2))
            let prefix = unique("last")
            let watcher = try MQTTProbe(port: broker.port, clientId: unique("watcher"))
            let client = try MQTTProbe(port: broker.port, clientId: unique("client")) {
                $0.will = .init(topic: "\(prefix)/status", payload: "offline", qos: .atLeastOnce, retain: true)
            }
            defer { watcher.stop() }
            watcher.collect()
            try watcher.client.subscribe("\(prefix)/status")
            try watcher.client.start()
            #expect(await watcher.waitSubscribed("\(prefix)/status"))
            try client.client.start()
            #expect(await client.waitConnected())
            for index in 0..<3_000 {
                try client.client.publish(topic: "\(prefix)/flood", payload: "\(index)", qos: .atLeastOnce)
            }
            try client.client.publish(topic: "\(prefix)/status", payload: "started", qos: .atLeastOnce, retain: true)
            let status = "\(prefix)/status"
            client.client.stop(last: { _ = try? client.client.publish(topic: status, payload: "stopped", qos: .atMostOnce, retain: true) })
            #expect(client.events.contains { $0 == .disconnected(code: 0, reason: "disconnected on request") })
            #expect(await watcher.waitMessages(1))
            let checker = try MQTTProbe(port: broker.port, clientId: unique("checker"))
            defer { checker.stop() }
            checker.collect()
            try checker.client.subscribe(status)
            try checker.client.start()
            #expect(await checker.waitMessages(1))
            #expect(checker.messages.all.map(\.payloadText) == ["stopped"], "retained")
            #expect(watcher.messages.all.last?.payloadText == "stopped", "\(watcher.messages.all.map(\.payloadText))")
        }
    }
}
