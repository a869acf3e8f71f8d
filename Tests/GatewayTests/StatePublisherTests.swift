import MQTT
import Synchronization
import Testing
@testable import Gateway

/// `StatePublisher` against a fake broker that records what it is handed and answers only
/// when the test says so.
@Suite struct StatePublisherTests {
    final class FakeBroker: Sendable {
        let sent = Mutex<[(id: Int32, topic: String, payload: String)]>([])
        let failing = Mutex<Set<String>>([])

        func send(_ topic: String, _ payload: [UInt8]) throws -> Int32 {
            try sent.withLock { sent in
                if failing.withLock({ $0.contains(topic) }) { throw UsageError("refused by the fake") }
                let id = Int32(sent.count + 1)
                sent.append((id, topic, String(decoding: payload, as: UTF8.self)))
                return id
            }
        }

        var messages: [(id: Int32, topic: String, payload: String)] { sent.withLock { $0 } }
    }

    func make(window: Int) -> (StatePublisher, FakeBroker) {
        let broker = FakeBroker()
        let publisher = StatePublisher(prefix: "p", logger: Logger(label: "test"), window: window,
                                       send: { try broker.send($0, $1) })
        return (publisher, broker)
    }

    func ack(_ publisher: StatePublisher, _ id: Int32, reason: Int32 = 0) -> Bool {
        publisher.acknowledged(MQTTAcknowledgement(messageId: id, reasonCode: reason))
    }

    @Test func atMostWindowStatesAreWithTheBroker() {
        let (publisher, broker) = make(window: 4)
        for i in 0..<100 { publisher.publish(DevicePublication(device: "d\(i)", state: Array("s\(i)".utf8))) }
        #expect(broker.messages.count == 4)
        #expect(publisher.pending == (4, 96))
        // Each acknowledgement lets exactly one more out, in the order the devices became due.
        var acked = 0
        while acked < broker.messages.count {
            acked += 1
            #expect(ack(publisher, Int32(acked)))
            #expect(broker.messages.count == min(100, acked + 4))
        }
        #expect(broker.messages.map(\.topic) == (0..<100).map { "p/devices/d\($0)/state" })
        #expect(broker.messages.map(\.payload) == (0..<100).map { "s\($0)" })
        #expect(publisher.pending == (0, 0))
        #expect(publisher.count == 100)
    }

    /// libmosquitto is called with the book's lock released: an acknowledgement that comes
    /// while a message is handed over (a pump off the network thread) takes the lock, and is
    /// applied once the pump records the message id, so the window does not keep a place for
    /// it; a state published meanwhile goes out after, from the same pump.
    @Test func anAcknowledgementDuringTheSendIsAppliedAtTheRecord() {
        let broker = FakeBroker()
        let holder = Mutex<StatePublisher?>(nil)
        let reentered = Mutex(false)
        let publisher = StatePublisher(prefix: "p", logger: Logger(label: "test"), window: 4, send: { topic, payload in
            let id = try broker.send(topic, payload)
            guard let publisher = holder.withLock({ $0 }), !reentered.withLock({ $0 }) else { return id }
            reentered.withLock { $0 = true }
            // The broker answers before the pump records the id; a new state arrives too.
            #expect(!publisher.acknowledged(MQTTAcknowledgement(messageId: id, reasonCode: 0)))
            publisher.publish(DevicePublication(device: "b", state: Array("sb".utf8)))
            return id
        })
        holder.withLock { $0 = publisher }
        publisher.publish(DevicePublication(device: "a", state: Array("sa".utf8)))
        #expect(broker.messages.map(\.topic) == ["p/devices/a/state", "p/devices/b/state"])
        // a's early acknowledgement was applied: only b is in flight.
        #expect(publisher.pending == (1, 0))
        #expect(publisher.acknowledged(MQTTAcknowledgement(messageId: 2, reasonCode: 0)))
        #expect(publisher.pending == (0, 0))
    }

    /// The caller only marks devices as due; the states go out in the job handed to `perform`
    /// (the network thread), one job for a burst of states.
    @Test func statesGoOutInOneJobPerBurst() {
        let broker = FakeBroker()
        let jobs = Mutex<[@Sendable () -> Void]>([])
        let publisher = StatePublisher(prefix: "p", logger: Logger(label: "test"), window: 8,
                                       send: { try broker.send($0, $1) },
                                       perform: { job in jobs.withLock { $0.append(job) } })
        func runJobs() {
            let queued = jobs.withLock { jobs in
                defer { jobs.removeAll() }
                return jobs
            }
            queued.forEach { $0() }
        }
        for i in 0..<3 { publisher.publish(DevicePublication(device: "d\(i)", state: Array("s\(i)".utf8))) }
        #expect(broker.messages.isEmpty)
        #expect(jobs.withLock { $0.count } == 1)
        runJobs()
        #expect(broker.messages.map(\.payload) == ["s0", "s1", "s2"])
        publisher.publish(DevicePublication(device: "d0", state: Array("s0'".utf8)))
        #expect(jobs.withLock { $0.count } == 1)
        runJobs()
        #expect(broker.messages.map(\.payload) == ["s0", "s1", "s2", "s0'"])
        publisher.republishAll()
        #expect(broker.messages.count == 4)
        runJobs()
        #expect(broker.messages.count == 7)
    }

