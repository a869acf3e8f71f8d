import Foundation
import MQTT
import TestSupport
import Testing

/// The `gpsd` feed of `geotrigger serve` end to end: a real mosquitto, the real `geotrigger`
/// binary, and a real gpsd fed by `gpsfake -1 -P PORT -c 0.05 LOG` on a free port, started after
/// the gateway (so each test also sees "gpsd not reachable" first).
///
/// The logs (`Tests/Fixtures/nmea/depot_out.log`, `depot_back.log`, made by `make_nmea.py`
/// from the LineStrings beside them) drive the gateway from south of the fleet depot north
/// through it 40 m up the Haul Road, and back. Their fix times are in 2030: the receiver clock
/// is years ahead, which must only raise a warning (no `futureTime` drop). Each play is led by
/// `no_fix.log` (3 s without a fix per copy): gpsd discards what gpsfake writes before the
/// gateway's reader (backoff up to 2 s) is watching, and the receiver's "no fix" shows.
/// The expected crossings come from `fleet_crossings.py` (shapely/pyproj), every fix more
/// than 1 m from every boundary.
@Suite(.serialized) struct GPSDFeedTests {
    static let gatewayID = "gw-gpsd"
    static let cycle = 0.05
    static let root = URL(fileURLWithPath: repositoryRoot)
    static func nmea(_ name: String) -> URL { root.appendingPathComponent("Tests/Fixtures/nmea/\(name)") }

    /// One event as the tests compare it: type, fence, crossing fix time, reason.
    struct Seen: Equatable, CustomStringConvertible {
        var type: String
        var fence: String
        var time: String
        var reason: String?

        var description: String { "\(type) \(fence) at \(time)" + (reason.map { " (\($0))" } ?? "") }
    }

    /// `depot_out.log`: 20 fixes standing south of the depot, then north at 10 m/s.
    static let outbound = [
        Seen(type: "enter", fence: "depot", time: "2030-01-01T08:00:32Z"),
        Seen(type: "enter", fence: "road", time: "2030-01-01T08:00:43Z"),
        Seen(type: "exit", fence: "depot", time: "2030-01-01T08:00:45Z", reason: "moved"),
    ]
    /// `depot_back.log`: 30 fixes standing on the road, then back south through the depot.
    static let inbound = [
        Seen(type: "enter", fence: "depot", time: "2030-01-01T08:05:35Z"),
        Seen(type: "exit", fence: "road", time: "2030-01-01T08:05:37Z", reason: "moved"),
        Seen(type: "exit", fence: "depot", time: "2030-01-01T08:05:48Z", reason: "moved"),
    ]

    /// Broker, gateway, probe and the gpsfakes of one test; `stop()` ends them all by PID.
    final class Harness {
        let broker: MosquittoProcess
        let directory: TemporaryDirectory
        let gpsdPort: Int
        let probe: MQTTProbe
        let gateway: GatewayProcess
        private var fakes: [GPSFake] = []

        init(republish: Bool, staleAfter: Int?) async throws {
            broker = try MosquittoProcess()
            directory = try TemporaryDirectory(prefix: "gpsd-feed")
            gpsdPort = try FreePort.next()
            probe = try MQTTProbe(port: broker.port, clientId: unique("gpsd-feed-probe")) {
                $0.cleanStart = true
            }
            probe.collect()
            try probe.client.start()
            for filter in ["geotriggers/#", "owntracks/#"] { try probe.client.subscribe(filter) }
            guard await probe.waitSubscribed("owntracks/#") else { throw TestSupportError("the probe could not subscribe") }
            let stale = staleAfter.map { ", staleAfter: \($0)" } ?? ""
            let config = try directory.write("gw.json5", """
                {
                  gateway: { id: "\(GPSDFeedTests.gatewayID)", database: "gw.db", fences: "\(GPSDFeedTests.root.path)/fences" },
                  broker: { port: \(broker.port) },
                  output: { statusInterval: 1 },
                  feeds: [
                    { name: "phones", topic: "owntracks/+/+", format: "owntracks" },
                    { name: "self", gpsd: { host: "127.0.0.1", port: \(gpsdPort) }, republish: \(republish) },
                  ],
                  triggers: [ { name: "fleet", fences: ["fleet"]\(stale) } ],
                }
                """)
            gateway = try GatewayProcess(["serve", "--config", config], directory: directory.path, logFile: directory.file("gateway.log"))
        }

