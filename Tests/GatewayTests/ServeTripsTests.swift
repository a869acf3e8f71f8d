import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// A `geotrigger serve` with the repository's fences, one `json` feed for `vehicles/*`, and a
/// dispatcher probe recording `PREFIX/trips/#`, the trip events, the replies and the status.
private final class TripRig: @unchecked Sendable {
    // @unchecked: used by its one test only.
    let h: ServeHarness
    let configPath: String
    let dispatcher: MQTTProbe
    private(set) var gateway: GatewayProcess?
    private var queries = 0

    init(_ name: String) async throws {
        h = try ServeHarness(name)
        configPath = try h.write("gw.json5", h.config(extra: """
            feeds: [{ name: "fleet", topic: "\(h.prefix)-in/fleet/+/+/location", format: "json" }],
            triggers: [{ name: "fleet", fences: ["fleet"], devices: ["vehicles/*"] }],
            """))
        dispatcher = try await h.probe(
            "dispatcher", subscribe: ["\(h.prefix)/trips/#", "\(h.prefix)/events/trips/#", "\(h.prefix)/replies/#", h.statusTopic])
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

    func topic(_ id: String) -> String { "\(h.prefix)/trips/\(id)" }

    // MARK: The route: 2 km due north from (34.40, -119.70), and points along it or beside it.

    static let start = (lat: 34.40, lon: -119.70)
    /// Degrees of latitude per metre here (WGS84, 34.4 degrees north), and of longitude.
    static let latPerMetre = 1 / 110_930.0
    static let lonPerMetre = 1 / 91_940.0
    static let length = 2000.0

    /// `along` metres up the route, `east` metres east of it.
    static func point(along: Double, east: Double = 0) -> (lat: Double, lon: Double) {
        (start.lat + along * latPerMetre, start.lon + east * lonPerMetre)
    }

    static var routeJSON: String {
        let end = point(along: length)
        return #"{"type":"LineString","coordinates":[[\#(start.lon),\#(start.lat)],[\#(end.lon),\#(end.lat)]]}"#
    }

    /// Publishes a trip, retained, like a dispatcher.
    func assign(_ id: String, device: String = "vehicles/v17") throws {
        try publish(id, #"{"device":"\#(device)","route":\#(Self.routeJSON),"corridor":50,"offRouteAfter":30}"#)
    }

    func publish(_ id: String, _ payload: String) throws {
        try dispatcher.client.publish(topic: topic(id), payload: payload, qos: .atLeastOnce, retain: true)
    }

    func cancel(_ id: String) throws {
        try dispatcher.client.publish(topic: topic(id), payload: [UInt8](), qos: .atLeastOnce, retain: true)
    }

    func move(
        _ device: String = "vehicles/v17", to point: (lat: Double, lon: Double), time: Double, accuracy: Double? = nil, speed: Double? = nil
    ) throws {
        try dispatcher.client.publish(
            topic: "\(h.prefix)-in/fleet/\(device)/location",
            payload: Payload.json(lat: point.lat, lon: point.lon, time: time, accuracy: accuracy, speed: speed), qos: .atLeastOnce)
    }

    /// The progress messages of `id` received so far, parsed (a clear is an empty object).
    func progress(_ id: String) -> [JSONObject] {
        dispatcher.received(on: topic(id) + "/progress").map { $0.payload.isEmpty ? [:] : (json($0) ?? [:]) }
    }

    /// The trip events of `device` received so far, parsed, in order.
    func events(_ device: String = "vehicles/v17") -> [JSONObject] {
        dispatcher.received(on: "\(h.prefix)/events/trips/\(device)").compactMap(json)
    }

    func errors(_ id: String) -> [JSONObject] { dispatcher.received(on: topic(id) + "/error").compactMap(json) }

    /// Sends the fix at `time` and waits for the progress it publishes.
    func drive(_ id: String, to point: (lat: Double, lon: Double), time: Double) async throws {
        try move(to: point, time: time)
        let published = await poll(timeout: .seconds(30)) {
            progress(id).contains { $0["time"] == .string(iso8601(time)) }
        }
        #expect(published, "no progress for the fix at \(iso8601(time)): \(progress(id).last ?? [:])\n\(tail(log))")
    }

    /// `{"trips": {...}}` on the query topic, answered under `PREFIX/replies/`.
    func openTrips(_ device: String? = nil) async throws -> JSONObject {
        queries += 1
        let replyTo = "\(h.prefix)/replies/q\(queries)"
        let filter = device.map { #"{"device":"\#($0)"}"# } ?? "{}"
        try dispatcher.client.publish(
            topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"trips":\#(filter),"replyTo":"\#(replyTo)"}"#, qos: .atLeastOnce)
        _ = await poll(timeout: .seconds(30)) { !dispatcher.received(on: replyTo).isEmpty }
        return try #require(dispatcher.received(on: replyTo).first.flatMap(json), "no reply to the trips query")
    }

    /// Waits until the query lists exactly `ids` as open.
    func waitOpen(_ ids: [String]) async throws -> Bool {
        var last: [String] = []
        let ok = try await poll(timeout: .seconds(30), interval: .milliseconds(100)) {
            let reply = try await openTrips()
            last = reply["trips"]?.arrayValue?.compactMap { $0.objectValue?["trip"]?.stringValue } ?? []
            return last == ids
        }
        if !ok { Issue.record("open trips \(last), expected \(ids)") }
        return ok
    }

    /// The retained payload the broker holds for `topic` (nil: none): a fresh client subscribes
    /// to it and to a ping topic, then publishes the ping; retained messages come before the ping.
    func retained(_ topic: String) async throws -> [UInt8]? {
        queries += 1
        let ping = "\(h.prefix)/ping-\(queries)"
        let reader = try await h.probe("reader-\(queries)", subscribe: [topic, ping], cleanStart: true)
        defer { reader.stop() }
        try reader.client.publish(topic: ping, payload: "ping", qos: .atLeastOnce)
        let pinged = await poll(timeout: .seconds(30)) { !reader.received(on: ping).isEmpty }
        #expect(pinged)
        return reader.received(on: topic).first { !$0.payload.isEmpty }?.payload
    }

    /// Waits until the gateway's clear of `topic` (an empty message) went through the broker.
    func waitCleared(_ topic: String) async -> Bool {
        await poll(timeout: .seconds(30)) { dispatcher.received(on: topic).contains { $0.payload.isEmpty } }
    }
}

/// The drive of the end-to-end tests: a fix every 10 s of fix time at 10 m/s up the 2 km
/// route, with a detour 200 m east from 50 s to 110 s (out of the corridor for 30 s at 80 s,
/// back within it for 30 s at 120 s), a stop of 70 s at 900 m, and the route's end at 300 s.
private struct TripDrive {
    struct Fix {
        var offset: Double
        var along: Double
        var east: Double
        /// The progress state the fix leaves.
        var state: String
        /// The event it decides, if any.
        var event: String?
    }

    static let fixes: [Fix] = {
        var fixes: [Fix] = []
        var along = 0.0
        for k in 0...34 {
            let t = Double(k) * 10
            var east = 0.0
            switch t {
            case 0...40: along = t * 10
            case 50...80: east = 200
            case 90...120: along = 500 + (t - 90) * 10
            case 130...190: along = 900
            default: along = 900 + (t - 190) * 10
            }
            if along > 2000 { break }
            let state: String, event: String?
            switch t {
            case 0: (state, event) = ("pending", nil)
            case 10: (state, event) = ("onRoute", "tripStarted")
            case 80: (state, event) = ("offRoute", "offRoute")
            case 90...110: (state, event) = ("offRoute", nil)
            case 120: (state, event) = ("onRoute", "backOnRoute")
            case 300: (state, event) = ("arrived", "arrived")
            default: (state, event) = ("onRoute", nil)
            }
            fixes.append(Fix(offset: t, along: along, east: east, state: state, event: event))
            if event == "arrived" { break }
        }
        return fixes
    }()
}

extension ServeTests {
    /// docs/trips.md end to end: real broker, real `geotrigger serve`, real SQLite.
    @Suite(.serialized) struct Trips {
        /// A dispatcher publishes a trip; the device drives it with a detour and a stop: the
        /// progress topic gets one message per fix with the expected states, the events are
        /// exactly tripStarted, offRoute, backOnRoute, arrived; then the request is cleared and
        /// the progress stays.
        @Test func aDriveWithADetourAndAStopGivesExactlyTheExpectedProgressAndEvents() async throws {
            let rig = try await TripRig("trips-drive")
            defer { rig.close() }
            try await rig.start()
            try rig.assign("north-run")
            #expect(try await rig.waitOpen(["north-run"]))
            let t0 = fixTimeBase(secondsAgo: 900).rounded()
            for fix in TripDrive.fixes {
                try await rig.drive("north-run", to: TripRig.point(along: fix.along, east: fix.east), time: t0 + fix.offset)
                if fix.offset == 60 {
                    let listed = try await rig.openTrips("vehicles/v17")
                    let row = try #require(listed["trips"]?.arrayValue?.first?.objectValue, "\(listed)")
                    #expect(row["trip"] == .string("north-run") && row["device"] == .string("vehicles/v17"))
                    #expect(row["state"] == .string("onRoute") && row["along"]?.numberValue.map { abs($0 - 400) < 1 } == true, "\(row)")
                    #expect(listed["count"] == .number(1))
                    let status = await poll(timeout: .seconds(10)) {
                        rig.dispatcher.lastStatus(rig.h.statusTopic)?.counters?["trips"]?.objectValue?["onRoute"] == .number(1)
                    }
                    #expect(status, "counters.trips: \(String(describing: rig.dispatcher.lastStatus(rig.h.statusTopic)?.counters?["trips"]))")
                }
            }
            let progress = rig.progress("north-run")
            #expect(progress.map { $0["state"]?.stringValue ?? "?" } == TripDrive.fixes.map(\.state))
            #expect(progress.map { $0["time"]?.stringValue ?? "?" } == TripDrive.fixes.map { iso8601(t0 + $0.offset) })
            let last = try #require(progress.last)
            #expect(last["trip"] == .string("north-run") && last["device"] == .string("vehicles/v17"))
            #expect(last["remaining"] == .number(0) && last["eta"] == nil, "\(last)")
            let mid = progress[3]
            #expect(mid["along"]?.numberValue.map { abs($0 - 300) < 1 } == true && mid["remaining"]?.numberValue.map { abs($0 - 1700) < 5 } == true, "\(mid)")
            #expect(mid["eta"]?.stringValue.flatMap(ISO8601Time.parse).map { abs($0 - (t0 + 200)) < 10 } == true, "\(mid)")
            #expect(mid["speed"]?.numberValue.map { abs($0 - 10) < 0.5 } == true, "\(mid)")

            let expected = TripDrive.fixes.compactMap { fix in fix.event.map { ($0, t0 + fix.offset) } }
            #expect(await poll(timeout: .seconds(30)) { rig.events().count >= expected.count })
            let events = rig.events()
            #expect(events.map { $0["type"]?.stringValue ?? "?" } == expected.map(\.0))
            #expect(events.map { $0["time"]?.stringValue ?? "?" } == expected.map { iso8601($0.1) })
            for event in events {
                #expect(event["trigger"] == .string("trips") && event["trip"] == .string("north-run"))
                #expect(event["notification"] == event["type"] && event["device"] == .string("vehicles/v17"))
                #expect(event["fence"] == nil && event["visit"] == nil && event["message"]?.stringValue != nil)
                #expect(event["id"]?.stringValue?.count == 32 && event["position"]?.objectValue?["lat"] != nil)
            }
            #expect(events.first { $0["type"] == .string("offRoute") }?["offBy"]?.numberValue.map { abs($0 - 200) < 5 } == true)

            // Ended: the request is cleared, the progress stays, nothing is open.
            #expect(await rig.waitCleared(rig.topic("north-run")))
            #expect(try await rig.retained(rig.topic("north-run")) == nil)
            let kept = try #require(try await rig.retained(rig.topic("north-run") + "/progress").flatMap { try? JSONReader.parse($0, file: "progress", dialect: .json).value.objectValue })
            #expect(kept["state"] == .string("arrived"))
            #expect(try await rig.waitOpen([]))
            // A fix after the end decides nothing.
            try rig.move(to: TripRig.point(along: 1500), time: t0 + 400)
            try await Task.sleep(for: .seconds(1))
            rig.stop()
            #expect(rig.events().count == expected.count && rig.progress("north-run").count == TripDrive.fixes.count)
        }

        /// A `kill -9` after `tripStarted` (at 40 s of the drive) and a restart: the rest of the
        /// drive gives offRoute, backOnRoute and arrived, and tripStarted is not fired again.
        @Test func aKillMidTripAndARestartRefireNothingAndLoseNothing() async throws {
            let rig = try await TripRig("trips-kill")
            defer { rig.close() }
            try await rig.start()
            try rig.assign("north-run")
            #expect(try await rig.waitOpen(["north-run"]))
            let t0 = fixTimeBase(secondsAgo: 900).rounded()
            let (before, after) = (TripDrive.fixes.filter { $0.offset <= 40 }, TripDrive.fixes.filter { $0.offset > 40 })
            for fix in before {
                try await rig.drive("north-run", to: TripRig.point(along: fix.along, east: fix.east), time: t0 + fix.offset)
            }
            #expect(await poll(timeout: .seconds(30)) { rig.events().count == 1 })
            rig.killNine()
            try await rig.start(log: "gateway-2.log")
            for fix in after {
                try await rig.drive("north-run", to: TripRig.point(along: fix.along, east: fix.east), time: t0 + fix.offset)
            }
            let expected = TripDrive.fixes.compactMap(\.event)
            _ = await poll(timeout: .seconds(30)) { rig.events().count >= expected.count }
            try await Task.sleep(for: .seconds(1))
            let events = rig.events()
            #expect(events.map { $0["type"]?.stringValue ?? "?" } == expected, "\(events.map { $0["type"]?.stringValue ?? "?" })\n\(tail(rig.log))")
            #expect(Set(events.compactMap { $0["id"]?.stringValue }).count == events.count)
            let progress = rig.progress("north-run")
            #expect(progress.map { $0["state"]?.stringValue ?? "?" } == TripDrive.fixes.map(\.state))
            #expect(await rig.waitCleared(rig.topic("north-run")))
            rig.stop()
        }

        /// No arrival by `by` on the gateway's wall clock: `missed` at `by` (decided by the
        /// shard's tick, with no fix), the progress left at `missed`, the request cleared; a
        /// restart decides nothing again.
        @Test func aTripNotArrivedByItsDeadlineIsMissedOnce() async throws {
            let rig = try await TripRig("trips-missed")
            defer { rig.close() }
            try await rig.start()
            let by = (Date().timeIntervalSince1970 + 3).rounded()
            try rig.publish("late-run", #"{"device":"vehicles/v17","route":\#(TripRig.routeJSON),"by":"\#(iso8601(by))"}"#)
            #expect(try await rig.waitOpen(["late-run"]))
            let t0 = fixTimeBase(secondsAgo: 900).rounded()
            try await rig.drive("late-run", to: TripRig.point(along: 0), time: t0)
            #expect(await poll(timeout: .seconds(30)) { !rig.events().isEmpty })
            let missed = try #require(rig.events().first)
            #expect(missed["type"] == .string("missed") && missed["time"] == .string(iso8601(by)), "\(missed)")
            #expect(missed["state"] == .string("missed") && missed["position"]?.objectValue?["time"] == .string(iso8601(t0)))
            let emitted = try #require(missed["emitted"]?.stringValue.flatMap(ISO8601Time.parse))
            #expect(emitted >= by && emitted < by + 10, "decided at the deadline by the wall clock")
            #expect(await poll(timeout: .seconds(30)) { rig.progress("late-run").last?["state"] == .string("missed") })
            #expect(await rig.waitCleared(rig.topic("late-run")))
            rig.stop()
            try await rig.start(log: "gateway-2.log")
            #expect(try await rig.waitOpen([]))
            try await Task.sleep(for: .seconds(1))
            rig.stop()
            #expect(rig.events().count == 1, "\(rig.events())")
        }

        /// A cancel clears the progress topic at once; a malformed trip gets its error.
        @Test func aCancelClearsItsProgressAndAMalformedTripGetsItsError() async throws {
            let rig = try await TripRig("trips-cancel")
            defer { rig.close() }
            try await rig.start()
            try rig.assign("called-off")
            #expect(try await rig.waitOpen(["called-off"]))
            let t0 = fixTimeBase(secondsAgo: 900).rounded()
            for fix in TripDrive.fixes.prefix(2) {
                try await rig.drive("called-off", to: TripRig.point(along: fix.along, east: fix.east), time: t0 + fix.offset)
            }
            #expect(try await rig.retained(rig.topic("called-off") + "/progress") != nil)
            try rig.cancel("called-off")
            #expect(await rig.waitCleared(rig.topic("called-off") + "/progress"))
            #expect(try await rig.retained(rig.topic("called-off") + "/progress") == nil)
            #expect(try await rig.waitOpen([]))
            // Fixes after the cancel decide nothing.
            try rig.move(to: TripRig.point(along: 500), time: t0 + 100)

            try rig.publish("broken", #"{"device":"vehicles/v17","route":{"layer":"fleet","fence":"nowhere"}}"#)
            #expect(await poll(timeout: .seconds(30)) { !rig.errors("broken").isEmpty })
            let error = try #require(rig.errors("broken").first)
            #expect(error["trip"] == .string("broken"))
            #expect(error["error"] == .string(#""route": no fence "nowhere" in layer "fleet""#), "\(error)")
            #expect(error["time"]?.stringValue != nil)
            try rig.publish("bad-id.x", "{}")
            try rig.publish("no-route", #"{"device":"vehicles/v17"}"#)
            #expect(await poll(timeout: .seconds(30)) { !rig.errors("no-route").isEmpty })
            #expect(rig.errors("no-route").first?["error"]?.stringValue?.hasPrefix(#""route" is missing; expected {"device": ID"#) == true)
            #expect(try await rig.waitOpen([]))
            rig.stop()
            #expect(rig.events().count == 1, "only tripStarted: \(rig.events())")
        }
    }
}

extension ServeTests.ShippedBroker {
    /// Under the shipped ACL the dispatcher may publish trips and read their progress and
    /// errors, and the gateway may read them, write progress and errors, and clear an ended
    /// trip's request.
    @Test func tripsWorkUnderTheShippedACL() async throws {
        let h = try ServeHarness("trips-acl", broker: try Self.options())
        defer { h.close() }
        let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
        let dispatcher = try await h.probe(
            "dispatcher", subscribe: ["geotriggers/trips/#", h.eventsFilter(prefix: "geotriggers"), statusTopic], configure: Self.credentials("dispatch"))
        let vehicle = try await h.probe("vehicle", configure: Self.credentials("v17"))
        let gateway = try h.startGateway(config: try Self.gatewayConfig(h))
        #expect(await dispatcher.waitStatus(statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
        // From where v17 starts to the meadow, where it ends: started and arrived at its second fix.
        let route = #"{"type":"LineString","coordinates":[[\#(Self.outside.lon),\#(Self.outside.lat)],[\#(Self.meadow.lon),\#(Self.meadow.lat)]]}"#
        try dispatcher.client.publish(
            topic: "geotriggers/trips/garden-run", payload: #"{"device":"v17","route":\#(route),"corridor":20}"#, qos: .atLeastOnce, retain: true)
        try dispatcher.client.publish(topic: "geotriggers/trips/no-route", payload: #"{"device":"v17"}"#, qos: .atLeastOnce, retain: true)
        let rejected = await poll(timeout: .seconds(60)) { !dispatcher.received(on: "geotriggers/trips/no-route/error").isEmpty }
        #expect(rejected, "the gateway may write a trip's error:\n\(tail(gateway.log))\n\(tail(h.brokerLog))")
        let t0 = fixTimeBase()
        #expect(try await Self.vehicleEnters(h, watcher: dispatcher, vehicle: vehicle, at: t0), "\(tail(gateway.log))")
        let arrived = await poll(timeout: .seconds(60)) {
            dispatcher.received(on: "geotriggers/trips/garden-run/progress").compactMap(json).contains { $0["state"] == .string("arrived") }
        }
        #expect(arrived, "the gateway may write a trip's progress:\n\(tail(gateway.log))\n\(tail(h.brokerLog))")
        let cleared = await poll(timeout: .seconds(30)) {
            dispatcher.received(on: "geotriggers/trips/garden-run").contains { $0.payload.isEmpty }
        }
        #expect(cleared, "the gateway may clear an ended trip's request:\n\(tail(h.brokerLog))")
        #expect(gateway.terminate() == 0)
    }
}

/// The drive of the speed-limit tests: a fix every 2 s of fix time up the 2 km route, 20 m/s
/// for 40 s (800 m), then 10 m/s for 40 s; against `speedLimit: 14` (docs/trips.md "Speed
/// limits"): `tripStarted` at 4 s (80 m), `overspeed` 10 s after the first fast reading (at 0 s
/// when the device reports its speed, at 2 s when it is measured between fixes), `speedOk` at
/// 52 s (the first slow reading at 42 s).
private struct SpeedDrive {
    static let offsets = Array(stride(from: 0.0, through: 80, by: 2))

    static func along(_ t: Double) -> Double { t <= 40 ? 20 * t : 800 + 10 * (t - 40) }

    /// The speed the device reports at `t`: the one it drove at since the fix before.
    static func speed(_ t: Double) -> Double { t <= 40 ? 20 : 10 }

    static func expected(reported: Bool) -> [(type: String, offset: Double)] {
        [("tripStarted", 4), ("overspeed", reported ? 10 : 12), ("speedOk", 52)]
    }

    static func send(_ rig: TripRig, _ offsets: [Double], t0: Double, reported: Bool) throws {
        for t in offsets {
            try rig.move(to: TripRig.point(along: along(t)), time: t0 + t, accuracy: 5, speed: reported ? speed(t) : nil)
        }
    }

    /// Waits for a progress of the drive's last 10 s (progress comes at most every 10 s of fix
    /// time): the gateway has taken (almost) every fix.
    static func waitDriven(_ rig: TripRig, t0: Double) async -> Bool {
        await poll(timeout: .seconds(30)) {
            rig.progress("fast-run").contains { $0["time"]?.stringValue.flatMap(ISO8601Time.parse).map { $0 >= t0 + 70 } == true }
        }
    }

    static let request = #"{"device":"vehicles/v17","route":\#(TripRig.routeJSON),"speedLimit":14}"#
}

extension ServeTests.Trips {
    /// A trip with `speedLimit: 14` driven at 20 m/s, then 10 m/s, the speed measured between
    /// the fixes (none reported): exactly one `overspeed` and one `speedOk` on the trip events
    /// topic, with the trip, the reading and the limit.
    @Test func aTripsSpeedLimitGivesOneOverspeedAndOneSpeedOk() async throws {
        let rig = try await TripRig("trips-speed")
        defer { rig.close() }
        try await rig.start()
        try rig.publish("fast-run", SpeedDrive.request)
        #expect(try await rig.waitOpen(["fast-run"]))
        let t0 = fixTimeBase(secondsAgo: 900).rounded()
        try SpeedDrive.send(rig, SpeedDrive.offsets, t0: t0, reported: false)
        let expected = SpeedDrive.expected(reported: false)
        #expect(await poll(timeout: .seconds(30)) { rig.events().count >= expected.count }, "\(rig.events())\n\(tail(rig.log))")
        #expect(await SpeedDrive.waitDriven(rig, t0: t0), "\(rig.progress("fast-run").last ?? [:])")
        try await Task.sleep(for: .seconds(1))
        let events = rig.events()
        #expect(events.map { $0["type"]?.stringValue ?? "?" } == expected.map(\.type))
        #expect(events.map { $0["time"]?.stringValue ?? "?" } == expected.map { iso8601(t0 + $0.offset) })
        let overspeed = try #require(events.first { $0["type"] == .string("overspeed") })
        let speedOk = try #require(events.first { $0["type"] == .string("speedOk") })
        for event in [overspeed, speedOk] {
            #expect(event["trigger"] == .string("trips") && event["trip"] == .string("fast-run") && event["notification"] == event["type"])
            #expect(event["speedLimit"] == .number(14) && event["state"] == .string("onRoute") && event["fence"] == nil, "\(event)")
            #expect(event["id"]?.stringValue?.count == 32 && event["message"]?.stringValue != nil)
        }
        #expect(overspeed["speed"]?.numberValue.map { abs($0 - 20) < 0.5 } == true, "\(overspeed)")
        #expect(speedOk["speed"]?.numberValue.map { abs($0 - 10) < 0.5 } == true, "\(speedOk)")
        #expect(overspeed["message"] == .string("vehicles/v17 is over the speed limit of trip fast-run (20 m/s, limit 14 m/s)"))
        rig.stop()
        #expect(rig.events().count == expected.count, "\(rig.events())")
    }

    /// A `kill -9` right after `overspeed` (the device reporting its speed) and a restart: still
    /// fast, no second `overspeed` (no other id); slow, the one `speedOk`.
    @Test func aKillMidOverspeedAndARestartGiveNoSecondOverspeed() async throws {
        let rig = try await TripRig("trips-speed-kill")
        defer { rig.close() }
        try await rig.start()
        try rig.publish("fast-run", SpeedDrive.request)
        #expect(try await rig.waitOpen(["fast-run"]))
        let t0 = fixTimeBase(secondsAgo: 900).rounded()
        try SpeedDrive.send(rig, SpeedDrive.offsets.filter { $0 <= 10 }, t0: t0, reported: true)
        #expect(await poll(timeout: .seconds(30)) { rig.events().count == 2 }, "\(rig.events())\n\(tail(rig.log))")
        #expect(rig.events().last?["type"] == .string("overspeed"))
        rig.killNine()
        try await rig.start(log: "gateway-2.log")
        try SpeedDrive.send(rig, SpeedDrive.offsets.filter { $0 > 10 }, t0: t0, reported: true)
        let expected = SpeedDrive.expected(reported: true)
        _ = await poll(timeout: .seconds(30)) { rig.events().count >= expected.count }
        #expect(await SpeedDrive.waitDriven(rig, t0: t0), "\(rig.progress("fast-run").last ?? [:])")
        try await Task.sleep(for: .seconds(1))
        // Events published before the kill whose delivery was not yet settled are sent again
        // after the restart (at least once, the same ids): counted once each by id.
        var seen = Set<String>()
        let events = rig.events().filter { seen.insert($0["id"]?.stringValue ?? "?").inserted }
        #expect(events.map { $0["type"]?.stringValue ?? "?" } == expected.map(\.type), "\(events)\n\(tail(rig.log))")
        #expect(events.map { $0["time"]?.stringValue ?? "?" } == expected.map { iso8601(t0 + $0.offset) })
        rig.stop()
    }
}
