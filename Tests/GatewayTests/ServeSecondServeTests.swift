import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// A second `geotrigger serve` on the database of one that runs (docs/limits.md): it is
    /// refused before it says anything on the broker, naming the first one's PID, and the first
    /// one keeps its session, its status and its outbox.
    @Suite struct SecondServe {
        /// The places of ``Lifecycle``'s walker.
        static let (outside, meadow, desert) = (Lifecycle.outside, Lifecycle.meadow, Lifecycle.desert)

        @Test func aSecondServeOnTheSameDatabaseIsRefusedAndTouchesNothing() async throws {
            let h = try ServeHarness("second-serve")
            defer { h.close() }
            let configPath = try h.write("gw.json5", BrokerOutage.config(h))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let first = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(first.log))")
            let topic = "\(h.prefix)-in/devices/walker/location"
            let t0 = fixTimeBase()
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.outside.lat, lon: Self.outside.lon, time: t0))
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.meadow.lat, lon: Self.meadow.lon, time: t0 + 10))
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count == 1 }, "\(tail(first.log))")
            let statusMark = watcher.received(on: h.statusTopic).count
            let clientID = "geotrigger-\(h.gatewayID)"
            let connectsBefore = h.brokerLog.components(separatedBy: "as \(clientID) (").count

            // The same config, so the same database and the same client id.
            let second = try h.startGateway(config: configPath, log: "gateway-2.log")
            let exit = second.waitForExit(timeout: 60)
            print("second serve on the same database: exit \(exit.map(String.init) ?? "still running"), log:\n\(tail(second.log, lines: 5))")
            #expect(exit == 1, "\(tail(second.log))")
            #expect(second.log.contains("is in use by another geotrigger serve (PID \(first.pid) holds the lock on "), "\(tail(second.log))")
            #expect(second.log.contains("expected one gateway per database"), "\(tail(second.log))")
            #expect(!second.log.contains("published starting") && !second.log.contains("failedToStart"), "\(tail(second.log))")

            // The first one goes on: a few more periodic statuses, all `started`; its client was
            // never replaced (the broker logs a takeover as "already connected"); it still
            // handles updates and delivers their events.
            #expect(await poll(timeout: .seconds(30)) { watcher.received(on: h.statusTopic).count >= statusMark + 3 })
            let after = Array(StartingStatus.sequence(watcher, h.statusTopic).dropFirst(statusMark))
            #expect(after.allSatisfy { $0 == "started" }, "\(after)")
            #expect(!h.brokerLog.contains("already connected"), "\(tail(h.brokerLog))")
            #expect(h.brokerLog.components(separatedBy: "as \(clientID) (").count == connectsBefore, "\(tail(h.brokerLog))")
            try publisher.client.publish(topic: topic, payload: Payload.json(lat: Self.desert.lat, lon: Self.desert.lon, time: t0 + 30))
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count == 3 }, "\(tail(first.log))")
            #expect(first.isRunning)
            let lockFile = h.directory.file("gateway.db.lock")
            #expect((try? String(contentsOfFile: lockFile, encoding: .utf8)) == "\(first.pid)\n")

            // A gateway killed with -9 leaves its lock file but not its lock: the next start runs.
            first.kill()
            let third = try h.startGateway(config: configPath, log: "gateway-3.log")
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" && $0.counter("accepted") == 0 }.ok, "\(tail(third.log))")
            #expect((try? String(contentsOfFile: lockFile, encoding: .utf8)) == "\(third.pid)\n")
            #expect(third.terminate() == 0)
        }
    }
}
