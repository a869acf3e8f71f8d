import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// What one client can make the gateway keep per device is bounded: OwnTracks `tid` is cut
    /// to 8 bytes, and one broker user's device ids count against `input.maxDevicesPerUser`.
    @Suite struct DeviceBudgets {
        static let outside = (lat: 34.4570, lon: -119.7125)
        static let meadow = (lat: 34.4573, lon: -119.7102)

        /// 3,000 phones each send a 60,000-byte `tid` (under `input.maxPayload`): the gateway
        /// keeps 8 bytes of each (it grew by about 176 MB when it kept them whole), and a
        /// transition carries the cut `tid`.
        @Test(.timeLimit(.minutes(4))) func longTrackerIDsAreCutAndMemoryStaysBounded() async throws {
            let h = try ServeHarness("tid")
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(output: "owntracks: true", extra: """
                feeds: [ { name: "phones", topic: "\(h.prefix)-ot/+/+", format: "owntracks" } ],
                triggers: [ { name: "sections", fences: ["garden-sections"] } ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, "owntracks/+/+/event"])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let idle = HostileInput.memory(pid: gateway.pid)

            let devices = 3_000
            let tid = String(repeating: "T", count: 60_000)
            let t0 = fixTimeBase()
            for i in 0..<devices {
                let payload = Payload.owntracks(lat: Self.outside.lat, lon: Self.outside.lon, tst: t0 + Double(i % 100), tid: tid)
                while (try? publisher.client.publish(topic: "\(h.prefix)-ot/u\(i)/phone", payload: payload, qos: .atLeastOnce)) == nil {
                    try await Task.sleep(for: .milliseconds(5))
                }
                if i % 200 == 199 { _ = await watcher.waitStatus(h.statusTopic, timeout: .seconds(60), where: { $0.counter("accepted") >= i - 400 }) }
            }
            let all = await watcher.waitStatus(h.statusTopic, timeout: .seconds(120), where: { $0.counter("accepted") >= devices })
            #expect(all.ok, "\(all.status?.description ?? "no status")")
            let after = HostileInput.memory(pid: gateway.pid)
            let grown = after.rss - idle.rss
            print("long tid: \(devices) devices with a 60,000-byte tid: RSS \(idle.rss) MiB idle -> \(after.rss) MiB (+\(String(format: "%.1f", grown)) MiB, \(String(format: "%.0f", grown * 1024 * 1024 / Double(devices))) bytes per device), peak \(after.peak) MiB")
            #expect(grown < 30, "the gateway grew by \(grown) MiB for \(devices) devices")

            // A transition of one of them carries the tid as kept.
            let topic = "\(h.prefix)-ot/u0/phone"
            try publisher.client.publish(topic: topic, payload: Payload.owntracks(lat: Self.meadow.lat, lon: Self.meadow.lon, tst: t0 + 200, tid: tid))
            #expect(await poll(timeout: .seconds(30)) { !watcher.received(on: "owntracks/u0/phone/event").isEmpty }, "\(tail(gateway.log))")
            let transition = try #require(watcher.received(on: "owntracks/u0/phone/event").first.flatMap(json))
            #expect(transition["tid"] == .string("TTTTTTTT"), "\(transition["tid"]?.stringValue?.prefix(20) ?? "none")")
            #expect(gateway.terminate() == 0)
        }

        /// One phone user mints 5,000 device ids on `owntracks/alice/ANYTHING` (the ACL allows
        /// it): past `input.maxDevicesPerUser` they are dropped as `tooManyDevices`, so another
        /// user's phone is still tracked although the minted ids would fill `input.maxDevices`.
        @Test(.timeLimit(.minutes(4))) func oneUserCannotTakeEveryDeviceSlot() async throws {
            let h = try ServeHarness("peruser", broker: .init(maxQueuedMessages: 100_000))
            defer { h.close() }
            let config = try h.write("gw.json5", h.config(extra: """
                input: { maxDevices: 1000, maxDevicesPerUser: 100 },
                feeds: [ { name: "phones", topic: "\(h.prefix)-ot/+/+", format: "owntracks" } ],
                triggers: [ { name: "sections", fences: ["garden-sections"] } ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic, h.eventsFilter()])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: config)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let minted = 5_000
            let t0 = fixTimeBase()
            let payload = Payload.owntracks(lat: Self.outside.lat, lon: Self.outside.lon, tst: t0)
            for i in 0..<minted {
                while (try? publisher.client.publish(topic: "\(h.prefix)-ot/alice/m\(i)", payload: payload, qos: .atLeastOnce)) == nil {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            let counted = await watcher.waitStatus(h.statusTopic, timeout: .seconds(120), where: { $0.counter("received") >= minted })
            #expect(counted.ok, "\(counted.status?.description ?? "no status")")

            let bob = "\(h.prefix)-ot/bob/phone"
            try publisher.client.publish(topic: bob, payload: Payload.owntracks(lat: Self.outside.lat, lon: Self.outside.lon, tst: t0))
            try publisher.client.publish(topic: bob, payload: Payload.owntracks(lat: Self.meadow.lat, lon: Self.meadow.lon, tst: t0 + 10))
            let entered = await poll(timeout: .seconds(30)) {
                receivedEvents(watcher, prefix: h.prefix).contains { $0.event["device"] == .string("bob/phone") }
            }
            let status = try #require(await watcher.waitStatus(h.statusTopic) { $0.counter("received") >= minted + 2 }.status)
            print("per user: \(minted) ids minted by alice -> devices \(status.counter("devices")), dropped.tooManyDevices \(status.dropped("tooManyDevices")); bob's phone \(entered ? "admitted (enter published)" : "dropped")")
            #expect(entered, "bob's phone was not tracked: \(status)")
            #expect(status.counter("devices") == 101, "\(status)")
            #expect(status.dropped("tooManyDevices") == minted - 100, "\(status)")
            #expect(status.warnings.contains { $0.contains("user alice") && $0.contains("input.maxDevicesPerUser") }, "\(status.warnings)")
            #expect(gateway.terminate() == 0)
        }
    }
}
