import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// The shipped broker saves its database rarely (deploy/mosquitto/geotrigger.conf), so a
    /// power cut or a crash brings the broker back from an old save. At the connect the
    /// gateway republishes every retained topic it owns, clears again the expectation it has
    /// settled, and puts back its version of a runtime fence the save held in an older
    /// version, or deleted: within one `stateInterval` a fresh subscriber reads what the
    /// gateway holds.
    @Suite struct OldBrokerSave {
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)
        static let desert = (lat: 34.4579, lon: -119.7062)
        static let stateInterval = 2.0

        /// A runtime Point fence by the garden, `version` in its properties.
        static func fence(version: Int) -> String {
            #"{"type":"Feature","properties":{"buffer":30,"version":\#(version)},"geometry":{"type":"Point","coordinates":[-119.7090,34.4560]}}"#
        }

        /// The newest payload of every topic `probe` received under `prefixes`.
        static func newest(_ probe: MQTTProbe, under prefixes: [String]) -> [String: [UInt8]] {
            var newest: [String: [UInt8]] = [:]
            for message in probe.messages.all where prefixes.contains(where: { message.topic.hasPrefix($0) }) {
                newest[message.topic] = message.payload
            }
            return newest
        }

        static func modified(_ path: String) -> Date? {
            (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        }

        @Test(.timeLimit(.minutes(5))) func aBrokerRestartedFromAnOldSaveConverges() async throws {
            let h = try ServeHarness("oldsave", broker: .init(persistence: true))
            defer { h.close() }
            let haPrefix = "\(h.prefix)-ha"
            let config = try h.write("gw.json5", h.config(
                output: "occupancy: true, stateInterval: \(Self.stateInterval)",
                extra: """
                    feeds: [ { name: "devices", topic: "\(h.prefix)-in/devices/+/location", format: "json" } ],
                    homeassistant: { discovery: true, prefix: "\(haPrefix)" },
                    """))
            let owned = ["\(h.prefix)/devices/", "\(h.prefix)/occupancy/", "\(haPrefix)/"]
            let filters = ["\(h.prefix)/devices/#", "\(h.prefix)/occupancy/#", "\(haPrefix)/#", "\(h.prefix)/fences/+/+",
                           "\(h.prefix)/expect/+", "\(h.prefix)/expect/+/result", h.statusTopic]
            let watcher = try await h.probe("watcher", subscribe: filters + ["\(h.prefix)/replies/#"])
            let dispatcher = try await h.probe("dispatcher")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            // Before the save: three devices in fences, two runtime fences, an open expectation.
            let t0 = fixTimeBase()
            func move(_ device: String, _ at: (lat: Double, lon: Double), _ time: Double) throws {
                try dispatcher.client.publish(topic: "\(h.prefix)-in/devices/\(device)/location", payload: Payload.json(lat: at.lat, lon: at.lon, time: time))
            }
            for device in ["walker", "leaver"] { try move(device, Self.outside, t0) }
            for device in ["walker", "leaver"] { try move(device, Self.meadow, t0 + 10) }
            try move("idle", Self.desert, t0 + 10)
            let j1 = "\(h.prefix)/fences/jobs/j1", j2 = "\(h.prefix)/fences/jobs/j2", e1 = "\(h.prefix)/expect/e1"
            try dispatcher.client.publish(topic: j1, payload: Self.fence(version: 1), retain: true)
            try dispatcher.client.publish(topic: j2, payload: Self.fence(version: 1), retain: true)
            let by = ISO8601Time.format(Date().timeIntervalSince1970 + 3600)
            try dispatcher.client.publish(
                topic: e1, payload: #"{"device": "walker", "layer": "garden-sections", "fence": "desert", "by": "\#(by)"}"#, retain: true)
            let meadowOccupancy = "\(h.prefix)/occupancy/garden-sections/garden-sections/meadow"
            let ready = await poll(timeout: .seconds(60)) {
                let newest = Self.newest(watcher, under: owned + ["\(h.prefix)/expect/"])
                return newest[h.stateTopic("walker")].map { String(decoding: $0, as: UTF8.self).contains("\"meadow\"") } == true
                    && newest[h.stateTopic("idle")].map { String(decoding: $0, as: UTF8.self).contains("\"desert\"") } == true
                    && newest[meadowOccupancy].map { String(decoding: $0, as: UTF8.self).contains("\"count\":2") } == true
                    && newest[e1]?.isEmpty == false && watcher.received(on: j2).count == 1
            }
            #expect(ready, "before the save: \(watcher.messages.all.map(\.topic))\n\(tail(gateway.log))")

            // The old save: SIGUSR1 and wait for the file to be written, then keep a copy.
            let database = h.broker.directory.file("mosquitto.db")
            let before = Date()
            try await Task.sleep(for: .milliseconds(1100))  // a later mtime than `before`, not an assertion
            kill(try #require(h.broker.pid), SIGUSR1)
            let saved = await poll(timeout: .seconds(20)) { (Self.modified(database) ?? .distantPast) > before }
            #expect(saved, "the broker did not save\n\(tail(h.brokerLog))")
            let oldSave = h.directory.file("old-mosquitto.db")
            try FileManager.default.copyItem(atPath: database, toPath: oldSave)

            // After the save: the walker arrives in the desert (the expectation settles, its topic
            // is cleared), the leaver leaves, j1 gets version 2 and j2 is deleted.
            try move("walker", Self.desert, t0 + 30)
            try move("leaver", Self.outside, t0 + 30)
            try dispatcher.client.publish(topic: j1, payload: Self.fence(version: 2), retain: true)
            try dispatcher.client.publish(topic: j2, payload: [UInt8](), retain: true)
            var fencesQueries = 0
            let moved = await poll(timeout: .seconds(60)) {
                let newest = Self.newest(watcher, under: owned + ["\(h.prefix)/expect/"])
                guard newest[h.stateTopic("walker")].map({ String(decoding: $0, as: UTF8.self).contains("\"desert\"") }) == true,
                    newest[meadowOccupancy].map({ String(decoding: $0, as: UTF8.self).contains("\"count\":0") }) == true,
                    newest[e1]?.isEmpty == true, !watcher.received(on: "\(e1)/result").isEmpty
                else { return false }
                // The gateway holds j1's version 2 and no j2 (the fences query).
                fencesQueries += 1
                let replyTo = "\(h.prefix)/replies/fences/\(fencesQueries)"
                _ = try? watcher.client.publish(
                    topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"fences": "jobs", "replyTo": "\#(replyTo)"}"#, qos: .atLeastOnce)
                var reply = ""
                _ = await poll(timeout: .seconds(5)) {
                    reply = watcher.received(on: replyTo).first?.payloadText ?? ""
                    return !reply.isEmpty
                }
                return reply.contains("\"version\":2") && !reply.contains("\"j2\"")
            }
            #expect(moved, "after the save: \(Self.newest(watcher, under: owned).keys.sorted())\n\(tail(gateway.log))")
            // What the gateway holds now: the newest of each of its retained topics (the
            // status aside), j1's version 2, no j2, no retained expectation.
            var expected = Self.newest(watcher, under: owned)
            expected[j1] = Array(Self.fence(version: 2).utf8)
            expected[j2] = []
            expected[e1] = []
            #expect(expected.count > 10, "\(expected.keys.sorted())")

            // The broker stops (saving on the way out) and comes back from the old save.
            h.broker.stop()
            #expect(await watcher.waitDisconnected())
            try FileManager.default.removeItem(atPath: database)
            try FileManager.default.copyItem(atPath: oldSave, toPath: database)
            let restarted = Date()
            try h.broker.start()

            let fresh = try await h.probe("fresh", subscribe: filters, cleanStart: true)
            var differing: [String] = []
            let converged = await poll(timeout: .seconds(Self.stateInterval + 30)) {
                let newest = Self.newest(fresh, under: owned + ["\(h.prefix)/fences/", "\(h.prefix)/expect/"])
                differing = expected.keys.sorted().filter { (newest[$0] ?? []) != expected[$0] }
                // Nothing retained beyond what the gateway holds (a topic it cleared stays cleared).
                differing += newest.keys.sorted().filter { expected[$0] == nil && !$0.hasSuffix("/result") && newest[$0]?.isEmpty == false }
                return differing.isEmpty
            }
            let took = Date().timeIntervalSince(restarted)
            let reconnected = gateway.log.components(separatedBy: "connected broker=").count - 1
            print("old broker save: \(expected.count) retained topics equal to the gateway's \(String(format: "%.1f", took)) s after the broker's start (stateInterval \(Self.stateInterval) s, reconnects \(reconnected)); differing: \(differing)")
            #expect(converged, "differing after the restart: \(differing)\n\(tail(gateway.log))\n\(tail(h.brokerLog))")

            // The settled expectation was cleared again, never decided a second time; the stale
            // fence was replaced by the database's version, with a warning.
            let settled = gateway.log.components(separatedBy: "expectation settled").count - 1
            #expect(settled == 1, "\(tail(gateway.log))")
            let warned = await poll(timeout: .seconds(10)) {
                watcher.lastStatus(h.statusTopic)?.warnings.contains { $0.contains("runtime fence jobs/j1") && $0.contains("old retained version") } == true
            }
            #expect(warned, "\(watcher.lastStatus(h.statusTopic)?.warnings ?? [])")
            #expect(gateway.log.contains("runtime fence jobs/j2: the broker held an old retained version"))
            #expect(gateway.terminate() == 0)
        }
    }
}
