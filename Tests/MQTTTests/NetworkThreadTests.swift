import Foundation
import MQTT
import Synchronization
import Testing
import TestSupport

extension MQTTIntegrationTests {
    /// `MQTTClient.perform` and the batch `publish`: work handed to the network thread, which
    /// is woken for it out of its `poll`, and never waits for a broker that is not there.
    @Suite struct NetworkThread {
        @Test func batchPublishGoesOutInOrderWithTheIdsTheAcknowledgementsCarry() async throws {
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("batch", qos: .atLeastOnce) {
                $0.collect()
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            let batch = (0..<200).map { MQTTMessage(topic: "\(prefix)/\($0 % 7)", payload: Array("\($0)".utf8), qos: .atLeastOnce) }
            let ids = try await publisher.client.publish(batch).map { try $0.get() }
            #expect(Set(ids).count == 200)
            #expect(await publisher.waitAcknowledged(ids))
            #expect(await subscriber.waitMessages(200))
            #expect(subscriber.messages.all.map(\.payloadText) == (0..<200).map(String.init))
            // An invalid topic fails alone, in its place.
            let mixed = await publisher.client.publish([
                MQTTMessage(topic: "\(prefix)/ok", payload: [1], qos: .atLeastOnce),
                MQTTMessage(topic: "\(prefix)/+", payload: [2], qos: .atLeastOnce),
            ])
            #expect(mixed.count == 2)
            #expect((try? mixed[0].get()) != nil)
            #expect((try? mixed[1].get()) == nil)
        }

        /// A job waits for the network thread: while an inline handler holds that thread it
        /// does not run, and it runs as soon as the thread is free (woken out of its poll).
        @Test func performRunsOnTheNetworkThreadBetweenReads() async throws {
            let release = DispatchSemaphore(value: 0)
            let entered = Recorder<String>()
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("perform", qos: .atMostOnce) { subscriber in
                subscriber.client.setInlineHandler { message in
                    entered.append(message.payloadText)
                    release.wait()
                    return true
                }
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            try publisher.client.publish(topic: "\(prefix)/hold", payload: "hold", qos: .atMostOnce)
            #expect(await poll { entered.count == 1 })
            let ran = Recorder<String>()
            subscriber.client.perform { ran.append("job") }
            try await Task.sleep(for: .milliseconds(300))
            #expect(ran.count == 0, "the job ran while the network thread was busy elsewhere")
            release.signal()
            #expect(await poll { ran.count == 1 })
            // Idle now, in its poll: a new job still runs at once.
            subscriber.client.perform { ran.append("again") }
            #expect(await poll(timeout: .seconds(2)) { ran.count == 2 })
        }

        /// `setAfterReads`: called on the network thread after each burst of reads, so it sees
        /// every message the inline handler took in that burst, and what it publishes goes out.
        /// Here it echoes how many messages were taken so far: the echoes count up, and the
        /// last one counts all of them.
        @Test func afterReadsFollowsEachBurstOnTheNetworkThread() async throws {
            let taken = Atomic<Int>(0)
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("after", qos: .atMostOnce) { subscriber in
                subscriber.collect()
                subscriber.client.setInlineHandler { message in
                    guard message.topic.hasSuffix("/in") else { return false }
                    taken.add(1, ordering: .relaxed)
                    return true
                }
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            let client = subscriber.client
            let echoed = Atomic<Int>(0)
            let offThread = Atomic<Int>(0)
            client.setAfterReads {
                if !client.isNetworkThread { offThread.add(1, ordering: .relaxed) }
                let count = taken.load(ordering: .relaxed)
                guard count > echoed.load(ordering: .relaxed) else { return }
                echoed.store(count, ordering: .relaxed)
                _ = try? client.publish(topic: "\(prefix)/echo", payload: Array("\(count)".utf8), qos: .atMostOnce)
            }
            for i in 0..<50 { try publisher.client.publish(topic: "\(prefix)/in", payload: Array("\(i)".utf8), qos: .atMostOnce) }
            #expect(await poll { subscriber.messages.all.last?.payloadText == "50" })
            let counts = subscriber.messages.all.compactMap { Int($0.payloadText) }
            #expect(!counts.isEmpty && counts == counts.sorted() && Set(counts).count == counts.count, "\(counts)")
            #expect(offThread.load(ordering: .relaxed) == 0)
            client.setAfterReads(nil)
        }

        /// Without a broker the thread waits to reconnect: jobs run on the caller's thread, so a
        /// QoS 1 message is queued for the next connection, as a direct publish is, instead of
        /// waiting for a connection loop to take it.
        @Test(.timeLimit(.minutes(5))) func withoutABrokerJobsRunAtOnce() async throws {
            let port = try FreePort.next()
            let client = try MQTTProbe(port: port, clientId: unique("alone"))
            defer { client.stop() }
            let before = Recorder<String>()
            client.client.perform { before.append("before start") }
            #expect(before.all == ["before start"])
            try client.client.start()
            #expect(await poll { client.events.all.contains { if case .connectFailed = $0 { true } else { false } } })
            // A job stranded in the queue would never resume this (the time limit fails it).
            let results = await client.client.publish([MQTTMessage(topic: "t/alone", payload: [1], qos: .atLeastOnce)])
            #expect((try? results[0].get()) != nil)
        }

        /// The network thread's work asserts where it runs (``MQTTClient/assertOnNetworkThread(_:)``):
        /// the delegate's methods, the callbacks and jobs there pass, and every message and
        /// acknowledgement of a round trip went through them.
        @Test func workOnTheNetworkThreadPassesItsCheck() async throws {
            let onThread = Atomic<Int>(0)
            let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("assert", qos: .atLeastOnce) { subscriber in
                let client = subscriber.client
                subscriber.collect()
                subscriber.client.setInlineHandler { _ in
                    client.assertOnNetworkThread()
                    onThread.add(1, ordering: .relaxed)
                    return false
                }
            }
            defer { subscriber.stop(); publisher.stop(); _ = broker }
            let id = try publisher.client.publish(topic: "\(prefix)/a", payload: "a", qos: .atLeastOnce)
            #expect(await subscriber.waitMessages(1))
            #expect(await publisher.waitAcknowledged([id]))
            #expect(onThread.load(ordering: .relaxed) == 1)
            let ran = await withCheckedContinuation { continuation in
                subscriber.client.perform {
                    subscriber.client.assertOnNetworkThread()
                    continuation.resume(returning: subscriber.client.isNetworkThread)
                }
            }
            #expect(ran)
            // A subscription made on the network thread is sent there at once.
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                subscriber.client.perform {
                    continuation.resume(with: Result { try subscriber.client.subscribe("\(prefix)/late", qos: .atLeastOnce) })
                }
            }
            #expect(await subscriber.waitSubscribed("\(prefix)/late"))
        }

        #if DEBUG
        /// Called from any other thread, the check traps (debug builds: the tests').
        @Test func theNetworkThreadCheckTrapsElsewhere() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let client = try MQTTClient(MQTTConfiguration(clientId: "elsewhere"))
                client.assertOnNetworkThread()
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("must run on the client's network thread"))
        }
        #endif
    }
}
