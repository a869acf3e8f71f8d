import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// A `geotrigger serve` with the repository's fences, one `json` feed for `vehicles/*`, one
/// trigger on the `fleet` layer for `vehicles/*`, and a dispatcher probe recording
/// `PREFIX/expect/#`, the replies and the status.
private final class ExpectationRig: @unchecked Sendable {
    // @unchecked: used by its one test only.
    let h: ServeHarness
    let configPath: String
    let dispatcher: MQTTProbe
    private(set) var gateway: GatewayProcess?
    private var queries = 0

    /// Inside the fleet layer's depot (65 m inside), and south of it, outside every fence.
    static let depot = (lat: 34.4288197, lon: -119.6932719)
    static let outside = (lat: 34.4265, lon: -119.6932)

    init(_ name: String, broker: MosquittoProcess.Options = .init()) async throws {
        h = try ServeHarness(name, broker: broker)
        configPath = try h.write("gw.json5", h.config(extra: """
            feeds: [{ name: "fleet", topic: "\(h.prefix)-in/fleet/+/+/location", format: "json" }],
            triggers: [{ name: "fleet", fences: ["fleet"], devices: ["vehicles/*"] }],
            """))
        dispatcher = try await h.probe("dispatcher", subscribe: ["\(h.prefix)/expect/#", "\(h.prefix)/replies/#", h.statusTopic])
    }

    func close() { h.close() }

    func start(log: String = "gateway.log") async throws {
        let before = dispatcher.statusCount(h.statusTopic, saying: "started")
        let gateway = try h.startGateway(config: configPath, log: log)
        self.gateway = gateway
        let up = await poll(timeout: .seconds(60)) { dispatcher.statusCount(h.statusTopic, saying: "started") > before }
        #expect(up, "the gateway did not start:\n\(tail(gateway.log))")
    }

    func stop() {
        #expect(gateway?.terminate() == 0, "gateway exit status:\n\(tail(gateway?.log ?? ""))")
        gateway = nil
    }

    func killNine() {
        gateway?.kill()
        gateway = nil
    }

    var log: String { gateway?.log ?? "" }

    func topic(_ id: String) -> String { "\(h.prefix)/expect/\(id)" }

    /// Publishes an expectation, retained, like a dispatcher.
    func expect(_ id: String, device: String = "vehicles/v17", fence: String = "depot", by: Double) throws {
        try publish(id, #"{"device":"\#(device)","layer":"fleet","fence":"\#(fence)","by":"\#(iso8601(by, milliseconds: true))"}"#)
    }

    func publish(_ id: String, _ payload: String) throws {
        try dispatcher.client.publish(topic: topic(id), payload: payload, qos: .atLeastOnce, retain: true)
    }

    func cancel(_ id: String) throws {
        try dispatcher.client.publish(topic: topic(id), payload: [UInt8](), qos: .atLeastOnce, retain: true)
    }

    func move(_ device: String = "vehicles/v17", to point: (lat: Double, lon: Double), time: Double) throws {
        try dispatcher.client.publish(
            topic: "\(h.prefix)-in/fleet/\(device)/location", payload: Payload.json(lat: point.lat, lon: point.lon, time: time),
            qos: .atLeastOnce)
    }

    /// The results received for `id`, parsed, in order.
    func results(_ id: String) -> [JSONObject] { dispatcher.received(on: topic(id) + "/result").compactMap(json) }

    func errors(_ id: String) -> [JSONObject] { dispatcher.received(on: topic(id) + "/error").compactMap(json) }

    /// Waits for the first result of `id`.
    func result(_ id: String, timeout: Duration = .seconds(60)) async throws -> JSONObject {
        _ = await poll(timeout: timeout) { !results(id).isEmpty }
        return try #require(results(id).first, "no result for \(id):\n\(tail(log))")
    }

    /// `{"expectations": device}` on the query topic, answered under `PREFIX/replies/`.
    func openExpectations(_ device: String = "*") async throws -> JSONObject {
        queries += 1
        let replyTo = "\(h.prefix)/replies/q\(queries)"
        try dispatcher.client.publish(
            topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"expectations":"\#(device)","replyTo":"\#(replyTo)"}"#,
            qos: .atLeastOnce)
        _ = await poll(timeout: .seconds(30)) { !dispatcher.received(on: replyTo).isEmpty }
        return try #require(dispatcher.received(on: replyTo).first.flatMap(json), "no reply to the expectations query")
    }

