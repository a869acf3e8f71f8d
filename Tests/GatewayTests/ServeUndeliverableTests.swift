import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// One event no broker will take never holds up the others: it is parked (counted as
    /// `undeliverable`, warned about, kept in the journal) and the outbox goes on.
    @Suite struct Undeliverable {
        /// A square fence of about 1 km around `lon`, 34.455 (JSON text).
        static func square(id: String, lon: Double, name: String, note: String = "") -> String {
            let ring = [[lon - 0.005, 34.45], [lon + 0.005, 34.45], [lon + 0.005, 34.46], [lon - 0.005, 34.46], [lon - 0.005, 34.45]]
            let properties = JSONValue.object(["name": .string(name), "note": .string(note)]).serialized()
            return """
                {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "\(id)", "properties": \(properties),
                 "geometry": {"type": "Polygon", "coordinates": [[\(ring.map { "[\($0[0]), \($0[1])]" }.joined(separator: ","))]]}}]}
                """
        }

        /// The broker takes packets of at most 6,000 bytes (v5 tells the gateway in CONNACK): the
        /// event of a fence with a 3,900-byte name (about 8 KB: the name is in the fence object and
        /// in its properties) is refused by libmosquitto. The next device's event still goes out.
        @Test func anEventTheBrokerCannotTakeIsParkedAndTheNextGoesOut() async throws {
            let h = try ServeHarness("undeliverable", broker: .init(extraLines: ["max_packet_size 6000"]))
            defer { h.close() }
            try FileManager.default.createDirectory(atPath: h.directory.file("fences"), withIntermediateDirectories: true)
            let longName = String(repeating: "N", count: 3_900)
            _ = try h.write("fences/big.geojson", Self.square(id: "big", lon: -119.715, name: longName, note: String(repeating: "n", count: 100)))
            _ = try h.write("fences/small.geojson", Self.square(id: "small", lon: -119.695, name: "Small"))
            let configPath = try h.write("gw.json5", h.config(
                fences: h.directory.file("fences"),
                extra: #"feeds: [ { name: "devices", topic: "\#(h.prefix)-in/devices/+/location", format: "json" } ],"#))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            func drive(_ device: String, lon: Double) throws {
                let topic = "\(h.prefix)-in/devices/\(device)/location"
                try publisher.client.publish(topic: topic, payload: Payload.json(lat: 34.44, lon: lon, time: t0))
                try publisher.client.publish(topic: topic, payload: Payload.json(lat: 34.455, lon: lon, time: t0 + 10))
            }
            try drive("first", lon: -119.715)
            let parked = await watcher.waitStatus(h.statusTopic) { $0.counter("undeliverable") >= 1 }
            #expect(parked.ok, "the big fence's event was not counted as undeliverable: \(parked.status?.description ?? "no status")\n\(tail(gateway.log))")

            let sent = Date()
            try drive("second", lon: -119.695)
            let delivered = await poll(timeout: .seconds(30)) {
                receivedEvents(watcher, prefix: h.prefix).contains { eventKey($0.event) == "small second small/small enter" }
            }
            let latency = Date().timeIntervalSince(sent)
            print("undeliverable: the second device's enter arrived \(delivered ? String(format: "%.3f s", latency) : "never (30 s)") after its update")
            #expect(delivered, "the second device's event never came after an undeliverable one\n\(tail(gateway.log))")
            #expect(!receivedEvents(watcher, prefix: h.prefix).contains { $0.event["device"] == .string("first") })

            let status = try #require(await watcher.waitStatus(h.statusTopic) { $0.outbox("local") == 0 }.status)
            #expect(status.counter("undeliverable") == 1, "\(status)")
            let warning = status.warnings.first { $0.contains("could not be delivered") } ?? ""
            for part in ["trigger big", "device first", "fence big/big"] {
                #expect(warning.contains(part), "the warning names \(part): \(status.warnings)")
            }
            #expect(gateway.terminate() == 0)
            // Kept in the journal.
            let journal = try runGeotrigger(["events", "--config", configPath, "--json"]).out
            let devices = journal.split(separator: "\n").compactMap { try? JSONReader.parse(Array($0.utf8), file: "events", dialect: .json).value.objectValue?["device"]?.stringValue }
            #expect(devices.sorted() == ["first", "second"], "\(journal.prefix(300))")
        }
    }
}
