import Testing
@testable import GeotriggerCore

/// The event and device state payloads, exactly as docs/topics-and-payloads.md "Events" and "Device state" show them.
@Suite struct EngineEventTests {
    typealias Kit = EngineTestKit

    static let desert = Kit.box(
        "desert", layer: "garden-sections", name: "Desert Section", west: -100, east: 0, south: -50, north: 50,
        properties: ["zone": .string("arid")])

    static func snapshot(_ message: String?) throws -> EngineSnapshot {
        let layer = FenceLayer(name: "garden-sections", file: "fences/garden-sections.geojson", fences: [desert])
        var trigger: JSONObject = ["name": .string("garden-sections"), "fences": .array([.string("garden-sections")])]
        if let message { trigger["message"] = .string(message) }
        return try EngineSnapshot(layers: [layer], configTriggers: .array([.object(trigger)]))
    }

    @Test func enterEventHasExactlyTheDocumentedKeys() throws {
        var m = DeviceMonitor(device: "workers/alice", snapshot: try Self.snapshot("'Entered ' + $fencefeature.name"), now: 0)
        let u = Kit.update(east: -3.2, time: 1_796_040_000, accuracy: 5)
        let enter = try #require(m.handle(u, receivedAt: 0).notifications.first)
        let json = enter.eventJSON(gateway: "gw-1", emitted: 1_796_040_000.12).serialized()
        let id = EventID.make(trigger: "garden-sections", layer: "garden-sections", fence: "desert", device: "workers/alice", type: "enter", time: 1_796_040_000)
        #expect(json == """
            {"id":"\(id)","visit":"\(id)","gateway":"gw-1","trigger":"garden-sections","device":"workers/alice",\
            "type":"enter","notification":"entered","fence":{"id":"desert","layer":"garden-sections","name":"Desert Section",\
            "properties":{"zone":"arid","name":"Desert Section"}},"position":{"lat":\(u.lat),"lon":\(u.lon),"accuracy":5,\
            "time":"2026-11-30T12:00:00Z"},"distance":-3.2,"message":"Entered Desert Section","actions":[],"properties":{},\
            "emitted":"2026-11-30T12:00:00.120Z"}
            """)
    }

    @Test func exitEventHasReasonAndDwellSecondsAndNoMessageWithoutExpression() throws {
        var m = DeviceMonitor(device: "workers/alice", snapshot: try Self.snapshot(nil), now: 0)
        _ = m.handle(Kit.update(east: -10, time: 1_796_040_000), receivedAt: 0)
        let out = Kit.update(east: 7, time: 1_796_040_340.5)
        let exit = try #require(m.handle(out, receivedAt: 1).notifications.first)
        let json = try #require(exit.eventJSON(gateway: "gw-1", emitted: 1_796_040_341).objectValue)
        #expect(json.keys == [
            "id", "visit", "gateway", "trigger", "device", "type", "notification", "reason", "fence", "position",
            "distance", "dwellSeconds", "actions", "properties", "emitted",
        ])
        #expect(json["type"] == .string("exit") && json["notification"] == .string("exited") && json["reason"] == .string("moved"))
        #expect(json["dwellSeconds"] == .number(340.5) && json["distance"] == .number(7))
        #expect(json["position"]?.objectValue?.keys == ["lat", "lon", "time"])  // no accuracy when unknown
        #expect(json["position"]?.objectValue?["time"] == .string("2026-11-30T12:05:40.500Z"))
        #expect(json["emitted"] == .string("2026-11-30T12:05:41.000Z"))
        #expect(json["visit"] == .string(EventID.make(
            trigger: "garden-sections", layer: "garden-sections", fence: "desert", device: "workers/alice", type: "enter",
            time: 1_796_040_000)))
    }

    @Test func arcadeMessagesSeeFenceFeedAndNotificationType() throws {
        let script = """
            var verb = Decode($fencenotificationtype, 'entered', 'Entered', 'exited', 'Left', 'Dwelled in');
            return {message: verb + ' ' + $fencefeature.name + ' (' + $feedfeature.device + ')',
                    actions: ['notify'], zone: $fencefeature.zone, fence: $fencefeature.id}
            """
        var m = DeviceMonitor(device: "workers/alice", snapshot: try Self.snapshot(script), now: 0)
        let events = EngineScenarioTests.run(&m, [Kit.update(east: -10, time: 0), Kit.update(east: 10, time: 9)])
        #expect(events.map { $0.message?.message } == ["Entered Desert Section (workers/alice)", "Left Desert Section (workers/alice)"])
        let first = try #require(events.first?.message)
        #expect(first.actions == [.string("notify")])
        #expect(first.properties == ["zone": .string("arid"), "fence": .string("desert")])
        let json = try #require(events.first?.eventJSON(gateway: "g", emitted: 0).objectValue)
        #expect(json["actions"] == .array([.string("notify")]))
        #expect(json["properties"] == .object(["zone": .string("arid"), "fence": .string("desert")]))
        // The ArcGIS documentation's example.
        var docs = DeviceMonitor(device: "d", snapshot: try Self.snapshot("'You have entered ' + $fencefeature.name"), now: 0)
        #expect(docs.handle(Kit.update("d", east: -10, time: 0), receivedAt: 0).notifications.first?.message?.message
                == "You have entered Desert Section")
    }

    /// `overspeed` and `speedOk` (`speedLimit`): the trigger's event with the fence and the visit,
    /// `notification` = the type, `speed` and `speedLimit` in m/s (0.01), no `reason` or
    /// `dwellSeconds`.
    @Test func overspeedEventHasSpeedAndLimit() throws {
        let layer = FenceLayer(name: "garden-sections", file: "fences/garden-sections.geojson", fences: [Self.desert])
        let snapshot = try EngineSnapshot(layers: [layer], configTriggers: .array([.object([
            "name": .string("garden-sections"), "speedLimit": .number(2.5)])]))
        var m = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        var events: [FenceNotification] = []
        for second in 0...12 {
            var u = Kit.update(east: -90 + 3 * Double(second), time: 1_796_040_000 + Double(second), accuracy: 2)
            u.speed = 3.14159
            events += m.handle(u, receivedAt: Double(second)).notifications
        }
        #expect(events.map(\.type) == [.enter, .overspeed])
        let json = try #require(events.last?.eventJSON(gateway: "gw-1", emitted: 1_796_040_010.5).objectValue)
        #expect(json.keys == [
            "id", "visit", "gateway", "trigger", "device", "type", "notification", "fence", "position", "distance",
            "speed", "speedLimit", "actions", "properties", "emitted",
        ])
        #expect(json["type"] == .string("overspeed") && json["notification"] == .string("overspeed"))
        #expect(json["speed"] == .number(3.14) && json["speedLimit"] == .number(2.5))
        #expect(json["visit"] == .string(events[0].id))
        #expect(json["fence"]?.objectValue?["id"] == .string("desert"))
        #expect(json["position"]?.objectValue?["time"] == .string("2026-11-30T12:00:10Z"))
        #expect(NotificationType.speedOk.notificationName == "speedOk" && !NotificationType.overspeed.isCrossing)
    }

    @Test func aFailingMessageLeavesTheEventWithoutMessage() throws {
        var m = DeviceMonitor(device: "d", snapshot: try Self.snapshot("[1, 2][$fencefeature.zone]"), now: 0)
        let enter = try #require(m.handle(Kit.update("d", east: -10, time: 0), receivedAt: 0).notifications.first)
        #expect(enter.message == nil && enter.messageError != nil)
        #expect(enter.eventJSON(gateway: "g", emitted: 0).objectValue?["message"] == nil)
    }

    @Test func deviceStatePayload() throws {
        var m = DeviceMonitor(device: "workers/alice", snapshot: try Self.snapshot(nil), now: 0)
        #expect(m.stateJSON(updated: 0).serialized() == #"{"device":"workers/alice","position":null,"inside":[],"updated":"1970-01-01T00:00:00.000Z"}"#)
        let u = Kit.update(east: -10, time: 1_796_040_000, accuracy: 3)
        _ = m.handle(u, receivedAt: 0)
        let visit = EventID.make(trigger: "garden-sections", layer: "garden-sections", fence: "desert", device: "workers/alice", type: "enter", time: 1_796_040_000)
        #expect(m.stateJSON(updated: 1_796_040_000.25).serialized() == """
            {"device":"workers/alice","position":{"lat":\(u.lat),"lon":\(u.lon),"accuracy":3,"time":"2026-11-30T12:00:00Z"},\
            "inside":[{"trigger":"garden-sections","layer":"garden-sections","fence":"desert","name":"Desert Section",\
            "since":"2026-11-30T12:00:00Z","visit":"\(visit)"}],"updated":"2026-11-30T12:00:00.250Z"}
            """)
    }

    @Test func timestamps() {
        #expect(ISO8601Time.format(0) == "1970-01-01T00:00:00Z")
        #expect(ISO8601Time.format(951_782_400) == "2000-02-29T00:00:00Z")
        #expect(ISO8601Time.format(1_796_040_000.12, milliseconds: true) == "2026-11-30T12:00:00.120Z")
        #expect(ISO8601Time.format(-1) == "1969-12-31T23:59:59Z")
        #expect(ISO8601Time.format(4_102_444_799.999) == "2099-12-31T23:59:59.999Z")
    }
    /// A fence's name and properties are copied into events only up to 4 KiB each (a
    /// 600,000-character name made every event about the fence larger than a broker takes):
    /// cut on a character's boundary, properties cut after the last entry that fits, and the
    /// fence object says `"truncated": true`.
    @Test func longFenceNamesAndPropertiesAreCutInEvents() throws {
        let name = String(repeating: "é", count: 300_000)  // 600,000 bytes
        let fence = Kit.box("long", layer: "garden-sections", name: name, west: -100, east: 0, south: -50, north: 50,
                            properties: ["zone": .string("arid"), "note": .string(String(repeating: "x", count: 5_000))])
        #expect(fence.truncated)
        #expect(fence.name?.utf8.count == 4096)
        #expect(fence.name?.allSatisfy { $0 == "é" } == true)
        #expect(fence.properties.keys == ["zone"])
        let layer = FenceLayer(name: "garden-sections", file: "fences/garden-sections.geojson", fences: [fence])
        let snapshot = try EngineSnapshot(layers: [layer], configTriggers: .array([.object([
            "name": .string("garden-sections"), "fences": .array([.string("garden-sections")]),
            "message": .string("'Entered ' + $fencefeature.name")])]))
        var m = DeviceMonitor(device: "workers/alice", snapshot: snapshot, now: 0)
        let enter = try #require(m.handle(Kit.update(east: -3.2, time: 1_796_040_000), receivedAt: 0).notifications.first)
        let event = try #require(enter.eventJSON(gateway: "gw-1", emitted: 1_796_040_000).objectValue)
        let object = try #require(event["fence"]?.objectValue)
        #expect(object["truncated"] == .bool(true))
        #expect(object["properties"] == .object(["zone": .string("arid")]))
        let size = enter.eventJSON(gateway: "gw-1", emitted: 1_796_040_000).serializedBytes().count
        #expect(size < 3 * 4096 + 1024, "event of \(size) bytes")
        // A short name and small properties are kept as they are, without the flag.
        let exit = try #require(m.handle(Kit.update(east: 7, time: 1_796_040_100), receivedAt: 1).notifications.first)
        #expect(exit.fenceTruncated)
        let desertEnter = try #require(DeviceMonitor(device: "d", snapshot: try Self.snapshot(nil), now: 0)
            .handleOnce(Kit.update(east: -3.2, time: 1_796_040_000)))
        #expect(desertEnter.eventJSON(gateway: "gw-1", emitted: 0).objectValue?["fence"]?.objectValue?["truncated"] == nil)
    }
}

extension DeviceMonitor {
    /// The first notification of one update to a copy of this monitor.
    fileprivate func handleOnce(_ update: LocationUpdate) -> FenceNotification? {
        var copy = self
        return copy.handle(update, receivedAt: 0).notifications.first
    }
}