    /// Waits until the query lists exactly `ids` as open.
    func waitOpen(_ ids: [String]) async throws -> Bool {
        var last: [String] = []
        let ok = try await poll(timeout: .seconds(30), interval: .milliseconds(100)) {
            let reply = try await openExpectations()
            last = reply["expectations"]?.arrayValue?.compactMap { $0.objectValue?["expectation"]?.stringValue } ?? []
            return last == ids
        }
        if !ok { Issue.record("open expectations \(last), expected \(ids)") }
        return ok
    }

    /// The retained payload the broker holds for `topic` (nil: none): a fresh client subscribes
    /// to it and to a ping topic, then publishes the ping; the broker queues retained messages at
    /// the subscription, so they come before the ping.
    func retained(_ topic: String) async throws -> [UInt8]? {
        queries += 1
        let ping = "\(topic)/ping-\(queries)"
        let reader = try await h.probe("reader-\(queries)", subscribe: [topic, ping], cleanStart: true)
        defer { reader.stop() }
        try reader.client.publish(topic: ping, payload: "ping", qos: .atLeastOnce)
        let pinged = await poll(timeout: .seconds(30)) { !reader.received(on: ping).isEmpty }
        #expect(pinged)
        return reader.received(on: topic).first { !$0.payload.isEmpty }?.payload
    }

    /// Waits until the gateway's clear of `id` (an empty message) went through the broker.
    func waitCleared(_ id: String) async -> Bool {
        await poll(timeout: .seconds(30)) { dispatcher.received(on: topic(id)).contains { $0.payload.isEmpty } }
    }
}

extension ServeTests {
    /// docs/expectations.md end to end: real broker, real `geotrigger serve`, real SQLite.
    @Suite struct ExpectedArrivals {
        @Test func anEnterBeforeTheDeadlineArrivesEarlyAndTheTopicIsCleared() async throws {
            let rig = try await ExpectationRig("expect-met")
            defer { rig.close() }
            try await rig.start()
            let now = Date().timeIntervalSince1970
            let by = (now + 3600).rounded()
            try rig.expect("delivery-17", by: by)
            // Already inside when its expectation arrives: v18 stays in the depot from t0.
            let t0 = fixTimeBase(secondsAgo: 120)
            try rig.move("vehicles/v18", to: ExpectationRig.depot, time: t0)
            #expect(try await rig.waitOpen(["delivery-17"]))
            let listed = try await rig.openExpectations("vehicles/v17")
            let row = try #require(listed["expectations"]?.arrayValue?.first?.objectValue)
            #expect(row["device"] == .string("vehicles/v17") && row["layer"] == .string("fleet") && row["fence"] == .string("depot"))
            #expect(row["by"] == .string(iso8601(by)))
            #expect(listed["count"] == .number(1))

            try rig.move(to: ExpectationRig.outside, time: t0 + 10)
            try rig.move(to: ExpectationRig.depot, time: t0 + 20)
            let result = try await rig.result("delivery-17")
            #expect(result["result"] == .string("arrived"), "\(result)")
            #expect(result["expectation"] == .string("delivery-17"))
            #expect(result["device"] == .string("vehicles/v17"))
            #expect(result["layer"] == .string("fleet") && result["fence"] == .string("depot"))
            #expect(result["by"] == .string(iso8601(by)))
            #expect(result["time"] == .string(iso8601(t0 + 20)))
            #expect(result["early"] == .number(by - (t0 + 20)))
            #expect((result["id"]?.stringValue?.count ?? 0) == 32)
            #expect(result["emitted"]?.stringValue.flatMap(ISO8601Time.parse).map { $0 >= now - 1 } == true)

            // Settled: the retained topic is cleared, and nothing is open.
            #expect(await rig.waitCleared("delivery-17"))
            #expect(try await rig.retained(rig.topic("delivery-17")) == nil)
            #expect(try await rig.waitOpen([]))

            // A stay when the expectation arrives meets it at the stay's enter.
            try rig.expect("delivery-18", device: "vehicles/v18", by: by)
            let stay = try await rig.result("delivery-18")
            #expect(stay["result"] == .string("arrived"))
            #expect(stay["time"] == .string(iso8601(t0)))
            #expect(stay["early"] == .number(by - t0))
            rig.stop()
            #expect(rig.results("delivery-17").count == 1 && rig.results("delivery-18").count == 1)
        }