    @Test func aDeviceWaitingForItsTurnGoesOutOnceWithItsNewestState() {
        let (publisher, broker) = make(window: 1)
        publisher.publish(DevicePublication(device: "a", state: Array("a1".utf8)))
        publisher.publish(DevicePublication(device: "b", state: Array("b1".utf8)))
        publisher.publish(DevicePublication(device: "b", state: Array("b2".utf8)))
        publisher.publish(DevicePublication(device: "c", state: Array("c1".utf8)))
        publisher.publish(DevicePublication(device: "b", state: nil))  // forgotten: an empty retained message
        for id in 1...3 { #expect(ack(publisher, Int32(id))) }
        #expect(broker.messages.map(\.topic) == ["p/devices/a/state", "p/devices/b/state", "p/devices/c/state"])
        #expect(broker.messages.map(\.payload) == ["a1", "", "c1"])
        #expect(publisher.count == 2)
    }

    @Test func otherAcknowledgementsAreLeftForTheOutbox() {
        let (publisher, broker) = make(window: 2)
        publisher.publish(DevicePublication(device: "a", state: [1]))
        #expect(!ack(publisher, 99))
        #expect(ack(publisher, 1, reason: 0x87))  // refused: counted as answered, not resent
        #expect(!ack(publisher, 1))
        #expect(broker.messages.count == 1)
    }

    @Test func aReconnectSendsEveryStateAgainAndFreesTheWindow() {
        let (publisher, broker) = make(window: 2)
        for device in ["a", "b", "c"] { publisher.publish(DevicePublication(device: device, state: Array(device.utf8))) }
        #expect(broker.messages.count == 2)
        // The connection drops before any PUBACK; after the reconnect the old ids do not hold the window.
        publisher.republishAll()
        #expect(broker.messages.count == 4)
        #expect(!ack(publisher, 1))
        #expect(ack(publisher, 3))
        #expect(ack(publisher, 4))
        #expect(ack(publisher, 5))
        #expect(Set(broker.messages.dropFirst(2).map(\.payload)) == ["a", "b", "c"])
        #expect(publisher.pending == (0, 0))
    }

    @Test func aStateTheClientRejectsDoesNotBlockTheOthers() {
        let (publisher, broker) = make(window: 1)
        broker.failing.withLock { $0 = ["p/devices/bad/state"] }
        publisher.publish(DevicePublication(device: "bad", state: [1]))
        publisher.publish(DevicePublication(device: "good", state: [2]))
        #expect(broker.messages.map(\.topic) == ["p/devices/good/state"])
        #expect(publisher.pending == (1, 0))
    }

    /// A topic published `atMostOnce` (a trip's progress between its changes) goes out at QoS 0
    /// and holds its place in the window until libmosquitto reports it written, as a QoS 1
    /// message until its PUBACK; a payload without it, a clear, and a connect's republish of
    /// each topic go at the QoS of the topic's newest payload.
    @Test func progressBetweenChangesGoesOutAtQoS0() {
        let broker = FakeBroker()
        let atMostOnce = Mutex<Set<Int32>>([])
        let publisher = StatePublisher(prefix: "p", logger: Logger(label: "test"), window: 1,
                                       send: { try broker.send($0, $1) },
                                       sendAtMostOnce: { topic, payload in
                                           let id = try broker.send(topic, payload)
                                           atMostOnce.withLock { _ = $0.insert(id) }
                                           return id
                                       })
        func qos0(_ id: Int32) -> Bool { atMostOnce.withLock { $0.contains(id) } }
        publisher.publish(topic: "p/trips/a/progress", payload: Array("a1".utf8))
        publisher.publish(topic: "p/trips/b/progress", payload: Array("b1".utf8), atMostOnce: true)
        #expect(broker.messages.map(\.payload) == ["a1"])
        #expect(ack(publisher, 1))
        #expect(broker.messages.map(\.payload) == ["a1", "b1"])
        #expect(!qos0(1) && qos0(2))
        publisher.publish(topic: "p/trips/a/progress", payload: Array("a2".utf8), atMostOnce: true)
        #expect(publisher.pending == (1, 1), "the QoS 0 message holds the window until written")
        #expect(ack(publisher, 2))
        #expect(broker.messages.map(\.payload) == ["a1", "b1", "a2"])
        #expect(qos0(3))
        #expect(ack(publisher, 3))
        publisher.publish(topic: "p/trips/b/progress", payload: nil)
        #expect(ack(publisher, 4))
        #expect(broker.messages.map(\.payload) == ["a1", "b1", "a2", ""])
        #expect(!qos0(4), "a clear goes at QoS 1")
        publisher.republishAll()
        #expect(ack(publisher, 5))
        let republished = broker.messages.dropFirst(4)
        #expect(republished.map(\.topic).sorted() == ["p/trips/a/progress", "p/trips/b/progress"])
        for message in republished {
            #expect(qos0(message.id) == (message.topic == "p/trips/a/progress"), "\(message)")
        }
        publisher.publish(topic: "p/trips/a/progress", payload: Array("a3".utf8))
        #expect(ack(publisher, 6))
        #expect(broker.messages.last?.payload == "a3")
        #expect(broker.messages.last.map { !qos0($0.id) } == true, "a change goes at QoS 1 again")
    }
}
