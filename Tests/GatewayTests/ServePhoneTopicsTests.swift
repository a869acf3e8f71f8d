import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests.PhoneRegions {
    /// A config whose `owntracks` feed is `topic`, with the trigger "nearby" on the garden's
    /// points of interest, `phones` on or off.
    static func phonesConfig(_ h: ServeHarness, topic: String, phones: Bool, output: String = "") -> String {
        h.config(output: output, extra: """
            feeds: [{ name: "phones", topic: "\(topic)", format: "owntracks" }],
            triggers: [{ name: "nearby", fences: ["garden-poi"]\(phones ? ", phones: { regions: 3 }" : "") }],
            """)
    }

    /// docs/phones.md: with `phones` on, the gateway reads the phones' transitions on
    /// `FILTER/event`, which for `owntracks/#` is no topic filter (libmosquitto refuses it).
    /// `check` and a start refuse the config with a message naming the feed's topic and what
    /// is expected; without `phones` the same feed is fine. (It used to pass `check`, then
    /// fail at start with libmosquitto's "Invalid input".)
    @Test func checkAndStartRefuseAHashFeedWithPhones() async throws {
        let h = try ServeHarness("phones-hash")
        defer { h.close() }
        let refused = try h.write("phones.json5", Self.phonesConfig(h, topic: "owntracks/#", phones: true))
        let fine = try h.write("plain.json5", Self.phonesConfig(h, topic: "owntracks/#", phones: false))
        let expected = #"feeds[0].topic: "owntracks/#" cannot carry the phones of trigger "nearby": their transitions are read on "owntracks/#/event", which is no topic filter ('#' must be the last level); expected a filter of '+' levels, such as "owntracks/+/+""#

        let check = try runGeotrigger(["check", "--config", refused])
        print("geotrigger check with owntracks/# and phones: exit \(check.status)\n\(check.err)")
        #expect(check.status == 2, "check must refuse it: \(check.out)\(check.err)")
        // FILE:LINE:COLUMN of the feed's topic (line 6 of the harness's config).
        #expect(check.err.contains("\(refused):6:"), "\(check.err)")
        #expect(check.err.contains(expected), "\(check.err)")
        #expect(try runGeotrigger(["check", "--config", fine]).status == 0)

        let gateway = try h.startGateway(config: refused)
        let status = gateway.waitForExit(timeout: 60)
        print("geotrigger serve with owntracks/# and phones: exit \(status.map(String.init) ?? "none")\n\(tail(gateway.log))")
        #expect(status == 2, "\(tail(gateway.log))")
        #expect(gateway.log.contains(expected), "\(tail(gateway.log))")
    }

    /// A SIGHUP that turns `phones` on for an `owntracks/#` feed is refused as a whole: the
    /// status says why, and the previous triggers stay (no phone gets regions). It used to
    /// apply the new triggers and then fail to subscribe: half applied, phones pushed to.
    @Test func aReloadThatCannotReadThePhonesChangesNothing() async throws {
        let h = try ServeHarness("phones-hash-reload")
        defer { h.close() }
        let path = try h.write("gw.json5", Self.phonesConfig(h, topic: "owntracks/#", phones: false))
        let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "owntracks/+/+/cmd"])
        let phone = try await h.probe("phone")
        let gateway = try h.startGateway(config: path)
        #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

        _ = try h.write("gw.json5", Self.phonesConfig(h, topic: "owntracks/#", phones: true))
        gateway.signal(SIGHUP)
        let warned = await watcher.waitStatus(h.statusTopic) { status in
            status.warnings.contains { $0.contains("reload failed") && $0.contains("owntracks/#/event") }
        }
        #expect(warned.ok, "\(warned.status?.description ?? "no status")\n\(tail(gateway.log))")
        print("after the refused reload: \(warned.status?.warnings ?? [])")

        // A phone walks to the entrance: with phones on it would get its regions at once.
        let t0 = fixTimeBase(secondsAgo: 600)
        for (n, lat) in [Self.entrance.lat - 300 * Self.perMetreLat, Self.entrance.lat].enumerated() {
            try phone.client.publish(topic: "owntracks/alice/phone", payload: Payload.owntracks(lat: lat, lon: Self.entrance.lon, tst: t0 + Double(n) * 30, acc: 5),
                                     qos: .atLeastOnce)
        }
        let handled = await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == 2 }
        #expect(handled.ok, "\(handled.status?.description ?? "no status")\n\(tail(gateway.log))")
        let phones = handled.status?.counters?["phones"]?.objectValue
        let pushes = phones?["triggers"]?.objectValue?["nearby"]?.objectValue?["pushes"]?.numberValue ?? 0
        #expect(pushes == 0, "the refused reload turned phones on: \(phones.map { "\($0)" } ?? "")")
        #expect(watcher.received(on: "owntracks/alice/phone/cmd").isEmpty, "the phone got regions from a refused reload")
        #expect(gateway.isRunning)
    }

    /// A phone gets its regions on the `cmd` topic beside its own topic in the feed's tree
    /// (`tracks/alice/phone/cmd` for the feed `tracks/+/+`), never on
    /// `owntracks/alice/phone/cmd`, which that phone does not read (where they always went).
    @Test func phonesGetCommandsInTheirFeedsOwnTree() async throws {
        let h = try ServeHarness("phones-tree")
        defer { h.close() }
        let path = try h.write("gw.json5", Self.phonesConfig(h, topic: "tracks/+/+", phones: true))
        let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "tracks/+/+/cmd", "owntracks/+/+/cmd"])
        let phone = try await h.probe("phone")
        let gateway = try h.startGateway(config: path)
        #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

        let t0 = fixTimeBase(secondsAgo: 600)
        for (n, lat) in [Self.entrance.lat - 300 * Self.perMetreLat, Self.entrance.lat].enumerated() {
            try phone.client.publish(topic: "tracks/alice/phone", payload: Payload.owntracks(lat: lat, lon: Self.entrance.lon, tst: t0 + Double(n) * 30, acc: 5),
                                     qos: .atLeastOnce)
        }
        // Both updates handled: the first one's command is in the outbox by then.
        let handled = await watcher.waitStatus(h.statusTopic) { $0.counter("accepted") == 2 }
        #expect(handled.ok, "\(handled.status?.description ?? "no status")\n\(tail(gateway.log))")
        let commanded = await poll(timeout: .seconds(60)) { !watcher.received(on: "tracks/alice/phone/cmd").isEmpty }
        let elsewhere = watcher.messages.all.filter { $0.topic.hasPrefix("owntracks/") }.map(\.topic)
        print("feed tracks/+/+: commands on tracks/alice/phone/cmd \(watcher.received(on: "tracks/alice/phone/cmd").count), "
              + "under owntracks/: \(elsewhere)")
        #expect(commanded, "no setWaypoints on tracks/alice/phone/cmd; under owntracks/: \(elsewhere)\n\(tail(gateway.log))")
        #expect(watcher.received(on: "tracks/alice/phone/cmd").first.flatMap(json)?["action"]?.stringValue == "setWaypoints")
        #expect(elsewhere.isEmpty, "the gateway sent the phone's command outside its feed's tree: \(elsewhere)")
    }
}