        @Test func noArrivalByTheDeadlineIsMissedAndCleared() async throws {
            let rig = try await ExpectationRig("expect-missed")
            defer { rig.close() }
            try await rig.start()
            let by = Date().timeIntervalSince1970 + 3
            try rig.expect("late", by: by)
            try rig.move(to: ExpectationRig.outside, time: fixTimeBase(secondsAgo: 60))
            let result = try await rig.result("late")
            #expect(result["result"] == .string("missed"), "\(result)")
            #expect(result["time"] == .string(iso8601(by, milliseconds: true)))
            #expect(result["by"] == .string(iso8601(by, milliseconds: true)))
            #expect(result["early"] == nil)
            let emitted = try #require(result["emitted"]?.stringValue.flatMap(ISO8601Time.parse))
            #expect(emitted >= by && emitted < by + 10, "decided at the deadline by the wall clock")
            #expect(await rig.waitCleared("late"))
            #expect(try await rig.retained(rig.topic("late")) == nil)
            // An enter after the miss changes nothing.
            try rig.move(to: ExpectationRig.depot, time: fixTimeBase(secondsAgo: 30))
            try rig.expect("barrier", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 1)
            _ = try await rig.result("barrier")
            #expect(rig.results("late").count == 1)
        }

        @Test func aDeadlinePassedWhileStoppedIsMissedOnceAtStart() async throws {
            let rig = try await ExpectationRig("expect-restart")
            defer { rig.close() }
            try await rig.start()
            let by = Date().timeIntervalSince1970 + 4
            try rig.expect("overnight", by: by)
            #expect(try await rig.waitOpen(["overnight"]))
            rig.stop()
            #expect(rig.results("overnight").isEmpty)
            // While the gateway is down the deadline passes.
            #expect(await poll(timeout: .seconds(30)) { Date().timeIntervalSince1970 > by + 1 })
            try await rig.start(log: "gateway-2.log")
            let result = try await rig.result("overnight")
            #expect(result["result"] == .string("missed"))
            #expect(result["time"] == .string(iso8601(by, milliseconds: true)))
            #expect(await rig.waitCleared("overnight"))
            // Another restart decides nothing again; a later expectation shows the gateway had
            // time to (its first deadline round runs before it takes any message).
            rig.stop()
            try await rig.start(log: "gateway-3.log")
            try rig.expect("barrier", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 1)
            _ = try await rig.result("barrier")
            #expect(rig.results("overnight").count == 1, "\(rig.results("overnight"))")
            rig.stop()
        }

        /// The deadline passes while the broker is down: decided then by the wall clock, delivered
        /// after the reconnect, and the retained topic cleared once the broker is back.
        @Test func aDeadlineDuringABrokerOutageIsMissedAndDeliveredAfterIt() async throws {
            let rig = try await ExpectationRig("expect-outage", broker: .init(persistence: true))
            defer { rig.close() }
            try await rig.start()
            let by = Date().timeIntervalSince1970 + 3
            try rig.expect("storm", by: by)
            #expect(try await rig.waitOpen(["storm"]))
            rig.h.broker.stop()
            #expect(await rig.dispatcher.waitDisconnected())
            // The outage lasts past the deadline (the broker is down: nothing can arrive meanwhile).
            #expect(await poll(timeout: .seconds(30)) { Date().timeIntervalSince1970 > by + 2 })
            let backAt = Date().timeIntervalSince1970
            try rig.h.broker.start()
            let result = try await rig.result("storm", timeout: .seconds(90))
            #expect(result["result"] == .string("missed"))
            let emitted = try #require(result["emitted"]?.stringValue.flatMap(ISO8601Time.parse))
            #expect(emitted >= by && emitted < backAt, "decided at the deadline during the outage, not after it")
            #expect(await rig.waitCleared("storm"))
            #expect(try await rig.retained(rig.topic("storm")) == nil)
            #expect(Set(rig.results("storm").compactMap { $0["id"]?.stringValue }).count == 1)
            rig.stop()
        }

        @Test func anEmptyPayloadCancelsWithoutAResult() async throws {
            let rig = try await ExpectationRig("expect-cancel")
            defer { rig.close() }
            try await rig.start()
            let by = Date().timeIntervalSince1970 + 3
            try rig.expect("called-off", by: by)
            #expect(try await rig.waitOpen(["called-off"]))
            try rig.cancel("called-off")
            #expect(try await rig.waitOpen([]))
            // Past its deadline, and an enter: still no result.
            #expect(await poll(timeout: .seconds(30)) { Date().timeIntervalSince1970 > by + 1 })
            try rig.move(to: ExpectationRig.depot, time: fixTimeBase(secondsAgo: 30))
            try rig.expect("barrier", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 1)
            _ = try await rig.result("barrier")
            #expect(rig.results("called-off").isEmpty)
            // A new payload for the id opens it afresh (replaces). For v18, outside the depot: v17
            // is in it now, so its stay check would settle the expectation as arrived, and the
            // query would see it open only if it came before that check.
            try rig.expect("called-off", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 3600)
            try rig.expect("called-off", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 7200)
            #expect(try await rig.waitOpen(["called-off"]))
            rig.stop()
        }

