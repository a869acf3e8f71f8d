import Foundation
import MQTT
import Testing
import TestSupport

extension ServeTests.ShippedBroker {
    /// deploy/mosquitto/README.md "Users and roles": device rights only for device users. The
    /// dispatcher, Home Assistant and the gateway's own user publish on their own device
    /// topics (`devices/USER/location`, `owntracks/USER/phone`, `fleet/vehicles/USER/location`),
    /// as a phone or vehicle of that name would: the broker refuses each (v5 PUBACK 0x87, not
    /// authorized) and nothing reaches the gateway's feeds; device v17 on its own topic is
    /// accepted and delivered, on another device's topic refused. Under the shipped acl_file
    /// the device patterns (`pattern write devices/%u/location`) held for every user.
    @Test func onlyDeviceUsersArePhonesOrVehicles() async throws {
        var options = try Self.options()
        options.users["homeassistant"] = "ha-secret"
        let broker = try MosquittoProcess(options)
        defer { broker.stop() }
        let feeds = ["devices/+/location", "owntracks/+/+", "fleet/+/+/location"]
        let gateway = try MQTTProbe(port: broker.port, clientId: Self.gatewayUser) { Self.credentials(Self.gatewayUser)(&$0) }
        defer { gateway.stop() }
        gateway.collect()
        for filter in feeds { try gateway.client.subscribe(filter, qos: .atLeastOnce) }
        try gateway.client.start()
        for filter in feeds { #expect(await gateway.waitSubscribed(filter), "the gateway may read \(filter)\n\(describe(gateway))") }

        /// The reason codes of `user`'s QoS 1 publishes on `topics`, in order.
        func publish(as user: String, password: String, _ topics: [String]) async throws -> [Int32] {
            let client = try MQTTProbe(port: broker.port, clientId: user) { $0.username = user; $0.password = password }
            defer { client.stop() }
            try client.client.start()
            #expect(await client.waitConnected(), "\(user) connects\n\(describe(client))")
            var ids: [Int32] = []
            for topic in topics { ids.append(try client.client.publish(topic: topic, payload: #"{"lat":1,"lon":2}"#, qos: .atLeastOnce)) }
            #expect(await client.waitAcknowledged(ids), "\(user): \(client.acknowledgements.all)")
            let acks = client.acknowledgements.all
            return ids.map { id in acks.first { $0.messageId == id }?.reasonCode ?? -1 }
        }
        func deviceTopics(_ user: String) -> [String] { ["devices/\(user)/location", "owntracks/\(user)/phone", "fleet/vehicles/\(user)/location"] }

        var refused: [String: [Int32]] = [:]
        // The gateway's -failed user has the gateway role (its own name: a second connection as
        // the gateway's user would replace the probe above).
        for user in ["dispatch", "homeassistant", Self.gatewayUser + "-failed"] {
            refused[user] = try await publish(as: user, password: options.users[user]!, deviceTopics(user))
        }
        let device = try await publish(as: "v17", password: Self.users["v17"]!, deviceTopics("v17") + ["devices/alice/location"])
        // v17's messages are delivered in order after the refused ones were answered.
        let delivered = await poll { gateway.messages.all.contains { $0.topic == "fleet/vehicles/v17/location" } }
        let topics = gateway.messages.all.map(\.topic)
        print("shipped roles: reason codes of publishes on their own device topics: \(refused.sorted { $0.key < $1.key }); v17: \(device); the gateway's feeds got \(topics)")
        for (user, codes) in refused {
            #expect(codes == [0x87, 0x87, 0x87], "\(user) is no device: its publishes as one must be refused (0x87), got \(codes)")
        }
        #expect(device.prefix(3).allSatisfy { $0 >= 0 && $0 < 0x80 }, "v17 publishes on its own topics: \(device)")
        #expect(device.last == 0x87, "v17 on alice's topic must be refused: \(device)")
        #expect(delivered)
        #expect(topics.sorted() == ["devices/v17/location", "fleet/vehicles/v17/location", "owntracks/v17/phone"],
                "only v17's own messages reach the feeds: \(topics)")
    }

    /// install.sh and deploy/mosquitto/README.md: the plugin's file, holding the users' password hashes, is
    /// the broker's alone (owner and group mosquitto, 0640), never world-readable.
    @Test func installKeepsTheSecurityFileForTheBrokerOnly() throws {
        let install = try String(contentsOfFile: repositoryRoot + "/deploy/install.sh", encoding: .utf8)
        let conf = try String(contentsOfFile: "\(Self.folder)/geotrigger.conf", encoding: .utf8)
        let file = try #require(conf.split(separator: "\n").first { $0.hasPrefix("plugin_opt_config_file ") }?.split(separator: " ").last)
        #expect(install.contains("chown mosquitto:mosquitto \(file)") || install.contains("chown mosquitto:mosquitto \"$DYNSEC\""), "install.sh gives \(file) to mosquitto")
        #expect(install.contains("chmod 0640"), "install.sh makes the security file 0640")
        #expect(!install.contains("mosquitto_passwd"), "no password file any more")
    }
}
