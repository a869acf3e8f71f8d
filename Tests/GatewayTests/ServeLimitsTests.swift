import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// DESIGN.md "Limits": what one client can make the gateway hold is bounded.
    @Suite struct Limits {
        /// `input.maxDevices: 3`: five devices report twice each; the first three are tracked,
        /// the other two's four updates are dropped as `tooManyDevices`, with a warning.
        @Test func devicesPastMaxDevicesAreDroppedAndWarned() async throws {
            let h = try ServeHarness("max-devices")
            defer { h.close() }
            let configPath = try h.write("gw.json5", h.config(extra: "input: { maxDevices: 3 },"))
            let watcher = try await h.probe("watcher", subscribe: [h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            let t0 = fixTimeBase()
            for round in 0..<2 {
                for n in 0..<5 {
                    try publisher.client.publish(topic: "devices/limit\(n)/location",
                                                 payload: Payload.json(lat: 34.45, lon: -119.71, time: t0 + Double(round)), qos: .atLeastOnce)
                    // The first three devices exist before the others arrive.
                    if round == 0, n == 2 {
                        #expect(await watcher.waitStatus(h.statusTopic) { $0.counter("devices") == 3 }.ok)
                    }
                }
            }
            let status = await watcher.waitStatus(h.statusTopic) { $0.dropped("tooManyDevices") == 4 && $0.counter("accepted") == 6 }
            #expect(status.ok, "\(status.status.map { "\($0.object)" } ?? "no status")")
            #expect(status.status?.counter("devices") == 3)
            #expect(status.status?.warnings.contains { $0.contains("input.maxDevices") } == true)
            print("max devices: devices \(status.status?.counter("devices") ?? -1), tooManyDevices \(status.status?.dropped("tooManyDevices") ?? -1)")
        }
    }
}
