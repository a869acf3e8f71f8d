import Foundation
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/control-plane.md "Runtime fences": a runtime fence change is never dropped by
    /// a failed save. With the disk under the database full (a small file system of its own,
    /// filled once the gateway has started) a published fence goes live, the save fails with a
    /// status warning and is retried; once the disk has room again the warning clears, and a
    /// start with the broker down restores the fence from the database alone.
    @Suite struct RuntimeFenceSave {
        @Test(.timeLimit(.minutes(3))) func aFailedSaveIsRetriedUntilTheFenceIsInTheDatabase() async throws {
            let h = try ServeHarness("fence-save")
            defer { h.close() }
            let disk = try SmallFilesystem()
            defer { withExtendedLifetime(disk) {} }  // mounted until the end, restarts included
            let config = try h.write("gw.json5", h.config(database: disk.file("gateway.db")))
            let probe = try await h.probe("dispatch", subscribe: [h.statusTopic, "\(h.prefix)/replies/#"])
            let gateway = try h.startGateway(config: config)
            #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            try disk.fill()

            // A padded property makes the row larger than any free space left in the pages.
            let note = String(repeating: "n", count: 20_000)
            let feature = #"{"type":"Feature","properties":{"name":"Pad","note":"\#(note)","buffer":40},"geometry":{"type":"Point","coordinates":[-119.70,34.45]}}"#
            try probe.client.publish(topic: "\(h.prefix)/fences/jobs/pad", payload: feature, qos: .atLeastOnce, retain: true)
            let failing = await probe.waitStatus(h.statusTopic) { $0.warnings.contains { $0.hasPrefix("cannot save runtime fences") } }
            #expect(failing.ok, "\(failing.status?.warnings ?? [])\n\(tail(gateway.log))")
            // Live all the same.
            var queries = 0
            let live = await poll(timeout: .seconds(20)) {
                queries += 1
                let replyTo = "\(h.prefix)/replies/save/\(queries)"
                _ = try? probe.client.publish(topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"fences":"jobs","replyTo":"\#(replyTo)"}"#, qos: .atLeastOnce)
                return await poll(timeout: .seconds(2)) { probe.received(on: replyTo).contains { $0.payloadText.contains(#""id":"pad""#) } }
            }
            #expect(live, "\(tail(gateway.log))")

            // The disk has room again: the retry (once a second) saves it.
            disk.makeRoom()
            let saved = await probe.waitStatus(h.statusTopic) { !$0.warnings.contains { $0.hasPrefix("cannot save runtime fences") } }
            #expect(saved.ok, "\(saved.status?.warnings ?? [])\n\(tail(gateway.log))")
            #expect(gateway.terminate() == 0, "\(tail(gateway.log))")

            // Broker down: only the database can bring the fence back.
            h.broker.stop()
            let second = try h.startGateway(config: config, log: "gateway-2.log")
            #expect(await poll(timeout: .seconds(30)) { second.log.contains("runtime fences restored from the database") }, "\(second.log)")
            print("runtime fence save: failed while full (\(failing.status?.warnings.first { $0.hasPrefix("cannot save") }?.prefix(120) ?? "-")), "
                  + "saved after the fault; restart without a broker: \(second.log.split(separator: "\n").first { $0.contains("restored from the database") } ?? "-")")
            #expect(second.log.contains("runtime fences restored from the database fences=1"), "\(second.log)")
        }
    }
}
