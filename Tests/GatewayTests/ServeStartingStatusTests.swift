import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// The retained status over a start of the real `geotrigger serve` (docs/topics-and-payloads.md
    /// "Gateway status"): `starting` while the fences load, from the `-failed` side client, then
    /// `started` from the gateway's own client, or `failedToStart`; never a `starting` left
    /// behind.
    @Suite struct StartingStatus {
        /// The statuses `probe` received on `topic`, in order, as `status` (`+r` when it came from
        /// the broker's retained store).
        static func sequence(_ probe: MQTTProbe, _ topic: String) -> [String] {
            probe.received(on: topic).map { message in
                (GatewayStatus(message)?.status ?? "?") + (message.retain ? "+r" : "")
            }
        }

        /// The first status a subscriber that arrives now gets: the retained one.
        static func retained(_ h: ServeHarness, _ name: String) async throws -> GatewayStatus? {
            let late = try await h.probe(name, subscribe: [h.statusTopic], cleanStart: true)
            _ = await poll(timeout: .seconds(10)) { !late.received(on: h.statusTopic).isEmpty }
            let first = late.received(on: h.statusTopic).first
            #expect(first?.retain == true, "\(String(describing: first))")
            return first.flatMap(GatewayStatus.init)
        }

        /// A layer of `count` small squares far from the repository's fences (a load that takes a while).
        static func squares(_ count: Int) -> String {
            var text = #"{"type": "FeatureCollection", "features": ["#
            text.reserveCapacity(count * 190)
            let side = 0.001
            for i in 0..<count {
                let lon = 10 + Double(i % 1000) * 0.002, lat = 10 + Double(i / 1000) * 0.002
                let ring = [(lon, lat), (lon + side, lat), (lon + side, lat + side), (lon, lat + side), (lon, lat)]
                    .map { "[\($0.0), \($0.1)]" }.joined(separator: ", ")
                text += (i == 0 ? "" : ",\n") + #"{"type": "Feature", "id": "s\#(i)", "geometry": {"type": "Polygon", "coordinates": [[\#(ring)]]}}"#
            }
            return text + "]}\n"
        }

        /// A good start: a subscriber that was there before gets `starting`, then `started`; one
        /// that arrives after the start gets the retained `started`. The `starting` payload has
        /// the shape of `failedToStart`'s (status, warnings, since, version).
        @Test func aStartSaysStartingThenStarted() async throws {
            let h = try ServeHarness("starting")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let seen = Self.sequence(watcher, h.statusTopic)
            print("statuses over a start:", seen)
            #expect(seen.first == "starting", "\(seen)\n\(tail(gateway.log))")
            #expect(seen.firstIndex(of: "started") == 1, "\(seen)")
            #expect(!seen.dropFirst().contains("starting"), "\(seen)")
            let starting = try #require(watcher.statuses(on: h.statusTopic).first)
            #expect(starting.keys == ["status", "warnings", "since", "version"], "\(starting)")
            #expect(starting.warnings.isEmpty && starting.since != nil)
            #expect(gateway.log.contains("published starting"), "\(tail(gateway.log))")

            let retained = try await Self.retained(h, "late")
            #expect(retained?.status == "started", "\(retained?.description ?? "none")")
            // The side client's connection is logged by the broker as its own client id.
            #expect(h.brokerLog.contains("as geotrigger-\(h.gatewayID)-failed ("), "\(tail(h.brokerLog))")
            #expect(gateway.terminate() == 0)
        }

        /// A watcher of the status, and the gateway started on the repository's fences plus 50,000
        /// squares (a load that takes a while, also on a fast box).
        static func startWithSlowLoad(_ h: ServeHarness) async throws -> (MQTTProbe, GatewayProcess) {
            let fences = try h.copyFences()
            try h.write("fences/squares.geojson", squares(50_000))
            let configPath = try h.write("gw.json5", h.config(fences: fences))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            return (watcher, try h.startGateway(config: configPath))
        }

        /// `starting` is published while the fences load, not after: with a layer that takes a
        /// while to load, its acknowledgement is logged before the load's end, and a subscriber
        /// has it before the gateway serves.
        @Test func startingArrivesWhileTheFencesLoad() async throws {
            let h = try ServeHarness("starting-load")
            defer { h.close() }
            let (watcher, gateway) = try await Self.startWithSlowLoad(h)
            let startingSeen = await poll(timeout: .seconds(60)) { watcher.lastStatus(h.statusTopic)?.status == "starting" }
            let servingThen = gateway.log.contains(" serving")
            #expect(startingSeen, "\(Self.sequence(watcher, h.statusTopic))\n\(tail(gateway.log))")
            #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(120)) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let lines = gateway.log.split(separator: "\n")
            let published = lines.firstIndex { $0.contains("published starting") }
            let loaded = lines.firstIndex { $0.contains("loaded fences") }
            print("starting during a load of 50,000 more fences: seen by the subscriber before the gateway served: \(!servingThen);",
                  "log lines: published starting #\(published ?? -1), loaded fences #\(loaded ?? -1); statuses \(Self.sequence(watcher, h.statusTopic))")
            #expect(!servingThen, "\(tail(gateway.log))")
            #expect(published != nil && loaded != nil && published! < loaded!, "\(tail(gateway.log))")
            #expect(Self.sequence(watcher, h.statusTopic).prefix(2) == ["starting", "started"])
            #expect(gateway.terminate() == 0)
        }

        /// A start killed during the load leaves `offline` (the side client's will), not `starting`.
        @Test func aStartKilledDuringTheLoadLeavesOffline() async throws {
            let h = try ServeHarness("starting-killed")
            defer { h.close() }
            let (watcher, gateway) = try await Self.startWithSlowLoad(h)
            #expect(await poll(timeout: .seconds(60)) { watcher.lastStatus(h.statusTopic)?.status == "starting" }, "\(tail(gateway.log))")
            #expect(!gateway.log.contains(" serving"), "the load ended before the kill: \(tail(gateway.log))")
            gateway.kill()
            #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(30)) { $0.status == "offline" }.ok,
                    "\(Self.sequence(watcher, h.statusTopic))")
            let retained = try await Self.retained(h, "late")
            print("start killed during the load: statuses \(Self.sequence(watcher, h.statusTopic)), retained \(retained?.status ?? "none")")
            #expect(retained?.status == "offline")
        }

        /// Broken fences: `starting` while they load, then `failedToStart` naming the file, and
        /// `failedToStart` is what stays retained.
        @Test func aStartWithBrokenFencesSaysStartingThenFailedToStart() async throws {
            let h = try ServeHarness("starting-bad")
            defer { h.close() }
            let fences = try h.copyFences()
            try h.write("fences/broken.geojson", "{ \"type\": \"FeatureCollection\", \"features\": [ ")
            let configPath = try h.write("gw.json5", h.config(fences: fences))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(gateway.waitForExit(timeout: 60) == 2, "\(tail(gateway.log))")
            let failed = await watcher.waitStatus(h.statusTopic, timeout: .seconds(30)) { $0.status == "failedToStart" }
            #expect(failed.ok, "\(Self.sequence(watcher, h.statusTopic))\n\(tail(gateway.log))")
            #expect(failed.status?.warnings.contains { $0.contains("broken.geojson") } == true)
            let seen = Self.sequence(watcher, h.statusTopic)
            print("statuses over a start with broken fences:", seen)
            #expect(seen == ["starting", "failedToStart"], "\(seen)\n\(tail(gateway.log))")
            let retained = try await Self.retained(h, "late")
            #expect(retained?.status == "failedToStart", "\(retained?.description ?? "none")")
        }

        /// A broken config: nothing is known to be good enough to say `starting`; only
        /// `failedToStart`, as before.
        @Test func aBrokenConfigSaysOnlyFailedToStart() async throws {
            let h = try ServeHarness("starting-badconfig")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config(output: "colour: \"red\""))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(gateway.waitForExit(timeout: 60) == 2, "\(tail(gateway.log))")
            #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(30)) { $0.status == "failedToStart" }.ok, "\(tail(gateway.log))")
            #expect(Self.sequence(watcher, h.statusTopic) == ["failedToStart"])
        }

        /// A broker that is not there costs the start a log line: the gateway loads, serves, and
        /// says `started` once the broker comes up (no `starting` left from the side client).
        @Test func anUnreachableBrokerDoesNotHoldTheStart() async throws {
            let h = try ServeHarness("starting-nobroker")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            h.broker.stop()
            let began = ContinuousClock.now
            let gateway = try h.startGateway(config: configPath)
            let served = await poll(timeout: .seconds(30)) { gateway.log.contains(" serving") }
            let took = ContinuousClock.now - began
            #expect(served, "\(tail(gateway.log))")
            #expect(gateway.log.contains("could not publish starting"), "\(tail(gateway.log))")
            try h.broker.start()
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            #expect(await watcher.waitStatus(h.statusTopic, timeout: .seconds(90)) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            print("start with the broker down: serving after \(took); statuses once it came up \(Self.sequence(watcher, h.statusTopic))")
            #expect(!Self.sequence(watcher, h.statusTopic).contains { $0.hasPrefix("starting") })
            #expect(gateway.terminate() == 0)
        }

        /// SIGHUP reloads without a word on the status topic besides the periodic `started`.
        @Test func aReloadDoesNotSayStarting() async throws {
            let h = try ServeHarness("starting-reload")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config())
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let mark = watcher.received(on: h.statusTopic).count
            gateway.signal(SIGHUP)
            #expect(await poll(timeout: .seconds(30)) { gateway.log.contains("reloaded") }, "\(tail(gateway.log))")
            // A few periodic statuses (1 s interval) after the reload.
            #expect(await poll(timeout: .seconds(30)) { watcher.received(on: h.statusTopic).count >= mark + 3 })
            let after = Array(Self.sequence(watcher, h.statusTopic).dropFirst(mark))
            #expect(after.allSatisfy { $0 == "started" }, "\(after)")
            #expect(gateway.terminate() == 0)
        }
    }
}
