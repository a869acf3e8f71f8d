import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/phones.md on a real broker: two OwnTracks phones walk the garden; the gateway gives
    /// each its three nearest points of interest as regions (`setWaypoints` on
    /// `owntracks/USER/DEVICE/cmd`), again when they walk on, not when they jitter, and at once
    /// when a runtime fence near one of them is removed; the phones' transitions, published here
    /// as phones publish them (iOS with `rid`, Android with `wtst` only), are counted as agreeing
    /// or disagreeing with the gateway's own decisions.
    @Suite struct PhoneRegions {
        /// Garden POIs (buffer 10 m). Nearest, by geodesic distance minus the buffer:
        /// entrance: entrance -10, [parcel 20,] library 92.8, redwood-bridge 224.8 (222.0 3 m east), meadow-overlook 237.8;
        /// island-ironwood: itself -10, manzanita-bench 119.5, tea-house 200.4, cactus-bed 275.8;
        /// oak-picnic: itself -10, conservation-center 131.6, manzanita-bench 191.8, mission-dam 205.3;
        /// mission-dam: itself -10, redwood-bridge 54.7, conservation-center 104.0, tea-house 170.6.
        static let entrance = (lat: 34.4548652, lon: -119.7102201)
        static let island = (lat: 34.4570943, lon: -119.7041269)
        static let oakPicnic = (lat: 34.4543962, lon: -119.7051911)
        static let missionDam = (lat: 34.4552898, lon: -119.7072737)
        static let perMetreLat = 1 / 111_195.0, perMetreLon = 1 / 91_700.0

        /// The `setWaypoints` commands `device`'s phone received: per command, the regions (rid,
        /// rad, tst) in order, removals (latitude out of range) apart.
        struct Command {
            var regions: [(rid: String, rad: Double, tst: Double)]
            var removed: [String]
            var rids: [String] { regions.map(\.rid) }
        }

        static func commands(_ probe: MQTTProbe, _ device: String) -> [Command] {
            probe.received(on: "owntracks/\(device)/cmd").compactMap(json).map { command in
                var result = Command(regions: [], removed: [])
                let list = command["waypoints"]?.objectValue?["waypoints"]?.arrayValue ?? []
                for case .object(let w) in list {
                    let rid = w["rid"]?.stringValue ?? "?"
                    if let lat = w["lat"]?.numberValue, lat < -90 {
                        result.removed.append(rid)
                    } else {
                        result.regions.append((rid, w["rad"]?.numberValue ?? -1, w["tst"]?.numberValue ?? -1))
                    }
                }
                return result
            }
        }

        @Test func phonesGetTheirNearestFencesAndTheirTransitionsAreJudged() async throws {
            let h = try ServeHarness("phones")
            defer { h.close() }
            let config = try h.write(
                "gw.json5",
                h.config(
                    output: "owntracks: true",
                    extra: """
                        feeds: [{ name: "phones", topic: "owntracks/+/+", format: "owntracks" }],
                        triggers: [{ name: "nearby", fences: ["garden-poi", "drops"], phones: { regions: 3 } }],
                        """))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "owntracks/+/+/cmd", "\(h.prefix)/replies/#"])
            let phone = try await h.probe("phone")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            // A parcel drop 30 m north of the entrance, a runtime fence, applied before anyone walks.
            let parcelLat = Self.entrance.lat + 30 * Self.perMetreLat
            try phone.client.publish(
                topic: "\(h.prefix)/fences/drops/parcel",
                payload: #"{"type":"Feature","properties":{"name":"Parcel","buffer":10},"geometry":{"type":"Point","coordinates":[\#(Self.entrance.lon),\#(parcelLat)]}}"#,
                qos: .atLeastOnce, retain: true)
            /// Whether the `fences` query of layer `drops` lists `count` fences (polled: a runtime
            /// change is applied within 250 ms).
            func dropsHold(_ count: Int) async -> Bool {
                await poll {
                    let replyTo = "\(h.prefix)/replies/drops/\(UUID().uuidString)"
                    _ = try? phone.client.publish(
                        topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"fences":"drops","replyTo":"\#(replyTo)"}"#, qos: .atLeastOnce)
                    return await poll(timeout: .seconds(2)) {
                        watcher.received(on: replyTo).compactMap(json).contains { $0["fences"]?.arrayValue?.count == count }
                    }
                }
            }
            let applied = await dropsHold(1)
            #expect(applied, "the parcel fence was not applied:\n\(tail(gateway.log))")

            let t0 = fixTimeBase(secondsAgo: 600)
            func at(_ device: String, _ p: (lat: Double, lon: Double), east: Double = 0, north: Double = 0, _ time: Double) throws {
                try phone.client.publish(
                    topic: "owntracks/\(device)",
                    payload: Payload.owntracks(lat: p.lat + north * Self.perMetreLat, lon: p.lon + east * Self.perMetreLon, tst: time, acc: 5),
                    qos: .atLeastOnce)
            }
            func said(_ device: String, _ fields: String) throws {
                try phone.client.publish(topic: "owntracks/\(device)/event", payload: #"{"_type":"transition",\#(fields)}"#, qos: .atLeastOnce)
            }

            // alice (an iPhone: its transitions name the region by rid) starts at the entrance.
            try at("alice/phone", Self.entrance, t0)
            #expect(await poll { Self.commands(watcher, "alice/phone").count == 1 }, "\(tail(gateway.log))")
            let first = try #require(Self.commands(watcher, "alice/phone").first)
            #expect(first.rids == ["drops/parcel", "garden-poi/entrance", "garden-poi/library"] && first.removed.isEmpty)
            #expect(first.regions.allSatisfy { $0.rad > 10 && $0.rad <= 13 }, "radii: \(first.regions.map(\.rad))")
            #expect(Set(first.regions.map(\.tst)) == [1_000_000, 1_000_001, 1_000_002])
            // bob (an Android phone: rid-less transitions) at the picnic tables.
            try at("bob/phone", Self.oakPicnic, t0)
            #expect(await poll { Self.commands(watcher, "bob/phone").count == 1 })
            let bobFirst = try #require(Self.commands(watcher, "bob/phone").first)
            #expect(bobFirst.rids == ["garden-poi/conservation-center", "garden-poi/manzanita-bench", "garden-poi/oak-picnic"])
            let oakSlot = try #require(bobFirst.regions.first { $0.rid == "garden-poi/oak-picnic" }?.tst)

            // Transitions as the phones send them: alice agrees on the entrance, claims to have left
            // the library (never entered: disagrees), and has a region of her own ("home");
            // bob's Android phone names the picnic tables only by their slot (wtst).
            try said("alice/phone", #""event":"enter","rid":"garden-poi/entrance","wtst":\#(Int(first.regions[1].tst)),"tst":\#(Int(t0 + 2)),"acc":5,"t":"c","desc":"Entrance Gate","lat":34.45487,"lon":-119.71022"#)
            try said("alice/phone", #""event":"leave","rid":"garden-poi/library","wtst":1000002,"tst":\#(Int(t0 + 10)),"acc":5,"t":"c""#)
            try said("alice/phone", #""event":"enter","rid":"home","wtst":1610104395,"tst":\#(Int(t0 + 11)),"acc":5,"t":"c","desc":"Home""#)
            // carol's phone never reported a position: nothing to judge against.
            try said("carol/phone", #""event":"enter","rid":"garden-poi/entrance","wtst":1000000,"tst":\#(Int(t0 + 3)),"acc":5"#)
            try said("bob/phone", #""event":"enter","wtst":\#(Int(oakSlot)),"tst":\#(Int(t0 + 1)),"acc":3,"t":"c","desc":"Oak Grove Picnic Tables""#)

            // A phone is pushed at most once a minute of the gateway's clock, whatever its fix
            // times: the pushes below wait for the minute that began with alice's and bob's first.
            try await Task.sleep(for: .seconds(61))
            // The parcel is picked up: alice's next fix, though only jitter, gets a set without it.
            try phone.client.publish(topic: "\(h.prefix)/fences/drops/parcel", payload: [UInt8](), qos: .atLeastOnce, retain: true)
            let emptied = await dropsHold(0)
            #expect(emptied)
            try at("alice/phone", Self.entrance, east: 3, t0 + 75)
            try at("bob/phone", Self.oakPicnic, north: 4, t0 + 70)  // jitter: nothing
            try at("alice/phone", Self.entrance, east: 3, north: 6, t0 + 140)  // jitter: nothing
            // bob's phone leaves the picnic tables just before its fix at the dam.
            try said("bob/phone", #""event":"leave","wtst":\#(Int(oakSlot)),"tst":\#(Int(t0 + 128)),"acc":3,"t":"c","desc":"Oak Grove Picnic Tables""#)
            try at("bob/phone", Self.missionDam, t0 + 130)
            // alice walks to the island within a minute of the gateway's clock after her second
            // push: no third one (her next fix after that minute would have it).
            try at("alice/phone", Self.island, t0 + 210)
            #expect(await poll { Self.commands(watcher, "alice/phone").count >= 2 && Self.commands(watcher, "bob/phone").count >= 2 },
                    "\(Self.commands(watcher, "alice/phone").map(\.rids)) \(Self.commands(watcher, "bob/phone").map(\.rids))\n\(tail(gateway.log))")

            let alice = Self.commands(watcher, "alice/phone")
            #expect(alice.map(\.rids) == [
                ["drops/parcel", "garden-poi/entrance", "garden-poi/library"],
                ["garden-poi/entrance", "garden-poi/library", "garden-poi/redwood-bridge"],
            ])
            #expect(alice.map(\.removed) == [[], ["drops/parcel"]])
            // The redwood bridge took the parcel's slot.
            #expect(alice[1].regions.first { $0.rid == "garden-poi/redwood-bridge" }?.tst == first.regions[0].tst)
            let bob = Self.commands(watcher, "bob/phone")
            #expect(bob.map(\.rids) == [
                ["garden-poi/conservation-center", "garden-poi/manzanita-bench", "garden-poi/oak-picnic"],
                ["garden-poi/conservation-center", "garden-poi/mission-dam", "garden-poi/redwood-bridge"],
            ])
            #expect(bob.map(\.removed) == [[], ["garden-poi/manzanita-bench", "garden-poi/oak-picnic"]])
            // Each push is QoS 1 and not retained: a late subscriber gets nothing.
            let late = try await h.probe("late", subscribe: ["owntracks/+/+/cmd"], cleanStart: true)
            try await Task.sleep(for: .milliseconds(500))
            #expect(late.messages.all.isEmpty)

            // The verdicts: alice's entrance and bob's two agree; alice's library claim disagrees
            // (judged once her fixes passed its minute); "home" is no region of the gateway's, and
            // carol's is no device it knows.
            // The gateway's own transitions (output.owntracks) came back and were not judged.
            let counted = await watcher.waitStatus(h.statusTopic) { status in
                let phones = status.counters?["phones"]?.objectValue
                let nearby = phones?["triggers"]?.objectValue?["nearby"]?.objectValue
                return nearby?["agree"]?.numberValue == 3 && nearby?["disagree"]?.numberValue == 1
                    && phones?["unknownRegion"]?.numberValue == 1 && phones?["unknownDevice"]?.numberValue == 1
                    && nearby?["pushes"]?.numberValue == 4
            }
            #expect(counted.ok, "\(counted.status?.description ?? "no status")\n\(tail(gateway.log))")
            #expect((counted.status?.dropped("ownEcho") ?? 0) >= 2, "the gateway's own transitions come back as ownEcho")
            #expect(counted.status?.warnings.contains { $0.contains("did not give it") } == true)
        }
    
        /// A SIGHUP that leaves no trigger with `phones` stops reading the phones' transitions:
        /// one published after it never reaches the gateway (it used to arrive, counted as
        /// received, and be dropped as a feed message), while the phones' positions still do.
        @Test func aReloadWithoutPhonesStopsReadingTheirTransitions() async throws {
            let h = try ServeHarness("phones-off")
            defer { h.close() }
            func config(phones: Bool) -> String {
                h.config(extra: """
                    feeds: [{ name: "phones", topic: "owntracks/+/+", format: "owntracks" }],
                    triggers: [{ name: "nearby", fences: ["garden-poi"]\(phones ? ", phones: { regions: 3 }" : "") }],
                    """)
            }
            let path = try h.write("gw.json5", config(phones: true))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let phone = try await h.probe("phone")
            let gateway = try h.startGateway(config: path)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase(secondsAgo: 600)
            func said() throws {
                try phone.client.publish(
                    topic: "owntracks/carol/phone/event",
                    payload: #"{"_type":"transition","event":"enter","desc":"Entrance","rid":"garden-poi/entrance","tst":\#(Int(t0)),"lat":34.4548,"lon":-119.7102,"acc":5,"t":"c"}"#,
                    qos: .atLeastOnce)
            }
            try said()
            let judged = await watcher.waitStatus(h.statusTopic) { $0.counters?["phones"]?.objectValue?["unknownDevice"]?.numberValue == 1 }
            #expect(judged.ok, "\(judged.status?.description ?? "no status")\n\(tail(gateway.log))")
            let receivedBefore = judged.status?.counter("received") ?? -1

            _ = try h.write("gw.json5", config(phones: false))
            gateway.signal(SIGHUP)
            #expect(await poll(timeout: .seconds(30)) { gateway.log.contains("reloaded") }, "\(tail(gateway.log))")
            try said()
            try phone.client.publish(
                topic: "owntracks/carol/phone", payload: Payload.owntracks(lat: Self.entrance.lat, lon: Self.entrance.lon, tst: t0 + 10, acc: 5),
                qos: .atLeastOnce)
            let after = await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == 1 }
            #expect(after.ok, "\(after.status?.description ?? "no status")\n\(tail(gateway.log))")
            #expect(after.status?.counter("received") == receivedBefore + 1, "\(after.status?.description ?? "no status")")
        }

        /// Under the shipped broker config only the gateway writes a phone's `cmd` topic: alice's
        /// phone reads its own regions and cannot forge a command (not even its own), bob cannot
        /// read alice's, and alice's transitions reach the gateway.
        @Test func theShippedACLLetsOnlyTheGatewayCommandAPhone() async throws {
            typealias Shipped = ServeTests.ShippedBroker
            let h = try ServeHarness("phones-acl", broker: try Shipped.options())
            defer { h.close() }
            let statusTopic = GatewayStatus.topic(prefix: "geotriggers", gatewayID: h.gatewayID)
            try h.write("password", "gw-secret\n")
            let config = try h.write("gw.json5", h.config(
                prefix: "geotriggers",
                broker: "clientId: \"\(Shipped.gatewayUser)\", username: \"\(Shipped.gatewayUser)\", passwordFile: \"password\"",
                extra: """
                    feeds: [{ name: "phones", topic: "owntracks/+/+", format: "owntracks" }],
                    triggers: [{ name: "nearby", fences: ["garden-poi"], phones: { regions: 2 } }],
                    """))
            let watcher = try await h.probe("watcher", subscribe: [statusTopic], configure: Shipped.credentials("dispatch"))
            let alice = try await h.probe("alice", subscribe: ["owntracks/alice/phone/cmd"], cleanStart: true, configure: Shipped.credentials("alice"))
            // Bob's subscriptions to alice's commands are refused by the broker (SUBACK 0x87).
            let bob = try await h.probe("bob", cleanStart: true, configure: Shipped.credentials("bob"))
            for filter in ["owntracks/alice/phone/cmd", "owntracks/+/+/cmd"] { try bob.client.subscribe(filter, qos: .atLeastOnce) }
            let refused = await poll {
                bob.events.all.flatMap { event -> [Int32] in if case .subscribed(_, let codes) = event { codes } else { [] } }
                    .filter { $0 >= 0x80 }.count == 2
            }
            #expect(refused, "bob's subscriptions to alice's commands must be refused: \(describe(bob))")
            let gateway = try h.startGateway(config: config)
            let started = await watcher.waitStatus(statusTopic) { $0.status == "started" }
            #expect(started.ok, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            #expect(started.status?.warnings.isEmpty == true, "the gateway may read the transitions: \(started.status?.description ?? "")")

            // Forged commands: alice on her own cmd topic, bob on alice's. The broker drops both.
            let forged = #"{"_type":"cmd","action":"clearWaypoints"}"#
            try alice.client.publish(topic: "owntracks/alice/phone/cmd", payload: forged, qos: .atLeastOnce)
            try bob.client.publish(topic: "owntracks/alice/phone/cmd", payload: forged, qos: .atLeastOnce)
            let t0 = fixTimeBase(secondsAgo: 600)
            try alice.client.publish(
                topic: "owntracks/alice/phone", payload: Payload.owntracks(lat: Self.entrance.lat, lon: Self.entrance.lon, tst: t0, acc: 5),
                qos: .atLeastOnce)
            #expect(await poll { !alice.received(on: "owntracks/alice/phone/cmd").isEmpty }, "\(tail(gateway.log))\n\(tail(h.brokerLog))")
            let received = alice.received(on: "owntracks/alice/phone/cmd").compactMap(json)
            #expect(received.count == 1 && received.first?["action"]?.stringValue == "setWaypoints", "\(received)")
            #expect(Self.commands(alice, "alice/phone").map(\.rids) == [["garden-poi/entrance", "garden-poi/library"]])
            // The phone's transition for the entrance reaches the gateway and agrees with it.
            try alice.client.publish(
                topic: "owntracks/alice/phone/event",
                payload: #"{"_type":"transition","event":"enter","rid":"garden-poi/entrance","wtst":1000000,"tst":\#(Int(t0 + 1)),"acc":5}"#,
                qos: .atLeastOnce)
            let counted = await watcher.waitStatus(statusTopic) {
                $0.counters?["phones"]?.objectValue?["triggers"]?.objectValue?["nearby"]?.objectValue?["agree"]?.numberValue == 1
            }
            #expect(counted.ok, "\(counted.status?.description ?? "")")
            try await Task.sleep(for: .milliseconds(300))
            #expect(bob.messages.all.isEmpty, "bob read alice's commands: \(bob.messages.all.map(\.topic))")
            #expect(gateway.terminate() == 0)
        }
    }
}