        /// Starts gpsfake on the gateway's gpsd port with the fixture logs `names` played in turn.
        @discardableResult
        func play(_ names: [String]) throws -> GPSFake {
            var text = ""
            for name in names { text += try String(contentsOf: GPSDFeedTests.nmea(name), encoding: .utf8) }
            let log = URL(fileURLWithPath: directory.file("play-\(fakes.count).log"))
            try text.write(to: log, atomically: true, encoding: .utf8)
            let fake = try GPSFake(log: log, port: gpsdPort, cycle: GPSDFeedTests.cycle)
            fakes.append(fake)
            return fake
        }

        func stop() async {
            for fake in fakes { await fake.stop() }
            gateway.terminate()
            probe.stop()
            broker.stop()
        }

        static func object(_ message: MQTTMessage) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(message.payload))) as? [String: Any]
        }

        func messages(_ topic: String) -> [MQTTMessage] { probe.messages.all.filter { $0.topic == topic } }

        /// The gateway's events, in arrival order.
        var events: [[String: Any]] {
            probe.messages.all.filter { $0.topic.hasPrefix("geotriggers/events/") }.compactMap(Harness.object)
        }

        var seen: [Seen] {
            events.map { event in
                Seen(
                    type: event["type"] as? String ?? "?", fence: (event["fence"] as? [String: Any])?["id"] as? String ?? "?",
                    time: (event["position"] as? [String: Any])?["time"] as? String ?? "?", reason: event["reason"] as? String)
            }
        }

        /// The latest status payload.
        var status: GatewayStatus? { probe.lastStatus(GatewayStatus.topic(gatewayID: GPSDFeedTests.gatewayID)) }

        var warnings: [String] { status?.warnings ?? [] }

        func counter(_ name: String) -> Int { status?.counter(name) ?? -1 }

        func dropped(_ reason: String) -> Int { status?.dropped(reason) ?? -1 }

        /// The end of the gateway's log, for failure messages.
        var logTail: String { gateway.log.split(separator: "\n").suffix(30).joined(separator: "\n") }
    }

    func withHarness(republish: Bool = false, staleAfter: Int? = nil, _ body: (Harness) async throws -> Void) async throws {
        let harness = try await Harness(republish: republish, staleAfter: staleAfter)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    /// Waits for the "not reachable" status warning of a gateway started before gpsd.
    func expectUnreachable(_ h: Harness) async {
        let text = "gpsd at 127.0.0.1:\(h.gpsdPort) is not reachable"
        let warned = await poll(timeout: .seconds(60)) { h.warnings.contains { $0.contains(text) } }
        #expect(warned, "no status warning '\(text)...': \(h.warnings)\n\(h.logTail)")
    }

    /// gpsd not running at start: a warning, then the feed connects when gpsfake starts. The
    /// gateway's own device drives into the depot, onto the road, out of the depot, and back:
    /// the six events arrive through the broker with the crossing fixes' times.
    @Test func ownReceiverDrivesThroughTheDepotAndBack() async throws {
        try await withHarness { h in
            await expectUnreachable(h)
            try h.play(["no_fix.log", "no_fix.log", "depot_out.log", "depot_back.log"])
            let arrived = await poll(timeout: .seconds(120)) { h.events.count >= 6 }
            #expect(arrived, "events: \(h.seen)\n\(h.logTail)")
            #expect(h.seen == Self.outbound + Self.inbound)
            let events = h.events
            #expect(events.allSatisfy { $0["device"] as? String == Self.gatewayID && $0["trigger"] as? String == "fleet" })
            // The exits belong to the visits their enters opened.
            if events.count == 6 {
                #expect(events[2]["visit"] as? String == events[0]["id"] as? String)
                #expect(events[4]["visit"] as? String == events[1]["id"] as? String)
                #expect(events[5]["visit"] as? String == events[3]["id"] as? String)
                let position = events[0]["position"] as? [String: Any]
                #expect(abs((position?["lat"] as? Double ?? 0) - 34.428279) < 1e-5)
                #expect(position?["accuracy"] != nil, "gpsd's eph gives an accuracy")
            }

            // Every fix was taken although its time is years ahead: no futureTime drop, one
            // warning about the receiver clock; the connection and no-fix warnings are gone.
            let fixes = 51 + 61
            let settled = await poll(timeout: .seconds(30)) {
                let accepted = h.counter("accepted")
                return accepted >= fixes - 20 && accepted == h.counter("received")
                    && !h.warnings.contains { $0.contains("gpsd at 127.0.0.1:\(h.gpsdPort) is not reachable") }
            }
            #expect(settled, "status \(h.status.map(\.description) ?? "none")")
            #expect(h.counter("accepted") <= fixes)
            #expect(h.dropped("futureTime") == 0)
            #expect(h.warnings.contains { $0.contains("ahead of the system clock") && $0.contains("used anyway") }, "\(h.warnings)")
            #expect(!h.warnings.contains { $0.contains("has no fix") }, "\(h.warnings)")
            let log = h.gateway.log
            #expect(log.contains("(feed self) has no fix"), "the no-fix lead raised no warning:\n\(h.logTail)")
            #expect(log.contains("has a fix again"), "the no-fix warning was not cleared:\n\(h.logTail)")
            // The state ends outside every fence (`settled` allows the last fixes to be on their
            // way still); nothing is republished without `republish`.
            let lastState = { h.messages("geotriggers/devices/\(Self.gatewayID)/state").last.flatMap(Harness.object) }
            #expect(await poll(timeout: .seconds(30)) { (lastState()?["inside"] as? [Any])?.isEmpty == true },
                    "state \(String(describing: lastState()))")
            #expect(h.probe.messages.all.filter { $0.topic.hasPrefix("owntracks/") }.isEmpty)
            // SIGTERM: the gpsd feed stops first and the gateway exits cleanly.
            #expect(h.gateway.terminate() == 0, "\(h.logTail)")
        }
    }

    /// `republish: true` with an `owntracks/+/+` feed: each fix goes out as an OwnTracks
    /// location on `owntracks/gateway/ID`, which the gateway counts as `ownEcho` and never
    /// ingests: no events, no state for a device `gateway/ID`.
    @Test func republishedPositionIsNeverIngestedBack() async throws {
        try await withHarness(republish: true) { h in
            await expectUnreachable(h)
            try h.play(["no_fix.log", "no_fix.log", "depot_out.log"])
            let topic = "owntracks/gateway/\(Self.gatewayID)"
            let lastTime = 1_893_484_850.0  // 2030-01-01T08:00:50Z, the log's last fix
            let done = await poll(timeout: .seconds(90)) {
                h.events.count >= 3
                    && h.messages(topic).contains { (Harness.object($0)?["tst"] as? NSNumber)?.doubleValue == lastTime }
            }
            #expect(done, "events \(h.seen), republished \(h.messages(topic).count)\n\(h.logTail)")
            #expect(h.seen == Self.outbound)
            let republished = h.messages(topic)
            #expect(republished.count >= 51 - 20 && republished.count <= 51, "republished \(republished.count) of 51 fixes")
            #expect(republished.allSatisfy { !$0.retain })
            let locations = republished.compactMap(Harness.object)
            #expect(locations.count == republished.count)
            for (index, location) in locations.enumerated() {
                #expect(location["_type"] as? String == "location")
                #expect(location["tid"] as? String == "sd")
                // The very first fix is gpsd's first TPV of its epoch, which may lack the course
                // (see GPSDFixTracker); later epochs wait for the TPV that brings it.
                for key in ["lat", "lon", "tst", "acc", "alt", "vel"] + (index > 0 ? ["cog"] : []) {
                    #expect(location[key] is NSNumber, "\(key) missing in \(location)")
                }
            }
            if let last = locations.last {
                #expect(abs((last["lat"] as? Double ?? 0) - 34.429816) < 1e-6 && abs((last["lon"] as? Double ?? 0) + 119.693414) < 1e-6,
                        "last republished \(last)")
                #expect((last["vel"] as? NSNumber)?.intValue == 36, "10 m/s is 36 km/h: \(last)")
                #expect((last["alt"] as? NSNumber)?.intValue == 10)
            }
            // The gateway received every republished location back and dropped it as ownEcho; it
            // accepted only its gpsd fixes.
            let counted = await poll(timeout: .seconds(30)) {
                let echoes = h.dropped("ownEcho")
                return echoes == h.messages(topic).count && h.counter("accepted") == echoes
                    && h.counter("received") == 2 * echoes
            }
            #expect(counted, "ownEcho \(h.dropped("ownEcho")), accepted \(h.counter("accepted")), received \(h.counter("received")), republished \(h.messages(topic).count)")
            #expect(h.events.allSatisfy { $0["device"] as? String == Self.gatewayID })
            #expect(h.messages("geotriggers/devices/gateway/\(Self.gatewayID)/state").isEmpty)
            #expect(h.dropped("futureTime") == 0)
        }
    }

    /// gpsd killed (SIGKILL) after the drive out, and a new one on the same port 12 s later:
    /// the feed warns, reconnects by itself, and the drive back gives its events. The trigger's
    /// `staleAfter: 8` would end the stay on the road during the outage if the device's stale
    /// clock ran on; it is paused while gpsd is down, so no `stale` exit comes.
    @Test func gpsdRestartedMidRunReconnectsAndStaleClockPauses() async throws {
        try await withHarness(staleAfter: 8) { h in
            await expectUnreachable(h)
            let first = try h.play(["no_fix.log", "no_fix.log", "depot_out.log"])
            let out = await poll(timeout: .seconds(90)) { h.events.count >= 3 }
            #expect(out, "events \(h.seen)\n\(h.logTail)")
            await first.killDaemon()
            let killed = ContinuousClock.now
            let lost = "lost gpsd at 127.0.0.1:\(h.gpsdPort)"
            let warned = await poll(timeout: .seconds(30)) { h.warnings.contains { $0.contains(lost) } }
            #expect(warned, "no '\(lost)' warning: \(h.warnings)\n\(h.logTail)")
            // The outage lasts longer than staleAfter (counted from the kill, after the last fix).
            let outage = max(.zero, .seconds(12) - killed.duration(to: .now))
            let eventDuringOutage = await poll(timeout: outage) { h.events.count > 3 }
            #expect(!eventDuringOutage, "an event while gpsd was down: \(h.seen)")

            try h.play(["no_fix.log", "depot_back.log"])
            let back = await poll(timeout: .seconds(90)) { h.events.count >= 6 }
            #expect(back, "events \(h.seen)\n\(h.logTail)")
            #expect(h.seen == Self.outbound + Self.inbound)
            let cleared = await poll(timeout: .seconds(30)) { h.status != nil && !h.warnings.contains { $0.contains(lost) } }
            #expect(cleared, "\(h.warnings)")
            // Logged once for the outage, however many attempts failed.
            let log = h.gateway.log
            #expect(log.components(separatedBy: lost).count - 1 == 1, "\(h.logTail)")
            #expect(log.contains("gpsd at 127.0.0.1:\(h.gpsdPort) is reachable"))
        }
    }
}