        @Test func invalidPayloadsAreRejectedOnTheErrorTopic() async throws {
            let rig = try await ExpectationRig("expect-invalid")
            defer { rig.close() }
            try await rig.start()
            let by = iso8601(Date().timeIntervalSince1970 + 3600)
            let cases: [(id: String, payload: String, says: String)] = [
                ("not-json", "tomorrow at nine", "not JSON"),
                ("array", "[1, 2]", "expected a JSON object"),
                ("no-by", #"{"device":"vehicles/v17","layer":"fleet","fence":"depot"}"#, "\"by\" is missing"),
                ("bad-time", #"{"device":"vehicles/v17","layer":"fleet","fence":"depot","by":"09:30"}"#, "\"by\" must be an ISO-8601 time"),
                ("no-layer", #"{"device":"vehicles/v17","layer":"sites","fence":"depot","by":"\#(by)"}"#, "no fence layer \"sites\""),
                ("no-fence", #"{"device":"vehicles/v17","layer":"fleet","fence":"dock","by":"\#(by)"}"#, "no fence \"dock\" in layer \"fleet\""),
                ("no-trigger", #"{"device":"walkers/ann","layer":"fleet","fence":"depot","by":"\#(by)"}"#,
                 "no trigger watches layer \"fleet\" for device \"walkers/ann\""),
            ]
            for item in cases { try rig.publish(item.id, item.payload) }
            for item in cases {
                _ = await poll(timeout: .seconds(30)) { !rig.errors(item.id).isEmpty }
                let error = try #require(rig.errors(item.id).first, "no error for \(item.id)")
                #expect(error["expectation"] == .string(item.id))
                #expect(error["error"]?.stringValue?.contains(item.says) == true, "\(item.id): \(error)")
                #expect(error["time"]?.stringValue != nil)
            }
            #expect(try await rig.waitOpen([]))
            let warned = await rig.dispatcher.waitStatus(rig.h.statusTopic) { status in
                status.warnings.contains { $0.contains("expectation no-fence rejected") && $0.contains("no fence \"dock\"") }
            }
            #expect(warned.ok, "\(String(describing: warned.status))")
            rig.stop()
        }

        /// docs/control-plane.md "Expected arrivals": an expectation stored as open is decided again from the
        /// device's stay at start. The device is inside the depot; an expectation of it arrives
        /// and the gateway is killed 30, 80, 150 or 300 ms later, between storing it and
        /// answering its stay check or after. After the restart the device keeps reporting from
        /// inside (no new enter): the result is `arrived` at the enter's fix time, never `missed`.
        @Test(.timeLimit(.minutes(6)))
        func killNineRightAfterAnExpectationStillArrivesFromTheStay() async throws {
            let rig = try await ExpectationRig("expect-kill-stay")
            defer { rig.close() }
            try await rig.start()
            let t0 = fixTimeBase(secondsAgo: 600)
            try rig.move(to: ExpectationRig.outside, time: t0)
            try rig.move(to: ExpectationRig.depot, time: t0 + 10)
            // Its arrival shows the stay is known and committed.
            try rig.expect("warm", by: Date().timeIntervalSince1970 + 3600)
            #expect(try await rig.result("warm")["result"] == .string("arrived"))
            var fix = t0 + 20
            var outcomes: [String] = []
            for (start, delay) in [30, 80, 150, 300].enumerated() {
                let id = "stay-\(delay)ms"
                let by = (Date().timeIntervalSince1970 + 8).rounded()
                try rig.expect(id, by: by)
                try await Task.sleep(for: .milliseconds(delay))
                rig.killNine()
                try await rig.start(log: "gateway-\(start + 2).log")
                // Still inside: the device reports every 300 ms until a result comes (or well
                // past the deadline).
                let deadline = Date().timeIntervalSince1970 + 40
                while rig.results(id).isEmpty, Date().timeIntervalSince1970 < deadline {
                    fix += 1
                    try rig.move(to: ExpectationRig.depot, time: fix)
                    try await Task.sleep(for: .milliseconds(300))
                }
                let result = rig.results(id).first
                outcomes.append("\(delay) ms: \(result?["result"]?.stringValue ?? "no result")")
                #expect(result?["result"] == .string("arrived"), "kill after \(delay) ms: \(result.map { "\($0)" } ?? "no result"):\n\(tail(rig.log))")
                #expect(result?["time"] == .string(iso8601(t0 + 10)), "the stay began at the enter")
            }
            print("kill -9 after an expectation of a device inside: \(outcomes.joined(separator: ", "))")
            rig.stop()
        }

        /// `kill -9` first right after the deciding update was sent, then right after its result
        /// was received: after each restart, the result is there exactly once by id (the outbox
        /// may send it again, with the same id), and no second decision is made.
        @Test(.timeLimit(.minutes(4)))
        func killNineAroundTheDecisionRepeatsNoResult() async throws {
            let rig = try await ExpectationRig("expect-kill")
            defer { rig.close() }
            try await rig.start()
            let by = (Date().timeIntervalSince1970 + 3600).rounded()
            try rig.expect("rush", by: by)
            #expect(try await rig.waitOpen(["rush"]))
            let t0 = fixTimeBase(secondsAgo: 120)
            try rig.move(to: ExpectationRig.outside, time: t0)
            try rig.move(to: ExpectationRig.depot, time: t0 + 10)
            rig.killNine()

            // The update was committed with its enter and result, or lost in the window before
            // the commit: the device sends it again (a duplicate, or the enter now).
            try await rig.start(log: "gateway-2.log")
            try rig.move(to: ExpectationRig.outside, time: t0)
            try rig.move(to: ExpectationRig.depot, time: t0 + 10)
            let result = try await rig.result("rush")
            rig.killNine()

            try await rig.start(log: "gateway-3.log")
            try rig.expect("barrier", device: "vehicles/v18", by: Date().timeIntervalSince1970 + 1)
            _ = try await rig.result("barrier")
            #expect(await rig.waitCleared("rush"))
            let ids = Set(rig.results("rush").compactMap { $0["id"]?.stringValue })
            #expect(ids == Set([try #require(result["id"]?.stringValue)]), "results: \(rig.results("rush"))")
            #expect(rig.results("rush").allSatisfy { $0["result"] == .string("arrived") && $0["time"] == .string(iso8601(t0 + 10)) })
            #expect(try await rig.waitOpen([]))
            rig.stop()
            print("kill -9 expectation test: \(rig.results("rush").count) result messages, \(ids.count) distinct id")
        }
    }
}

extension ServeTests.ShippedBroker {
    /// Under the shipped ACL the dispatcher may publish expectations and read their results,
    /// and the gateway may read them, write results and clear the settled topic.
    @Test func expectationsWorkUnderTheShippedACL() async throws {
        let h = try ServeHarness("expect-acl", broker: try Self.options())
        defer { h.close() }
        let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
        let dispatcher = try await h.probe("dispatcher", subscribe: ["geotriggers/expect/#", h.eventsFilter(prefix: "geotriggers"), statusTopic],
                                           configure: Self.credentials("dispatch"))
        let vehicle = try await h.probe("vehicle", configure: Self.credentials("v17"))
        let gateway = try h.startGateway(config: try Self.gatewayConfig(h))
        #expect(await dispatcher.waitStatus(statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
        let by = (Date().timeIntervalSince1970 + 3600).rounded()
        try dispatcher.client.publish(
            topic: "geotriggers/expect/meadow-v17",
            payload: #"{"device":"v17","layer":"garden-sections","fence":"meadow","by":"\#(iso8601(by))"}"#, qos: .atLeastOnce, retain: true)
        // Taken before or after the enter: the enter, or the stay check, meets it.
        let t0 = fixTimeBase()
        #expect(try await Self.vehicleEnters(h, watcher: dispatcher, vehicle: vehicle, at: t0), "\(tail(gateway.log))")
        let arrived = await poll(timeout: .seconds(60)) {
            dispatcher.received(on: "geotriggers/expect/meadow-v17/result").compactMap(json).contains { $0["result"] == .string("arrived") }
        }
        #expect(arrived, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
        let cleared = await poll(timeout: .seconds(30)) {
            dispatcher.received(on: "geotriggers/expect/meadow-v17").contains { $0.payload.isEmpty }
        }
        #expect(cleared, "the gateway may clear the settled topic:\n\(tail(h.brokerLog))")
        #expect(gateway.terminate() == 0)
    }
}
