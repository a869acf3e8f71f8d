import Foundation
import MQTT
import Testing
import TestSupport

extension NATSClusterTests {
    /// `deploy/nats/authorization.conf` on a real nats-server: a device publishes its own
    /// location (mapped to its shard) but not a runtime fence, a trip or an event; the gateway
    /// of that shard gets the location and the dispatcher's fence, expected arrival and trip;
    /// the dispatcher what its permissions allow.
    @Suite struct NATSAuthorization {
        @Test func deviceCannotPublishControlOrEventSubjects() async throws {
            let cluster = try NATSCluster(authorization: true)
            defer { cluster.stop() }
            try cluster.start()
            let port = cluster.nodes[0].mqttPort
            func probe(_ user: String, _ password: String) throws -> MQTTProbe {
                try MQTTProbe(port: port, clientId: "\(user)-\(getpid())", protocolVersion: .v311) {
                    $0.username = user
                    $0.password = password
                    $0.cleanStart = true
                }
            }
            // partition.conf's partition(3) puts vehicles/v17 on shard 0 (its own hash, not FeedShard's).
            let shard = 0
            let gateway = try probe("geotrigger-gw-\(shard)", "change-me-gw-\(shard)")
            let dispatcher = try probe("dispatch", "change-me-dispatch")
            let device = try probe("v17", "change-me-v17")
            defer { [gateway, dispatcher, device].forEach { $0.stop() } }
            gateway.collect()
            dispatcher.collect()
            try gateway.client.subscribe("shard/\(shard)/fleet/+/+/location", qos: .atLeastOnce)
            for filter in ["geotriggers/fences/+/+", "geotriggers/expect/+", "geotriggers/trips/+"] {
                try gateway.client.subscribe(filter, qos: .atLeastOnce)
            }
            try dispatcher.client.subscribe("geotriggers/#", qos: .atLeastOnce)
            for p in [gateway, dispatcher, device] { try p.client.start() }
            #expect(await gateway.waitSubscribed("shard/\(shard)/fleet/+/+/location"), "\(gateway.events.all)\n\(cluster.logs)")
            for filter in ["geotriggers/fences/+/+", "geotriggers/expect/+", "geotriggers/trips/+"] {
                #expect(await gateway.waitSubscribed(filter), "\(filter)")
            }
            #expect(await dispatcher.waitSubscribed("geotriggers/#"), "\(dispatcher.events.all)")
            #expect(await device.waitConnected())

            // The device first: its fence and event are refused; then the allowed ones.
            try device.client.publish(topic: "geotriggers/fences/sites/evil", payload: #"{"type":"Feature"}"#, qos: .atLeastOnce)
            try device.client.publish(topic: "geotriggers/events/t/vehicles/v17", payload: "{}", qos: .atLeastOnce)
            try device.client.publish(topic: "geotriggers/trips/joyride", payload: #"{"device":"vehicles/v17"}"#, qos: .atLeastOnce)
            try device.client.publish(topic: "fleet/vehicles/v18/location", payload: "{}", qos: .atLeastOnce)
            try device.client.publish(topic: "fleet/vehicles/v17/location", payload: #"{"lat":1,"lon":2,"time":1}"#, qos: .atLeastOnce)
            let dispatched = ["geotriggers/fences/sites/depot", "geotriggers/expect/e1", "geotriggers/trips/run-1"]
            for topic in dispatched {
                try dispatcher.client.publish(topic: topic, payload: #"{"device":"vehicles/v17"}"#, qos: .atLeastOnce)
            }
            // A loaded box forms the cluster's routes slowly (the dispatcher waited past 30 s once).
            #expect(await gateway.waitMessages(4, timeout: .seconds(90)), "\(gateway.messages.all.map(\.topic))\n\(cluster.logs)")
            #expect(await dispatcher.waitMessages(3, timeout: .seconds(90)), "\(dispatcher.messages.all.map(\.topic))")
            // Give anything refused the same chance to arrive late.
            _ = await poll(timeout: .seconds(2)) { gateway.messages.count > 4 || dispatcher.messages.count > 3 }
            let log = (try? String(contentsOfFile: cluster.nodes[0].logPath, encoding: .utf8)) ?? ""
            // The refused publishes: "... Violation - User "v17", Subject "..."". A loaded box can
            // also log "Router connection closed: Protocol Violation" while the cluster's routes
            // form; those are not the device's.
            let violations = log.split(separator: "\n").filter { $0.contains("Violation") }
                .map { $0.split(separator: " - ").last.map(String.init) ?? "" }.filter { $0.hasPrefix("User ") }
            print("NATS authorization: gateway of shard \(shard) got \(gateway.messages.all.map(\.topic)); dispatcher got",
                  "\(dispatcher.messages.all.map(\.topic)); refused: \(violations)")
            #expect(Set(gateway.messages.all.map(\.topic)) == Set(["shard/\(shard)/fleet/vehicles/v17/location"] + dispatched))
            #expect(Set(dispatcher.messages.all.map(\.topic)) == Set(dispatched))
            #expect(violations.count == 4, "\(violations)")
        }
    }
}
