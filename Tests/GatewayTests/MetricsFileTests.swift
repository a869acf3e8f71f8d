import Foundation
import Gateway
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/metrics.md, `output.metricsFile`, end to end: the real `geotrigger serve` against a
    /// real mosquitto writes the Prometheus textfile at start, on every status tick and at a
    /// graceful stop; its values are what was sent and what the broker delivered, and
    /// `promtool check metrics` finds nothing to say.
    @Suite struct Metrics {
        /// The file's sample lines as `name{labels}` → value.
        static func values(_ text: String) -> [String: Double] {
            Dictionary(metricsLines(text).map { ($0.series, $0.value) }, uniquingKeysWith: { a, _ in a })
        }

        /// `geotrigger_events_total` by (trigger, type).
        static func events(_ values: [String: Double]) -> [String: Int] {
            var out: [String: Int] = [:]
            for (series, value) in values where series.hasPrefix("geotrigger_events_total{") {
                out[String(series.dropFirst("geotrigger_events_total".count))] = Int(value)
            }
            return out
        }

        @Test(.timeLimit(.minutes(4))) func fleetDriveShowsInTheMetricsFile() async throws {
            let h = try ServeHarness("metrics")
            defer { h.close() }
            try FleetDrive.installFences(in: h.directory)
            try FileManager.default.createDirectory(atPath: h.directory.file("metrics"), withIntermediateDirectories: false)
            let drive = FleetDrive(count: 8)
            // Relative: resolved against the config file's folder (the temp directory).
            let configPath = try h.write("gw.json5", h.config(
                fences: h.directory.file("fences"), output: #"metricsFile: "metrics/geotrigger.prom""#,
                extra: #"feeds: [ { name: "fleet", topic: "fleet/+/+/location", format: "json" } ],"#))
            let path = h.directory.file("metrics/geotrigger.prom")
            func file() -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            let started = await watcher.waitStatus(h.statusTopic) { $0.status == "started" }
            #expect(started.ok, "no started status:\n\(tail(gateway.log))")

            // Written at start, before any update.
            #expect(await poll(timeout: .seconds(30)) { Self.values(file())["geotrigger_updates_received_total"] == 0 },
                    "no metrics file at start:\n\(file())\n\(tail(gateway.log))")

            var ids: [Int32] = []
            var sent = 0
            for step in 0..<drive.rounds {
                for update in drive.round(step) {
                    ids.append(try publisher.client.publish(topic: update.topic, payload: update.payload, qos: .atLeastOnce))
                    sent += 1
                }
            }
            // Two updates that are not JSON: received, dropped as notJSON, not accepted.
            for n in 0..<2 { ids.append(try publisher.client.publish(topic: "fleet/v/bad\(n)/location", payload: "not json", qos: .atLeastOnce)) }
            #expect(await publisher.waitAcknowledged(ids))

            // Everything handled and delivered: the status counts every update, the broker
            // delivered as many events as the gateway counted and nothing waits in the outbox.
            let tally = { EventTally(watcher.messages.all.filter { $0.topic.hasPrefix("\(h.prefix)/events/") }) }
            let settled = await watcher.waitStatus(h.statusTopic) {
                $0.counter("received") == sent + 2 && $0.counter("accepted") == sent && $0.outbox("local") == 0
                    && $0.counter("events") > 0 && $0.counter("events") == tally().total && $0.counter("queueDepth") == 0
            }
            #expect(settled.ok, "status: \(settled.status.map(\.description) ?? "none"), events on the broker: \(tally().total)\n\(tail(gateway.log))")
            let delivered = tally()
            #expect(delivered.redelivered == 0)
            var byKind: [String: Int] = [:]
            for (key, n) in delivered.merged { byKind[#"{trigger="\#(key.trigger)",type="\#(key.type)"}"#, default: 0] += n }
            #expect(delivered.total > 20, "the drive should cross many fences: \(byKind)")

            // The file catches up within a status interval or two.
            let caughtUp = await poll(timeout: .seconds(30)) {
                let v = Self.values(file())
                return v["geotrigger_updates_accepted_total"] == Double(sent) && Self.events(v) == byKind
                    && v[#"geotrigger_outbox_messages{destination="local"}"#] == 0 && v["geotrigger_queue_depth"] == 0
            }
            let text = file()
            print("metrics file \(path):\n\(text)")
            #expect(caughtUp, "metrics file:\n\(text)\nevents on the broker: \(byKind)")
            let v = Self.values(text)
            #expect(v["geotrigger_updates_received_total"] == Double(sent + 2))
            #expect(v["geotrigger_updates_accepted_total"] == Double(sent))
            #expect(v[#"geotrigger_updates_dropped_total{reason="notJSON"}"#] == 2)
            #expect(v.filter { $0.key.hasPrefix("geotrigger_updates_dropped_total{") }.count == DropReason.allCases.count)
            #expect(v.filter { $0.key.hasPrefix("geotrigger_updates_dropped_total{") }.values.reduce(0, +) == 2)
            #expect(Self.events(v) == byKind)
            #expect(Self.events(v).values.reduce(0, +) == delivered.total)
            #expect(v["geotrigger_devices"] == Double(drive.devices.count))
            #expect(v[#"geotrigger_broker_connected{broker="local"}"#] == 1)
            #expect(v.keys.filter { $0.hasPrefix("geotrigger_broker_connected") }.count == 1, "no remote configured")
            #expect(v[#"geotrigger_build_info{version="\#(GatewayVersion.current)"}"#] == 1)
            for device in drive.devices { #expect(!text.contains(device), "device id \(device) in the metrics") }

            let check = try promtoolCheck(text)
            print("promtool check metrics: exit \(check.status), output: \(check.output.isEmpty ? "(none)" : check.output)")
            #expect(check.status == 0 && check.output.isEmpty, "promtool: \(check.output)")
            // Replaced by rename: no temporary file is left beside it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: h.directory.file("metrics")) == ["geotrigger.prom"])

            // A graceful stop writes it once more: the broker disconnected, the counts kept.
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")
            let last = Self.values(file())
            #expect(last[#"geotrigger_broker_connected{broker="local"}"#] == 0, "\(file())")
            #expect(last["geotrigger_updates_accepted_total"] == Double(sent) && Self.events(last) == byKind)
        }

        /// A metrics file that cannot be written is a status warning naming it (the gateway
        /// keeps serving); once its folder exists the next tick writes it and clears the warning.
        @Test(.timeLimit(.minutes(3))) func unwritableFileIsAWarningUntilItCanBeWritten() async throws {
            let h = try ServeHarness("metrics-warn")
            defer { h.close() }
            let path = h.directory.file("missing/geotrigger.prom")
            let configPath = try h.write("gw.json5", h.config(output: "metricsFile: \"\(path)\""))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            let warned = await watcher.waitStatus(h.statusTopic) { status in
                status.status == "started" && status.warnings.contains { $0.contains("cannot write the metrics file \(path)") }
            }
            #expect(warned.ok, "status: \(warned.status.map(\.description) ?? "none")\n\(tail(gateway.log))")
            try FileManager.default.createDirectory(atPath: h.directory.file("missing"), withIntermediateDirectories: false)
            let cleared = await watcher.waitStatus(h.statusTopic) { status in
                status.status == "started" && !status.warnings.contains { $0.contains("metrics file") }
            }
            #expect(cleared.ok, "status: \(cleared.status.map(\.description) ?? "none")")
            #expect(await poll(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: path) })
            // Logged once when it failed (not per tick) and once when resolved.
            #expect(gateway.log.components(separatedBy: "cannot write the metrics file").count - 1 == 1, "\(tail(gateway.log))")
            #expect(gateway.log.contains("is written again"))
        }
    }
}
