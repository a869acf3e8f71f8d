import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// What a query reply costs the gateway (docs/limits.md): its budget counts everything each
    /// message carries (the reply topic and the MQTT v5 correlation data copied from the query,
    /// not only the JSON), and one querying user has at most 4 replies being written at a time.
    @Suite struct QueryReplyLimits {
        static let budget = 900 * 1024

        /// The bytes of a reply message on the wire, besides its fixed header and packet id:
        /// payload, topic and correlation data.
        static func carried(_ message: MQTTMessage) -> Int {
            message.payload.count + message.topic.utf8.count + (message.correlationData?.count ?? 0)
        }

        /// A v5 query with 60,000 bytes of correlation data over 20,000 fences: with `partBytes`
        /// 1024 it is refused (a part cannot carry the correlation data), not answered with
        /// thousands of parts of 61 KB each; with `partBytes` 200,000 every part with its
        /// correlation data and topic stays within 200,000 bytes and all of them within the
        /// 900 KiB; in one message, the same.
        @Test(.timeLimit(.minutes(3))) func correlationDataCountsInTheReplyBudget() async throws {
            let rig = try await QueryBudget.gridRig("reply-correlation")
            defer { rig.close() }
            let h = rig.h, probe = rig.probe
            let correlationData = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            /// Sends `query` with a v5 response topic and the correlation data; the messages on
            /// that topic once the first came and two more statuses passed (nothing more comes).
            func ask(_ name: String, _ query: String) async throws -> [MQTTMessage] {
                let responseTopic = "\(h.prefix)/replies/map/\(name)"
                try probe.client.publish(
                    topic: "\(h.prefix)/query/\(h.gatewayID)", payload: query, qos: .atLeastOnce,
                    properties: MQTTPublishProperties(responseTopic: responseTopic, correlationData: correlationData))
                #expect(await poll(timeout: .seconds(60)) { !probe.received(on: responseTopic).isEmpty }, "\(tail(rig.gateway.log))")
                let first = probe.received(on: responseTopic).first
                if let parts = first.flatMap(json)?["parts"]?.numberValue {
                    _ = await poll(timeout: .seconds(60)) { probe.received(on: responseTopic).count >= Int(parts) }
                }
                let mark = probe.received(on: h.statusTopic).count
                _ = await poll(timeout: .seconds(30)) { probe.received(on: h.statusTopic).count >= mark + 2 }
                return probe.received(on: responseTopic)
            }

            let tiny = try await ask("tiny", #"{"features":{"limit":10000,"partBytes":1024}}"#)
            let tinyCarried = tiny.map(Self.carried).reduce(0, +)
            print("features, partBytes 1024, 60,000 bytes of correlation data: \(tiny.count) messages, \(tinyCarried) bytes")
            #expect(tiny.count == 1, "\(tiny.count) messages, \(tinyCarried) bytes")
            let refusal = tiny.first.flatMap(json)?["error"]?.stringValue ?? ""
            #expect(refusal.contains("\"partBytes\" 1024 is less than the") && refusal.contains("expected partBytes of at least"), "\(refusal)")
            #expect(tiny.first?.correlationData == correlationData)

            let parts = try await ask("parts", #"{"features":{"limit":10000,"partBytes":200000}}"#)
            let partsCarried = parts.map(Self.carried).reduce(0, +)
            print("features, partBytes 200000, 60,000 bytes of correlation data: \(parts.count) parts, \(partsCarried) bytes, largest \(parts.map(Self.carried).max() ?? 0)")
            #expect(parts.count >= 2 && parts.allSatisfy { $0.correlationData == correlationData })
            #expect(parts.allSatisfy { Self.carried($0) <= 200_000 }, "\(parts.map(Self.carried))")
            #expect(partsCarried <= Self.budget, "\(partsCarried) bytes")
            #expect(parts.last.flatMap(json)?["truncated"] == .bool(true))

            let whole = try await ask("whole", #"{"features":{"limit":10000}}"#)
            print("features in one message, 60,000 bytes of correlation data: \(whole.map(Self.carried)) bytes")
            #expect(whole.count == 1 && whole.allSatisfy { Self.carried($0) <= Self.budget }, "\(whole.map(Self.carried))")
        }

        /// The broker's acknowledgements of the gateway's publishes held back (a proxy between
        /// them): alice asks 6 queries, bob 1. alice's first 4 replies are written and stay
        /// unacknowledged; her 5th and 6th are answered `busy`, bob's is answered. Once the
        /// broker's acknowledgements go through, alice is answered again.
        @Test(.timeLimit(.minutes(3))) func oneQueryingUserHasAtMostFourRepliesBeingWritten() async throws {
            let h = try ServeHarness("reply-slots")
            defer { h.close() }
            let proxy = try PubackHoldingProxy(to: h.broker.port)
            defer { proxy.close() }
            let config = try h.write("gw.json5", h.config(port: proxy.port))
            let dispatcher = try await h.probe("dispatch", subscribe: [h.statusTopic, "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await dispatcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            func ask(_ user: String, _ n: Int) throws -> String {
                let replyTo = "\(h.prefix)/replies/\(user)/q\(n)"
                try dispatcher.client.publish(
                    topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"fences":"garden-sections","replyTo":"\#(replyTo)"}"#, qos: .atLeastOnce)
                return replyTo
            }
            func answer(_ replyTo: String) -> JSONObject? { dispatcher.received(on: replyTo).first.flatMap(json) }

            proxy.hold()
            let alice = try (0..<6).map { try ask("alice", $0) }
            let bob = try ask("bob", 0)
            #expect(await poll(timeout: .seconds(60)) { (alice + [bob]).allSatisfy { answer($0) != nil } },
                    "\((alice + [bob]).map { answer($0)?.keys.joined(separator: ",") ?? "none" })\n\(tail(gateway.log))")
            let verdicts = alice.map { answer($0).map { $0["fences"] != nil ? "answered" : ($0["error"]?.stringValue ?? "?") } ?? "none" }
            print("alice's 6 queries with the broker's acknowledgements held (\(proxy.heldCount) held): \(verdicts)")
            #expect(verdicts.prefix(4).allSatisfy { $0 == "answered" }, "\(verdicts)")
            #expect(verdicts.suffix(2).allSatisfy {
                $0.hasPrefix("busy: 4 replies to \(h.prefix)/replies/alice are still being written")
            }, "\(verdicts)")
            #expect(answer(bob)?["fences"]?.arrayValue?.isEmpty == false, "\(answer(bob) ?? [:])")

            proxy.release()
            // Once the broker's acknowledgements of alice's replies arrive, she is answered again.
            var again: JSONObject?
            let answered = await poll(timeout: .seconds(60)) {
                let replyTo = (try? ask("alice", Int.random(in: 100..<1_000_000))) ?? ""
                _ = await poll(timeout: .seconds(5)) { answer(replyTo) != nil }
                again = answer(replyTo)
                return again?["fences"] != nil
            }
            #expect(answered, "\(again ?? [:])")
            #expect(gateway.terminate() == 0)
        }
    }
}
