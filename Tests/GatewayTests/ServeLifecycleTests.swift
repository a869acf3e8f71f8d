import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// Restart, SIGTERM, SIGHUP and start-up failures of the real `geotrigger serve`.
    @Suite struct Lifecycle {
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)
        static let desert = (lat: 34.4579, lon: -119.7062)

        /// Updates published at QoS 1 while the gateway is down wait in its persistent session
        /// and are processed when it comes back; the enter from before is not fired again.
        @Test func updatesPublishedWhileTheGatewayIsDownAreProcessedAfterItReturns() async throws {
            let h = try ServeHarness("restart")
            defer { h.close() }
            let configPath = try h.write("gw.json5", BrokerOutage.config(h))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let first = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(first.log))")
            let t0 = fixTimeBase()
            let topic = "\(h.prefix)-in/devices/walker/location"
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.outside.lat, lon: Self.outside.lon, time: t0))
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.meadow.lat, lon: Self.meadow.lon, time: t0 + 10))
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count == 1 }, "\(tail(first.log))")
            #expect(first.terminate() == 0)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "stopped" }.ok)

            // While it is down: the broker keeps these for the gateway's session.
            let ids = [
                try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.desert.lat, lon: Self.desert.lon, time: t0 + 30)),
                try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.outside.lat, lon: Self.outside.lon, time: t0 + 60)),
            ]
            #expect(await publisher.waitAcknowledged(ids))

            let second = try h.startGateway(config: configPath, log: "gateway-2.log")
            let processed = await watcher.waitStatus(h.statusTopic) { $0.status == "started" && $0.counter("accepted") == 2 }
            #expect(processed.ok, "status \(processed.status.map(\.description) ?? "none")\n\(tail(second.log))")
            let expected = [
                "sections walker garden-sections/meadow enter", "sections walker garden-sections/meadow exit",
                "sections walker garden-sections/desert enter", "sections walker garden-sections/desert exit",
            ]
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count >= 4 }, "\(tail(second.log))")
            #expect(await watcher.waitStatus(h.statusTopic) { $0.counter("events") == 3 }.ok)
            #expect(receivedEvents(watcher, prefix: h.prefix).map { eventKey($0.event) } == expected)
            #expect(second.terminate() == 0)
        }

        /// SIGTERM in the middle of 3,000 QoS 1 updates a second: every update is accepted by
        /// the stopping gateway or by the next one (the broker keeps what the first did not read
        /// in its persistent session). The stopping gateway's count is in its `stopped` log line.
        @Test func sigtermUnderLoadLosesNoUpdate() async throws {
            let h = try ServeHarness("sigterm-load", broker: .init(maxQueuedMessages: 1_000_000))
            defer { h.close() }
            let configPath = try h.write("gw.json5", BrokerOutage.config(h))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let publisher = try await h.probe("publisher")
            let first = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(first.log))")

            // 100 devices, 90 rounds of one update each, a round every 33 ms: 3,000 a second for 3 s.
            let t0 = fixTimeBase()
            let devices = 100, rounds = 90
            let sending = Task {
                var ids: [Int32] = []
                for round in 0..<rounds {
                    for device in 0..<devices {
                        let lat = round % 2 == 0 ? Self.outside.lat : Self.meadow.lat
                        let lon = round % 2 == 0 ? Self.outside.lon : Self.meadow.lon
                        if let id = try? publisher.client.publish(topic: "\(h.prefix)-in/devices/d\(device)/location",
                                                                   payload: Payload.json(lat: lat, lon: lon, time: t0 + Double(round)),
                                                                   qos: .atLeastOnce) { ids.append(id) }
                    }
                    try? await Task.sleep(for: .milliseconds(33))
                }
                return ids
            }
            try await Task.sleep(for: .milliseconds(1500))
            first.signal(SIGTERM)
            let ids = await sending.value
            #expect(ids.count == devices * rounds)
            #expect(await publisher.waitAcknowledged(ids, timeout: .seconds(60)))
            #expect(first.waitForExit(timeout: 30) == 0, "\(tail(first.log))")
            let line = try #require(first.log.split(separator: "\n").last { $0.contains("stopped") && $0.contains("updates.accepted=") })
            let acceptedBefore = try #require(line.split(separator: " ").first { $0.hasPrefix("updates.accepted=") }
                .flatMap { Int($0.dropFirst("updates.accepted=".count)) })
            // The retained status says so before the next gateway starts: its own statuses are
            // then the only ones with `started` (a late one of the first would be read as the second's).
            let stoppedSeen = await watcher.waitStatus(h.statusTopic, timeout: .seconds(10)) { $0.status == "stopped" }.ok
            guard stoppedSeen else {
                let checker = try await h.probe("checker", subscribe: [h.statusTopic], cleanStart: true)
                let retained = await checker.waitStatus(h.statusTopic, timeout: .seconds(5)) { _ in true }.status
                Issue.record("""
                    the watcher's last status: \(watcher.lastStatus(h.statusTopic)?.status ?? "none"); \
                    retained at the broker: \(retained?.status ?? "none")
                    \(tail(first.log, lines: 20))
                    broker: \(h.broker.log.split(separator: "\n").filter { $0.contains("gw-") && (!$0.contains("PUB") || $0.contains("/status/")) }
                        .suffix(16).joined(separator: "\n"))
                    """)
                return  // the next gateway's statuses could not be told from the first's
            }

            let second = try h.startGateway(config: configPath, log: "gateway-2.log")
            let sent = devices * rounds
            let done = await watcher.waitStatus(h.statusTopic) { $0.status == "started" && $0.counter("accepted") >= sent - acceptedBefore }
            // A few more seconds for anything beyond (a second delivery would be counted too).
            let acceptedAfter = done.status?.counter("accepted") ?? 0
            print("sigterm under load: \(sent) sent, \(acceptedBefore) accepted before the stop, \(acceptedAfter) after the restart, "
                  + "lost \(sent - acceptedBefore - acceptedAfter)")
            #expect(done.ok, "\(tail(second.log))")
            #expect(acceptedBefore > 0 && acceptedBefore < sent, "the stop should fall inside the drive")
            #expect(acceptedBefore + acceptedAfter == sent)
            #expect(second.terminate() == 0)
        }

        /// SIGTERM: the retained status says `stopped` (not the will's `offline`) and the exit status is 0.
        @Test func sigtermPublishesStoppedAndExitsZero() async throws {
            let h = try ServeHarness("sigterm")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            gateway.signal(SIGTERM)
            #expect(gateway.waitForExit(timeout: 30) == 0, "\(tail(gateway.log))")
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "stopped" }.ok)
            let late = try await h.probe("late", subscribe: [h.statusTopic], cleanStart: true)
            let retained = await late.waitStatus(h.statusTopic) { _ in true }
            #expect(retained.status?.status == "stopped")
            #expect(late.received(on: h.statusTopic).first?.retain == true)
            #expect(gateway.log.contains("SIGTERM"))
        }

        /// The MQTT network thread, which handles the feed updates, keeps its priority; every
        /// other thread of the gateway is put 10 nice levels below it (ThreadPriorities).
        @Test func otherThreadsRunBelowTheNetworkThread() async throws {
            let h = try ServeHarness("priorities")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            defer { _ = gateway.terminate() }
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            /// (name, nice) of each thread of the gateway, from /proc/PID/task/TID/stat.
            func threads() -> [(name: String, nice: Int)] {
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(gateway.pid)/task")) ?? []
                return tasks.compactMap { tid in
                    guard let stat = try? String(contentsOfFile: "/proc/\(gateway.pid)/task/\(tid)/stat", encoding: .utf8),
                        let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
                    else { return nil }
                    // Fields after the name: state is field 3, nice field 19.
                    let fields = stat[stat.index(after: close)...].split(separator: " ")
                    guard fields.count > 16, let nice = Int(fields[16]) else { return nil }
                    return (String(stat[stat.index(after: open)..<close]), nice)
                }
            }
            let lowered = await poll(timeout: .seconds(10)) {
                let t = threads()
                return t.count > 2 && t.allSatisfy { $0.name == "mqtt-network" ? $0.nice == 0 : $0.nice == 10 }
            }
            let seen = threads()
            #expect(lowered, "threads: \(seen)")
            #expect(seen.filter { $0.name == "mqtt-network" }.count == 1, "threads: \(seen)")
        }

        /// `kill -9`: no `stopped`; the broker publishes the will, a retained `offline`.
        @Test func killedGatewayLeavesTheWillOffline() async throws {
            let h = try ServeHarness("will")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            gateway.kill()
            let offline = await watcher.waitStatus(h.statusTopic) { $0.status == "offline" }
            #expect(offline.ok)
            #expect(offline.status?.keys == ["status"])
            #expect(!watcher.received(on: h.statusTopic).contains { GatewayStatus($0)?.status == "stopped" })
        }

        /// Writes `fleet.geojson` of `folder` without the feature `id`.
        static func removeFeature(_ id: String, from file: String) throws {
            var layer = try #require(try JSONReader.parse(String(contentsOfFile: file, encoding: .utf8), file: file, dialect: .json).value.objectValue)
            let features = layer["features"]?.arrayValue ?? []
            let kept = features.filter { $0.objectValue?["id"] != .string(id) }
            #expect(kept.count == features.count - 1)
            layer["features"] = .array(kept)
            try JSONValue.object(layer).serialized().write(toFile: file, atomically: true, encoding: .utf8)
        }

        /// SIGHUP after deleting the depot from the fences folder: the device inside it gets a
        /// `fenceRemoved` exit with its last known position; devices in other fences get nothing.
        @Test func sighupAfterDeletingAFenceEmitsItsFenceRemovedExits() async throws {
            let h = try ServeHarness("sighup")
            defer { h.close() }
            let fences = try h.copyFences()
            let input = "\(h.prefix)-in/devices"
            let configPath = try h.write("gw.json5", h.config(fences: fences, extra: """
                feeds: [ { name: "devices", topic: "\(input)/+/location", format: "json" } ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic, "\(h.prefix)/devices/#"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase()
            // d1 in the depot (two updates), d2 at the east job site, d3 in the meadow.
            try publisher.client.publish(topic: "\(input)/d1/location", payload: Payload.json(lat: 34.4288197, lon: -119.6932719, time: t0 + 5, accuracy: 8))
            try publisher.client.publish(topic: "\(input)/d1/location", payload: Payload.json(lat: 34.4289, lon: -119.6933, time: t0 + 15, accuracy: 6))
            try publisher.client.publish(topic: "\(input)/d2/location", payload: Payload.json(lat: 34.4322901, lon: -119.6854609, time: t0 + 5))
            try publisher.client.publish(topic: "\(input)/d3/location", payload: Payload.json(lat: Self.meadow.lat, lon: Self.meadow.lon, time: t0 + 5))
            #expect(await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == 4 && $0.counter("events") == 3 }.ok, "\(tail(gateway.log))")
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count == 3 })
            let enter = try #require(receivedEvents(watcher, prefix: h.prefix).first { eventKey($0.event) == "fleet d1 fleet/depot enter" }?.event)

            try Self.removeFeature("depot", from: "\(fences)/fleet.geojson")
            gateway.signal(SIGHUP)
            #expect(await poll(timeout: .seconds(60)) { receivedEvents(watcher, prefix: h.prefix).count >= 4 }, "\(tail(gateway.log))")
            #expect(await watcher.waitStatus(h.statusTopic) { $0.counter("events") == 4 }.ok)
            let received = receivedEvents(watcher, prefix: h.prefix)
            #expect(received.count == 4, "\(received.map { eventKey($0.event) })")
            let exit = try #require(received.last)
            let properties = try fenceProperties()
            checkEvent(
                exit.event, topic: exit.topic,
                expected: ExpectedEvent(
                    trigger: "fleet", device: "d1", layer: "fleet", fence: "depot", type: "exit", reason: "fenceRemoved",
                    lat: 34.4289, lon: -119.6933, accuracy: 6, fixTime: t0 + 15, distance: -56.4, dwellSeconds: 10,
                    message: "Left Depot"),
                gateway: h.gatewayID, prefix: h.prefix, fenceName: "Depot", fenceProperties: properties["fleet/depot"] ?? [:],
                emittedBetween: Date().timeIntervalSince1970 - 60, and: Date().timeIntervalSince1970)
            #expect(exit.event["visit"] == enter["id"])
            // d1's retained state no longer lists the depot; the others are untouched.
            #expect(await poll { watcher.received(on: h.stateTopic("d1")).last.flatMap(json)?["inside"] == .array([]) })
            #expect(gateway.log.contains("reloaded"))
            #expect(gateway.terminate() == 0)
        }

        /// SIGTERM during a long SIGHUP reload (a fence folder grown to 60,000 fences, which a
        /// debug build reads for several seconds): the reload is cancelled at its next read and
        /// the gateway stops at once, exit 0 and `stopped`, the previous fences never replaced.
        /// Before, the reload ran inside the signal loop and the SIGTERM waited behind it.
        @Test func sigtermDuringALongReloadStopsWithoutWaitingForIt() async throws {
            let h = try ServeHarness("sigterm-reload")
            defer { h.close() }
            let fences = try h.copyFences()
            let configPath = try h.write("gw.json5", h.config(fences: fences))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            try Self.squares(60_000).write(toFile: "\(fences)/big.geojson", atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            // The load's first progress line comes after a second of reading; then it is mid-load.
            #expect(await poll(timeout: .seconds(120)) { gateway.log.contains("loading fences:") }, "\(tail(gateway.log))")
            let start = Date()
            gateway.signal(SIGTERM)
            let status = gateway.waitForExit(timeout: 60)
            let stopped = Date().timeIntervalSince(start)
            print("SIGTERM during a reload: exited \(status.map(String.init) ?? "not") after \(Int(stopped * 1000)) ms")
            #expect(status == 0, "\(tail(gateway.log))")
            #expect(gateway.log.contains("reload cancelled by the stop"), "\(tail(gateway.log))")
            #expect(!gateway.log.contains("loaded fences:") && !gateway.log.contains("notice [geotrigger] reloaded"), "\(tail(gateway.log))")
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "stopped" }.ok)
        }

        /// A layer of `count` small squares (0.0005 degrees, on a grid far from the test fences).
        static func squares(_ count: Int) -> String {
            var text = #"{"type": "FeatureCollection", "features": ["# + "\n"
            for i in 0..<count {
                let lon = 10 + Double(i % 1000) * 0.001, lat = 10 + Double(i / 1000) * 0.001
                let ring = [(lon, lat), (lon + 0.0005, lat), (lon + 0.0005, lat + 0.0005), (lon, lat + 0.0005), (lon, lat)]
                    .map { "[\($0.0), \($0.1)]" }.joined(separator: ", ")
                text += (i == 0 ? "" : ",\n") + #"{"type": "Feature", "id": "s\#(i)", "properties": {}, "geometry": {"type": "Polygon", "coordinates": [[\#(ring)]]}}"#
            }
            return text + "\n]}\n"
        }

        /// A broken fence file on SIGHUP: the old fences keep serving and the status shows a
        /// warning; fixing the file and SIGHUP again clears it.
        @Test func brokenFenceFileOnSighupKeepsTheOldFences() async throws {
            let h = try ServeHarness("sighup-broken")
            defer { h.close() }
            let fences = try h.copyFences()
            let input = "\(h.prefix)-in/devices"
            let configPath = try h.write("gw.json5", h.config(fences: fences, extra: """
                feeds: [ { name: "devices", topic: "\(input)/+/location", format: "json" } ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let sections = "\(fences)/garden-sections.geojson"
            let original = try String(contentsOfFile: sections, encoding: .utf8)
            try String(original.prefix(original.count / 2)).write(toFile: sections, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            let warned = await watcher.waitStatus(h.statusTopic) { status in
                status.warnings.contains { $0.contains("reload failed") && $0.contains("garden-sections.geojson") }
            }
            #expect(warned.ok, "status \(warned.status.map(\.description) ?? "none")\n\(tail(gateway.log))")
            #expect(gateway.isRunning)

            // Still the old set: the meadow of the broken file still gives its enter.
            let t0 = fixTimeBase()
            try publisher.client.publish(topic: "\(input)/walker/location", payload: Payload.json(lat: Self.outside.lat, lon: Self.outside.lon, time: t0))
            try publisher.client.publish(topic: "\(input)/walker/location", payload: Payload.json(lat: Self.meadow.lat, lon: Self.meadow.lon, time: t0 + 10))
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).contains { eventKey($0.event) == "garden-sections walker garden-sections/meadow enter" } },
                    "\(receivedEvents(watcher, prefix: h.prefix).map { eventKey($0.event) })\n\(tail(gateway.log))")

            try original.write(toFile: sections, atomically: true, encoding: .utf8)
            gateway.signal(SIGHUP)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.warnings.isEmpty }.ok, "\(tail(gateway.log))")
            #expect(gateway.terminate() == 0)
        }

        /// An invalid config (an unknown key) at start: exit 2, the problem on stderr, and a
        /// retained `failedToStart` with it on the broker named by the config.
        @Test func invalidConfigAtStartPublishesFailedToStartAndExitsTwo() async throws {
            let h = try ServeHarness("badconfig")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config(output: "colour: \"red\""))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(gateway.waitForExit(timeout: 60) == 2, "\(tail(gateway.log))")
            #expect(gateway.log.contains("colour"), "\(tail(gateway.log))")
            let failed = await watcher.waitStatus(h.statusTopic, timeout: .seconds(30)) { $0.status == "failedToStart" }
            #expect(failed.ok, "\(tail(gateway.log))")
            #expect(failed.status?.warnings.contains { $0.contains("gw.json5") && $0.contains("colour") } == true)
        }

        /// A broken fence file at start: exit 2 and `failedToStart` naming the file.
        @Test func brokenFenceFileAtStartPublishesFailedToStartAndExitsTwo() async throws {
            let h = try ServeHarness("badfences")
            defer { h.close() }
            let fences = try h.copyFences()
            try "{ \"type\": \"FeatureCollection\", \"features\": [ ".write(
                toFile: "\(fences)/broken.geojson", atomically: true, encoding: .utf8)
            let configPath = try h.write("gw.json5", h.config(fences: fences))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(gateway.waitForExit(timeout: 60) == 2, "\(tail(gateway.log))")
            #expect(gateway.log.contains("broken.geojson"), "\(tail(gateway.log))")
            let failed = await watcher.waitStatus(h.statusTopic, timeout: .seconds(30)) { $0.status == "failedToStart" }
            #expect(failed.ok, "\(tail(gateway.log))")
            #expect(failed.status?.warnings.contains { $0.contains("broken.geojson") } == true)
        }
    }
}
