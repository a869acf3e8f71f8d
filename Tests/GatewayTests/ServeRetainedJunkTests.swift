import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests.HostileInput {
    /// docs/limits.md (round three): 1,200 retained payloads of 1 MiB on runtime fence topics
    /// that are no fence (valid JSON: a Feature without geometry, its properties a long array)
    /// wait on the broker. At the gateway's start and at a reconnect (the broker sends every
    /// retained fence again) they are read one at a time under a memory budget, those that
    /// fail to parse count against `runtime.maxBytes` (64 MiB by default: the rest are rejected
    /// unparsed) and are not parsed again: the gateway's peak RSS stays far under the
    /// service's `MemoryMax=1G`. Before, the client's queue held up to 1,024 of them (1 GiB)
    /// and every one was parsed at every connect.
    @Test(.timeLimit(.minutes(10))) func retainedJunkFencesStayUnderTheMemoryBudget() async throws {
        // Room for every retained fence in the gateway's queue at a subscription (mosquitto's
        // default max_queued_messages, 1,000, would drop the rest for it).
        let h = try ServeHarness("junk", broker: .init(maxQueuedMessages: 100_000))
        defer { h.close() }
        let clientID = "gw-junk-\(h.gatewayID)"
        let config = try h.write("gw.json5", h.config(broker: "clientId: \"\(clientID)\""))
        let publisher = try await h.probe("publisher")
        let count = 1_200
        let mebibyte = 1 << 20
        // {"type":"Feature","geometry":null,"properties":{"junk":[0,0,...,0]}} of exactly 1 MiB.
        let head = Array(#"{"type":"Feature","geometry":null,"properties":{"junk":[0"#.utf8), closing = Array("]}}".utf8)
        var junk = head
        while junk.count + 2 + closing.count <= mebibyte { junk += Array(",0".utf8) }
        junk += Array(repeating: UInt8(ascii: " "), count: mebibyte - junk.count - closing.count) + closing
        #expect(junk.count == mebibyte)
        var ids: [Int32] = []
        for n in 0..<count {
            ids.append(try publisher.client.publish(topic: "\(h.prefix)/fences/junk/j\(n)", payload: junk, qos: .atLeastOnce, retain: true))
        }
        #expect(await publisher.waitAcknowledged(ids, timeout: .seconds(300)), "the broker took \(publisher.acknowledgements.count) of \(count)")

        let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "\(h.prefix)/fences/marker/+/error"])
        let gateway = try h.startGateway(config: config)
        #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(300)) { $0.status == "started" }.ok, "\(tail(gateway.log))")
        // A marker behind the retained fences: once its rejection is out, all of them were handled.
        func handled(_ marker: String) async -> Bool {
            _ = try? publisher.client.publish(topic: "\(h.prefix)/fences/marker/\(marker)", payload: "not json", qos: .atLeastOnce)
            return await poll(timeout: .seconds(300)) { !watcher.received(on: "\(h.prefix)/fences/marker/\(marker)/error").isEmpty }
        }
        #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(300)) { $0.counter("received") >= count }.ok, "\(tail(gateway.log))")
        #expect(await handled("start"), "\(tail(gateway.log))")
        let afterStart = Self.memory(pid: gateway.pid)
        let receivedAtStart = watcher.lastStatus(h.statusTopic)?.counter("received") ?? 0

        // A reconnect: a client takes the gateway's client id for a moment; the gateway comes
        // back, subscribes the fence topics afresh and the broker sends all 1,200 again.
        let intruder = try MQTTProbe(port: h.broker.port, clientId: clientID)
        try intruder.client.start()
        #expect(await intruder.waitConnected(), "\(describe(intruder))")
        intruder.stop()
        // Taken from the queue by the control plane: the fences sent again at the reconnect.
        let again = await watcher.waitStatus(h.statusTopic, timeout: .seconds(300)) { $0.counter("received") >= receivedAtStart + count }
        #expect(again.ok, "\(again.status?.description ?? "no status")\n\(tail(gateway.log))")
        #expect(await handled("reconnect"), "\(tail(gateway.log))")
        let afterReconnect = Self.memory(pid: gateway.pid)
        let rejections = gateway.log.components(separatedBy: "runtime fence junk/").count - 1
        print("""
            \(count) retained 1 MiB junk fences: gateway RSS after the start \(Int(afterStart.rss)) MiB (peak \(Int(afterStart.peak)) MiB), \
            after a reconnect \(Int(afterReconnect.rss)) MiB (peak \(Int(afterReconnect.peak)) MiB); log lines naming a junk fence: \(rejections)
            """)
        #expect(afterStart.peak < 512, "peak RSS \(afterStart.peak) MiB at the start, expected under 512 MiB (MemoryMax=1G)")
        #expect(afterReconnect.peak < 512, "peak RSS \(afterReconnect.peak) MiB after the reconnect, expected under 512 MiB (MemoryMax=1G)")
        #expect(gateway.isRunning)
        #expect(gateway.terminate() == 0)
    }
}
