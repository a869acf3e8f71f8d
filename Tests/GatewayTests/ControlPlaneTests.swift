import Foundation
import MQTT
import Testing
import TestSupport

/// A broker, a real `geotrigger serve` and a v5 dispatcher client that records `geotriggers/#`
/// (replies included: they go under `geotriggers/replies/`).
private final class ControlPlaneRig: @unchecked Sendable {
    let directory: TemporaryDirectory
    let broker: MosquittoProcess
    var gateway: GatewayProcess?
    let dispatcher: MQTTProbe
    let config: String
    var correlationCounter = 0

    init(name: String, extraConfig: String = "", broker options: MosquittoProcess.Options = .init()) async throws {
        directory = try TemporaryDirectory(prefix: "control-\(name)")
        try FileManager.default.createDirectory(atPath: directory.file("fences"), withIntermediateDirectories: true)
        _ = try directory.write("fences/zones.geojson", #"{"type":"FeatureCollection","features":[]}"#)
        broker = try MosquittoProcess(options)
        config = try directory.write(
            "gw.json5",
            """
            { broker: { port: \(broker.port), clientId: "gw-\(name)" }, gateway: { id: "gw-t" },
              output: { statusInterval: 1 }, \(extraConfig) }
            """)
        dispatcher = try MQTTProbe(port: broker.port, clientId: "dispatcher-\(name)") { $0.cleanStart = true; $0.sessionExpiry = 0 }
        dispatcher.collect()
        try dispatcher.client.start()
        try dispatcher.client.subscribe("geotriggers/#")
        #expect(await dispatcher.waitSubscribed("geotriggers/#"))
    }

    func startGateway() async throws {
        let statusTopic = GatewayStatus.topic(gatewayID: "gw-t")
        let before = dispatcher.statusCount(statusTopic, saying: "started")
        gateway = try GatewayProcess(["serve", "--config", config], directory: directory.path, logFile: directory.file("gw.log"))
        let up = await poll { dispatcher.statusCount(statusTopic, saying: "started") > before }
        #expect(up, "gateway did not start: \(gateway?.log ?? "")")
    }

    func stopGateway() {
        #expect(gateway?.terminate() == 0, "\(gateway.map { tail($0.log) } ?? "")")
        gateway = nil
    }

    func publishFence(_ layer: String, _ id: String, _ feature: String) throws {
        try dispatcher.client.publish(topic: "geotriggers/fences/\(layer)/\(id)", payload: feature, qos: .atLeastOnce, retain: true)
    }

    func deleteFence(_ layer: String, _ id: String) throws {
        try dispatcher.client.publish(topic: "geotriggers/fences/\(layer)/\(id)", payload: [UInt8](), qos: .atLeastOnce, retain: true)
    }

    func move(_ device: String, lat: Double, lon: Double, time: Double) throws {
        try dispatcher.client.publish(
            topic: "devices/\(device)/location", payload: #"{"lat":\#(lat),"lon":\#(lon),"time":\#(time)}"#, qos: .atLeastOnce)
    }

    /// Sends a v5 query (response topic + correlation data) and returns the reply, or nil when
    /// none came within `timeout` (records nothing: for polling).
    func reply(_ json: String, timeout: Duration = .seconds(3)) async throws -> [String: Any]? {
        correlationCounter += 1
        let correlation = Array("c-\(correlationCounter)".utf8)
        let replyTopic = "geotriggers/replies/v5/\(correlationCounter)"
        try dispatcher.client.publish(
            topic: "geotriggers/query/gw-t", payload: json, qos: .atLeastOnce,
            properties: MQTTPublishProperties(responseTopic: replyTopic, correlationData: correlation))
        var reply: MQTTMessage?
        _ = await poll(timeout: timeout) {
            reply = dispatcher.messages.all.first { $0.topic == replyTopic }
            return reply != nil
        }
        guard let reply, reply.correlationData == correlation else { return nil }
        return try JSONSerialization.jsonObject(with: Data(reply.payload)) as? [String: Any]
    }

    /// ``reply(_:timeout:)`` that must be answered.
    func query(_ json: String) async throws -> [String: Any] {
        try #require(try await reply(json, timeout: .seconds(20)), "no reply to \(json)")
    }

    /// Events published for `device`, parsed.
    func events(_ device: String) -> [[String: Any]] {
        dispatcher.messages.all.filter { $0.topic.hasPrefix("geotriggers/events/") && $0.topic.hasSuffix("/\(device)") }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
    }

    func eventSummary(_ device: String) -> [String] {
        events(device).map { e in
            let fence = (e["fence"] as? [String: Any])?["id"] as? String ?? "?"
            return "\(e["type"] as? String ?? "?") \(fence)" + ((e["reason"] as? String).map { " \($0)" } ?? "")
        }
    }

    /// Ids of the fences of `layer` by the `fences` query.
    func fenceIDs(_ layer: String) async throws -> [String] {
        guard let reply = try await reply(#"{"fences":"\#(layer)"}"#) else { return [] }
        return ((reply["fences"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
    }

    deinit {
        gateway?.kill()
        dispatcher.stop()
        broker.stop()
    }
}

/// A Point fence with a buffer (metres).
private func pointFence(lat: Double, lon: Double, buffer: Double, name: String? = nil, extra: String = "") -> String {
    let nameKey = name.map { #""name":"\#($0)","# } ?? ""
    return #"{"type":"Feature","properties":{\#(nameKey)"buffer":\#(buffer)\#(extra)},"geometry":{"type":"Point","coordinates":[\#(lon),\#(lat)]}}"#
}

/// Degrees of latitude per metre.
private let perMetre = 1 / 111_195.0
private let baseLat = 34.45, baseLon = -119.70

@Suite("Control plane: runtime fences and queries over MQTT", .serialized)
struct ControlPlaneTests {
    @Test("a runtime fence: enter within one update, moved: exit and enter by geometry, deleted: fenceRemoved; bad payloads get errors")
    func fenceLifecycle() async throws {
        let rig = try await ControlPlaneRig(name: "life")
        try await rig.startGateway()
        let t0 = Date().timeIntervalSince1970.rounded() - 100
        try rig.move("d1", lat: baseLat, lon: baseLon, time: t0)
        try rig.publishFence("jobs", "site", pointFence(lat: baseLat, lon: baseLon, buffer: 50, name: "Site"))
        #expect(await poll { (try? await rig.fenceIDs("jobs")) == ["site"] })
        try rig.move("d1", lat: baseLat, lon: baseLon, time: t0 + 1)
        #expect(await poll { rig.eventSummary("d1") == ["enter site"] }, "\(rig.eventSummary("d1"))")

        // Moved 1 km north: the next update exits, an update there enters.
        let north = baseLat + 1000 * perMetre
        try rig.publishFence("jobs", "site", pointFence(lat: north, lon: baseLon, buffer: 50, name: "Site"))
        #expect(await poll {
            let near = (try? await rig.reply(#"{"near":{"lat":\#(north),"lon":\#(baseLon),"radius":10}}"#))?["near"] as? [[String: Any]]
            return near?.first?["fence"] as? String == "site"
        })
        try rig.move("d1", lat: baseLat, lon: baseLon, time: t0 + 2)
        #expect(await poll { rig.eventSummary("d1") == ["enter site", "exit site moved"] }, "\(rig.eventSummary("d1"))")
        try rig.move("d1", lat: north, lon: baseLon, time: t0 + 3)
        #expect(await poll { rig.eventSummary("d1") == ["enter site", "exit site moved", "enter site"] }, "\(rig.eventSummary("d1"))")

        // Deleted: fenceRemoved without waiting for an update.
        try rig.deleteFence("jobs", "site")
        #expect(await poll { rig.eventSummary("d1").last == "exit site fenceRemoved" }, "\(rig.eventSummary("d1"))")

        // Malformed: an error reply (not retained), a status warning, nothing else changes.
        try rig.publishFence("jobs", "bad", #"{"type":"Feature","geometry":{"type":"Point","coordinates":[1]}}"#)
        try rig.publishFence("jobs", "other", pointFence(lat: baseLat, lon: baseLon, buffer: 20).replacingOccurrences(of: "\"properties\":{", with: "\"id\":\"x\",\"properties\":{"))
        try rig.publishFence("zones", "clash", pointFence(lat: baseLat, lon: baseLon, buffer: 20))
        #expect(await poll { rig.dispatcher.messages.all.contains { $0.topic == "geotriggers/fences/jobs/bad/error" } })
        let bad = try #require(rig.dispatcher.messages.all.first { $0.topic == "geotriggers/fences/jobs/bad/error" })
        #expect(!bad.retain)
        #expect(bad.payloadText.contains("expected a position"))
        #expect(await poll { rig.dispatcher.messages.all.contains { $0.topic == "geotriggers/fences/jobs/other/error" && $0.payloadText.contains("differs from the topic") } })
        #expect(await poll { rig.dispatcher.messages.all.contains { $0.topic == "geotriggers/fences/zones/clash/error" && $0.payloadText.contains("file layer") } })
        // A layer starting with a combining mark keeps it: its error names that layer on its own topic.
        try rig.publishFence("\u{301}jobs", "bad", #"{"type":"Feature","geometry":{"type":"Point","coordinates":[1]}}"#)
        #expect(await poll { rig.dispatcher.messages.all.contains { $0.topic == "geotriggers/fences/\u{301}jobs/bad/error" && $0.payloadText.contains("\"layer\":\"\u{301}jobs\"") } },
                "\(rig.dispatcher.messages.all.map(\.topic).filter { $0.hasSuffix("/error") })")
        #expect(await poll { rig.dispatcher.statuses(on: GatewayStatus.topic(gatewayID: "gw-t")).contains { $0.warnings.contains { $0.contains("runtime fence jobs/bad rejected") } } })
        // A Point without any buffer fails in the snapshot build: error, and the previous version stays.
        try rig.publishFence("jobs", "keep", pointFence(lat: baseLat, lon: baseLon, buffer: 30))
        #expect(await poll { (try? await rig.fenceIDs("jobs")) == ["keep"] })
        try rig.publishFence("jobs", "keep", #"{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[\#(baseLon),\#(baseLat)]}}"#)
        #expect(await poll { rig.dispatcher.messages.all.contains { $0.topic == "geotriggers/fences/jobs/keep/error" && $0.payloadText.contains("needs a buffer") } })
        try rig.move("d1", lat: baseLat, lon: baseLon, time: t0 + 4)
        #expect(await poll { rig.eventSummary("d1").last == "enter keep" }, "\(rig.eventSummary("d1"))")
        rig.stopGateway()
    }

    @Test("a restart restores runtime fences from retained messages (broker up) and from SQLite (broker down)")
    func restartRestores() async throws {
        let rig = try await ControlPlaneRig(name: "restart")
        try await rig.startGateway()
        try rig.publishFence("jobs", "a", pointFence(lat: baseLat, lon: baseLon, buffer: 40))
        try rig.publishFence("jobs", "b", pointFence(lat: baseLat + 0.01, lon: baseLon, buffer: 40))
        #expect(await poll { (try? await rig.fenceIDs("jobs")) == ["a", "b"] })
        rig.stopGateway()

        // Broker up, database gone: everything comes back from the retained messages.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: rig.directory.file("geotrigger.db" + suffix)) }
        try await rig.startGateway()
        #expect(await poll { (try? await rig.fenceIDs("jobs"))?.sorted() == ["a", "b"] })
        rig.stopGateway()

        // Broker down at start: the gateway starts with the fences saved in SQLite; a fresh
        // broker (no retained messages) then shows they came from the database.
        rig.broker.stop()
        let gateway = try GatewayProcess(["serve", "--config", rig.config], directory: rig.directory.path, logFile: rig.directory.file("gw2.log"))
        rig.gateway = gateway
        #expect(await poll { gateway.log.contains("runtime fences restored from the database fences=2") }, "\(gateway.log)")
        try rig.broker.start()
        #expect(await rig.dispatcher.waitSubscribed("geotriggers/#", count: 2))
        #expect(await poll { (try? await rig.fenceIDs("jobs"))?.sorted() == ["a", "b"] })
        rig.stopGateway()
    }

    @Test("runtime.maxFences and the 1 MiB payload limit reject on the error topic; a delete just before SIGTERM is saved")
    func limitsAndLastChangeSaved() async throws {
        let rig = try await ControlPlaneRig(name: "limits", extraConfig: "runtime: { maxFences: 2 },")
        try await rig.startGateway()
        try rig.publishFence("jobs", "a", pointFence(lat: baseLat, lon: baseLon, buffer: 40))
        try rig.publishFence("jobs", "b", pointFence(lat: baseLat + 0.01, lon: baseLon, buffer: 40))
        #expect(await poll { (try? await rig.fenceIDs("jobs")) == ["a", "b"] })
        // A third is one too many; replacing a live one is still fine.
        try rig.publishFence("jobs", "c", pointFence(lat: baseLat + 0.02, lon: baseLon, buffer: 40))
        try rig.publishFence("jobs", "b", pointFence(lat: baseLat + 0.01, lon: baseLon, buffer: 60))
        // Over 1 MiB: rejected before it is parsed.
        let padding = String(repeating: "x", count: 1 << 20)
        try rig.publishFence("other", "big", pointFence(lat: baseLat, lon: baseLon, buffer: 40, extra: #","pad":"\#(padding)""#))
        func rejection(_ layer: String, _ id: String) -> String? {
            rig.dispatcher.messages.all.last { $0.topic == "geotriggers/fences/\(layer)/\(id)/error" }
                .flatMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }?["error"] as? String
        }
        #expect(await poll { rejection("jobs", "c") != nil && rejection("other", "big") != nil })
        print("runtime limits: c: \(rejection("jobs", "c") ?? "-"); big: \(rejection("other", "big") ?? "-")")
        #expect(rejection("jobs", "c")?.contains("runtime.maxFences") == true)
        #expect(rejection("other", "big")?.contains("1048576 bytes") == true)
        #expect(rejection("jobs", "b") == nil)
        #expect(try await rig.fenceIDs("jobs") == ["a", "b"])

        // Change a, then delete b and stop right after: b's delete comes within the rebuild
        // interval (0.25 s) after a's rebuild, and is saved at the stop, so a start with the
        // broker down restores only a.
        try rig.publishFence("jobs", "a", pointFence(lat: baseLat, lon: baseLon, buffer: 50))
        try await Task.sleep(for: .milliseconds(80))
        try rig.deleteFence("jobs", "b")
        // Answered only after the delete was read (the control plane takes them in order): a
        // stop reads nothing more, so what it saves must have arrived before.
        _ = try await rig.fenceIDs("jobs")
        rig.stopGateway()
        rig.broker.stop()
        let gateway = try GatewayProcess(["serve", "--config", rig.config], directory: rig.directory.path, logFile: rig.directory.file("gw2.log"))
        rig.gateway = gateway
        #expect(await poll { gateway.log.contains("runtime fences restored from the database fences=") }, "\(gateway.log)")
        #expect(gateway.log.contains("runtime fences restored from the database fences=1"), "\(gateway.log)")
        rig.stopGateway()
    }

    @Test("a following fence moves with its vehicle: a walking worker enters and exits at the right updates; the vehicle never enters")
    func followingFence() async throws {
        let rig = try await ControlPlaneRig(name: "follow")
        try await rig.startGateway()
        let t0 = Date().timeIntervalSince1970.rounded() - 100
        try rig.publishFence("vehicles", "v17", pointFence(lat: 0, lon: 0, buffer: 30, extra: #","follow":"v17""#))
        #expect(await poll { (try? await rig.fenceIDs("vehicles")) == ["v17"] })
        // The vehicle reports: the fence jumps there.
        try rig.move("v17", lat: baseLat, lon: baseLon, time: t0)
        #expect(await poll {
            let near = (try? await rig.reply(#"{"near":{"lat":\#(baseLat),"lon":\#(baseLon),"radius":5}}"#))?["near"] as? [[String: Any]]
            return (near?.first?["distance"] as? Double).map { $0 < -29 } ?? false
        })
        // The worker walks up: 100 m (outside), 50 m (outside), 10 m (enter).
        try rig.move("w1", lat: baseLat + 100 * perMetre, lon: baseLon, time: t0 + 1)
        try rig.move("w1", lat: baseLat + 50 * perMetre, lon: baseLon, time: t0 + 2)
        try rig.move("w1", lat: baseLat + 10 * perMetre, lon: baseLon, time: t0 + 3)
        #expect(await poll { rig.eventSummary("w1") == ["enter v17"] }, "\(rig.eventSummary("w1"))")
        let enter = try #require(rig.events("w1").first)
        #expect((enter["position"] as? [String: Any])?["time"] as? String == ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: t0 + 3)))
        // The vehicle drives 500 m south; the worker stands still: the next update exits.
        let south = baseLat - 500 * perMetre
        try rig.move("v17", lat: south, lon: baseLon, time: t0 + 4)
        #expect(await poll {
            let near = (try? await rig.reply(#"{"near":{"lat":\#(south),"lon":\#(baseLon),"radius":5}}"#))?["near"] as? [[String: Any]]
            return near?.first?["fence"] as? String == "v17"
        })
        try rig.move("w1", lat: baseLat + 10 * perMetre, lon: baseLon, time: t0 + 5)
        #expect(await poll { rig.eventSummary("w1") == ["enter v17", "exit v17 moved"] }, "\(rig.eventSummary("w1"))")
        // The vehicle was inside its own fence at every update and never entered it.
        #expect(rig.events("v17").isEmpty)
        rig.stopGateway()
    }

    @Test("every query kind over v5 and v3.1.1; malformed queries get error replies")
    func queries() async throws {
        let rig = try await ControlPlaneRig(name: "query")
        try await rig.startGateway()
        let t0 = Date().timeIntervalSince1970.rounded() - 100
        try rig.publishFence("jobs", "site", pointFence(lat: baseLat, lon: baseLon, buffer: 50, name: "Site", extra: #","crew":4"#))
        try rig.publishFence("jobs", "far", pointFence(lat: baseLat + 0.05, lon: baseLon, buffer: 50))
        #expect(await poll { (try? await rig.fenceIDs("jobs"))?.sorted() == ["far", "site"] })
        try rig.move("d1", lat: baseLat, lon: baseLon, time: t0)
        try rig.move("d2", lat: baseLat + 20 * perMetre, lon: baseLon, time: t0)
        try rig.move("d3", lat: baseLat + 0.02, lon: baseLon, time: t0)
        #expect(await poll { rig.events("d1").count == 1 && rig.events("d2").count == 1 })

        // v5.
        let inside = try await rig.query(#"{"inside":{"layer":"jobs","fence":"site"}}"#)
        let rows = try #require(inside["inside"] as? [[String: Any]])
        #expect(rows.compactMap { $0["device"] as? String } == ["d1", "d2"])
        #expect(rows.first?["visit"] as? String == rig.events("d1").first?["visit"] as? String)
        #expect(rows.first?["since"] as? String == ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: t0)))
        let device = try await rig.query(#"{"device":"d1"}"#)
        let retained = try #require(rig.dispatcher.messages.all.last { $0.topic == "geotriggers/devices/d1/state" })
        let state = try #require(try JSONSerialization.jsonObject(with: Data(retained.payload)) as? [String: Any])
        #expect(device["device"] as? String == "d1")
        #expect((device["inside"] as? [[String: Any]])?.first?["visit"] as? String == (state["inside"] as? [[String: Any]])?.first?["visit"] as? String)
        let near = try #require(try await rig.query(#"{"near":{"lat":\#(baseLat),"lon":\#(baseLon),"radius":200}}"#)["near"] as? [[String: Any]])
        #expect(near.count == 1)
        #expect(near.first?["fence"] as? String == "site" && near.first?["distance"] as? Double == -50)
        let fences = try #require(try await rig.query(#"{"fences":"jobs"}"#)["fences"] as? [[String: Any]])
        let site = try #require(fences.first { $0["id"] as? String == "site" })
        #expect(site["name"] as? String == "Site" && site["geometry"] as? String == "Point")
        #expect((site["properties"] as? [String: Any])?["crew"] as? Int == 4)

        // v3.1.1: replyTo and correlation in the JSON.
        let old = try MQTTProbe(port: rig.broker.port, clientId: "dispatcher-v311", protocolVersion: .v311) { $0.cleanStart = true }
        old.collect()
        try old.client.start()
        try old.client.subscribe("geotriggers/replies/311/#")
        #expect(await old.waitSubscribed("geotriggers/replies/311/#"))
        let requests = [
            #"{"inside":{"layer":"jobs","fence":"site"},"replyTo":"geotriggers/replies/311/1","correlation":"a"}"#,
            #"{"device":"d2","replyTo":"geotriggers/replies/311/2","correlation":{"n":2}}"#,
            #"{"near":{"lat":\#(baseLat + 0.05),"lon":\#(baseLon)},"replyTo":"geotriggers/replies/311/3","correlation":3}"#,
            #"{"fences":"jobs","replyTo":"geotriggers/replies/311/4","correlation":4}"#,
            #"{"inside":{"layer":"jobs"},"replyTo":"geotriggers/replies/311/5"}"#,
            #"{"device":"d1","near":{},"replyTo":"geotriggers/replies/311/6"}"#,
            #"{"fences":"nope","replyTo":"geotriggers/replies/311/7"}"#,
            #"{"device":"nobody","replyTo":"geotriggers/replies/311/8"}"#,
        ]
        for request in requests { try old.client.publish(topic: "geotriggers/query/gw-t", payload: request, qos: .atLeastOnce) }
        #expect(await poll { Set(old.messages.all.map(\.topic)).count == requests.count })
        func reply(_ n: Int) throws -> [String: Any] {
            let message = try #require(old.messages.all.first { $0.topic == "geotriggers/replies/311/\(n)" })
            return try #require(try JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any])
        }
        #expect((try reply(1)["inside"] as? [[String: Any]])?.compactMap { $0["device"] as? String } == ["d1", "d2"])
        #expect(try reply(1)["correlation"] as? String == "a")
        #expect(try reply(2)["device"] as? String == "d2")
        #expect((try reply(2)["correlation"] as? [String: Any])?["n"] as? Int == 2)
        #expect((try reply(3)["near"] as? [[String: Any]])?.first?["fence"] as? String == "far")
        #expect(try reply(3)["correlation"] as? Int == 3)
        #expect((try reply(4)["fences"] as? [[String: Any]])?.count == 2)
        for n in 5...8 { #expect(try reply(n)["error"] is String, "reply \(n)") }
        old.stop()

        // Not JSON, over v5: still an error reply.
        let notJSON = try await rig.query("{nope")
        #expect((notJSON["error"] as? String)?.hasPrefix("not JSON") == true)
        let unknown = try await rig.query(#"{"who":1}"#)
        #expect((unknown["error"] as? String)?.contains("unknown query") == true)
        rig.stopGateway()
    }

    @Test("replies go only under PREFIX/replies/; a flood of queries is answered (or busy) and never holds up updates")
    func replyTopicsAndFlood() async throws {
        // The broker queues the whole flood for each client (its default stops at 1,000).
        let rig = try await ControlPlaneRig(name: "flood", broker: .init(maxQueuedMessages: 100_000))
        try await rig.startGateway()
        let old = try MQTTProbe(port: rig.broker.port, clientId: "flood-asker", protocolVersion: .v311) { $0.cleanStart = true }
        old.collect()
        try old.client.start()
        for filter in ["geotriggers/replies/#", "geotriggers/query/gw-t/reply", "geotriggers/events/#", "elsewhere"] {
            try old.client.subscribe(filter)
            #expect(await old.waitSubscribed(filter))
        }

        // A reply topic elsewhere (the event topics, a status topic) gets an error on the
        // default reply topic, and nothing is published where it asked.
        for (n, target) in ["geotriggers/events/x/y/z", "geotriggers/status/gw-t", "elsewhere"].enumerated() {
            try old.client.publish(topic: "geotriggers/query/gw-t", payload: #"{"fences":"zones","replyTo":"\#(target)","correlation":\#(n)}"#, qos: .atLeastOnce)
        }
        let defaultTopic = "geotriggers/query/gw-t/reply"
        #expect(await poll { old.messages.all.filter { $0.topic == defaultTopic }.count == 3 })
        let errors = old.messages.all.filter { $0.topic == defaultTopic }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
        #expect(errors.allSatisfy { ($0["error"] as? String)?.contains("geotriggers/replies/") == true }, "\(errors)")
        #expect(Set(errors.compactMap { $0["correlation"] as? Int }) == [0, 1, 2])
        #expect(!old.messages.all.contains { $0.topic == "geotriggers/events/x/y/z" || $0.topic == "elsewhere" })

        // 1,500 queries in one burst (each asks every shard), with updates of a device in between.
        let t0 = Date().timeIntervalSince1970.rounded() - 1000
        let queries = 1500
        for n in 0..<queries {
            try old.client.publish(topic: "geotriggers/query/gw-t",
                                   payload: #"{"device":"runner","replyTo":"geotriggers/replies/flood/\#(n)"}"#,
                                   qos: .atLeastOnce)
            if n % 100 == 0 { try rig.move("runner", lat: baseLat, lon: baseLon, time: t0 + Double(n / 100)) }
        }
        let answered = await poll(timeout: .seconds(60)) {
            old.messages.all.filter { $0.topic.hasPrefix("geotriggers/replies/flood/") }.count == queries
        }
        let replies = old.messages.all.filter { $0.topic.hasPrefix("geotriggers/replies/flood/") }
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any] }
        let busy = replies.filter { ($0["error"] as? String)?.hasPrefix("busy") == true }.count
        print("query flood: \(replies.count) of \(queries) answered, \(busy) of them busy")
        #expect(answered, "\(tail(rig.gateway?.log ?? ""))\n\(rig.broker.log.suffix(3000))")
        #expect(replies.allSatisfy { $0["device"] != nil || $0["error"] != nil })
        // Every update sent during the flood was handled.
        let device = try await rig.query(#"{"device":"runner"}"#)
        let time = try #require((device["position"] as? [String: Any])?["time"] as? String)
        #expect(ISO8601DateFormatter().date(from: time)?.timeIntervalSince1970 == t0 + Double((queries - 1) / 100))
        old.stop()
        rig.stopGateway()
    }

    @Test("1,000 runtime fences published in a burst are all live within seconds while updates keep flowing")
    func burst() async throws {
        let rig = try await ControlPlaneRig(name: "burst")
        try await rig.startGateway()
        let t0 = Date().timeIntervalSince1970.rounded() - 1000
        let started = Date()
        // A device walking north through the burst's fences, 10 updates a second.
        let walker = Task {
            var i = 0.0
            while !Task.isCancelled {
                try? rig.move("walker", lat: baseLat + i * 5 * perMetre, lon: baseLon, time: t0 + i)
                i += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
            return i
        }
        for n in 0..<1000 {
            try rig.publishFence("burst", "f\(n)", pointFence(lat: baseLat + Double(n) * 50 * perMetre, lon: baseLon + 0.01, buffer: 10))
        }
        let published = Date().timeIntervalSince(started)
        var live = false
        _ = await poll(timeout: .seconds(30), interval: .milliseconds(100)) {
            live = (try? await rig.fenceIDs("burst"))?.count == 1000
            return live
        }
        let elapsed = Date().timeIntervalSince(started)
        // How fast is for `bench`; a test on a shared box only tells that all of them went live.
        #expect(live)
        print("burst: 1000 runtime fences published in \(String(format: "%.2f", published)) s, all live after \(String(format: "%.2f", elapsed)) s")
        // Updates kept flowing: every update the walker sent during the burst is accepted.
        walker.cancel()
        let sent = await walker.value
        var lastFix = -1.0
        let accepted = await poll(timeout: .seconds(20)) {
            guard let reply = try? await rig.reply(#"{"device":"walker"}"#), let position = reply["position"] as? [String: Any],
                let time = position["time"] as? String, let date = ISO8601DateFormatter().date(from: time)
            else { return false }
            lastFix = date.timeIntervalSince1970 - t0
            return lastFix == sent - 1
        }
        print("burst: the walker sent \(Int(sent)) updates (10/s) during the burst; last accepted fix #\(Int(lastFix))")
        #expect(accepted)
        rig.stopGateway()
    }
}
