import Foundation
import GeotriggerCore
import Testing
@testable import Gateway

@Suite struct GatewayConfigTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/config").path

    func decode(_ text: String) throws(ConfigErrors) -> GatewayConfig {
        do {
            return try GatewayConfig.decode(JSONReader.parse(text, file: "test.json5", dialect: .json5))
        } catch let error as JSONSyntaxError {
            throw ConfigErrors(errors: [ConfigError(file: error.file, location: error.location, path: "$", message: error.message)])
        } catch {
            throw error as! ConfigErrors
        }
    }

    func messages(_ text: String) -> [String] {
        do {
            _ = try decode(text)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    /// `feeds[].userLevel` names a '+' level of its topic; owntracks feeds default to 1.
    @Test func userLevelNamesAPlusLevelOfTheTopic() throws {
        let c = try decode(#"{input: {maxDevicesPerUser: 5}, feeds: [{name: "v", topic: "fleet/vehicles/+/+", format: "json", userLevel: 2}]}"#)
        #expect(c.input.maxDevicesPerUser == 5)
        guard case .mqtt(_, _, _, _, let level) = c.feeds[0] else { Issue.record("mqtt feed"); return }
        #expect(level == 2)
        #expect(GatewayConfig().input.maxDevicesPerUser == 1000)
        let errors = messages(#"{feeds: [{name: "p", topic: "owntracks/+/+", format: "owntracks", userLevel: 3}]}"#)
        #expect(errors.count == 1)
        #expect(errors.first?.contains("feeds[0].userLevel") == true, "\(errors)")
        #expect(errors.first?.contains("a '+' level of the topic, which has 2, found 3") == true, "\(errors)")
    }

    @Test func defaultsWithoutAFile() {
        let c = GatewayConfig()
        #expect(c.broker.host == "127.0.0.1" && c.broker.port == 1883 && c.broker.protocol == .v5)
        #expect(c.clientID(remote: false) == "geotrigger-gw-1")
        #expect(c.gateway.fences == "fences" && c.gateway.database == "geotrigger.db")
        #expect(c.feeds.map(\.name) == ["owntracks", "devices"])
        #expect(c.triggers == nil)
        #expect(c.output.prefix == "geotriggers" && c.output.qos == 1)
    }

    @Test func readsTheDesignExample() throws {
        let path = Self.fixtures + "/design-example.json5"
        let c = try GatewayConfig.load(file: path)
        #expect(c.gateway.id == "gw-1")
        #expect(c.broker.clientId == "geotrigger-gw-1")
        #expect(c.remote == nil)
        #expect(c.feeds.count == 3)
        guard case .gpsd(let name, let host, let port, let device, let republish) = c.feeds[2] else {
            Issue.record("third feed should be gpsd")
            return
        }
        #expect(name == "self" && host == "127.0.0.1" && port == 2947 && device == "gw-1" && republish)
        guard case .mqtt(_, let topic, let format, _, _) = c.feeds[0] else { Issue.record("mqtt feed"); return }
        #expect(topic == "fleet/+/+/location" && format == .json)
        #expect(c.triggers?.count == 1)
        #expect(c.triggers?[0]["rule"] == .string("enterOrExit"))
        #expect(c.folder == Self.fixtures)
        #expect(c.resolve("geotrigger.db") == Self.fixtures + "/geotrigger.db")
        #expect(c.resolve("/var/lib/x.db") == "/var/lib/x.db")
    }

    @Test func everyErrorWithLineColumnAndKeyPath() throws {
        let path = Self.fixtures + "/many-errors.json5"
        let errors: [String]
        do {
            _ = try GatewayConfig.load(file: path)
            errors = []
        } catch {
            errors = error.errors.map(\.description)
        }
        let expected = [
            "\(path):8:3: colour: unknown key (known keys here: broker, feeds, fences, gateway, homeassistant, input, journal, outbox, output, remote, runtime, triggers)",
            "\(path):2:14: gateway.id: not a usable gateway id: it must be one topic level (no '/')",
            "\(path):2:26: gateway.durability: expected one of normal, full, found \"sometimes\"",
            "\(path):3:13: broker.port: expected a whole number from 1 to 65535, found \"1883\"",
            "\(path):3:27: broker.protocol: expected one of v5, v311, found \"v4\"",
            "\(path):3:43: broker.tls: cert and key go together: give both or neither",
            "\(path):3:43: broker.tls.ca: expected the CA certificate file (a string)",
            "\(path):4:21: output.prefix: expected topic levels without '+', '#' or a trailing '/', found \"a/#\"",
            "\(path):4:13: output.qos: expected a whole number from 0 to 1, found 2",
            "\(path):5:13: outbox.cap: expected a whole number from 1 to 2147483647, found 0",
            "\(path):6:25: feeds[0].topic: the topic filter needs a '+' or '#' level: the device id is what the wildcards match",
            "\(path):6:50: feeds[0].format: expected one of owntracks, json, found \"xml\"",
            "\(path):6:90: feeds[1].republish: expected true or false, found \"yes\"",
            "\(path):7:15: triggers[0]: expected a trigger object, found a number",
        ]
        #expect(errors == expected)
    }

    @Test func syntaxAndDuplicateKeysNameTheSpot() {
        #expect(messages("{ output: { qos: 1, qos: 0 } }").first?.hasPrefix("test.json5:1:21:") == true)
        #expect(messages("{ output: { qos: 1 ").first?.hasPrefix("test.json5:1:") == true)
        #expect(messages("{ feeds: {} }") == ["test.json5:1:3: feeds: expected an array of feeds, found an object"])
        #expect(messages("{ feeds: [{ topic: \"a/+\", format: \"json\" }] }") == ["test.json5:1:11: feeds[0]: a feed needs a \"name\""])
        #expect(messages("[]") == ["test.json5:1:1: expected an object, found an array"])
    }

    /// Down to a tenth of a second (`bench e2e` times the gateway by its statuses).
    @Test func statusIntervalFromATenthOfASecond() throws {
        #expect(try decode("{ output: { statusInterval: 0.1 }, triggers: [] }").output.statusInterval == 0.1)
        #expect(messages("{ output: { statusInterval: 0.05 } }") == ["test.json5:1:13: output.statusInterval: expected a number >= 0.1, found 0.05"])
    }

    @Test func brokerHostsAndRemote() throws {
        let c = try decode(#"{ broker: { hosts: ["10.0.0.1:1883", "n2:1884"], protocol: "v311" }, remote: { host: "up", tls: { ca: "ca.pem" } }, triggers: [] }"#)
        #expect(c.broker.hosts == ["10.0.0.1:1883", "n2:1884"])
        #expect(c.remote?.host == "up" && c.remote?.tls == GatewayConfig.TLS(ca: "ca.pem", cert: nil, key: nil))
        #expect(c.clientID(remote: true) == "geotrigger-gw-1-remote")
        #expect(c.triggers?.isEmpty == true)
        #expect(messages(#"{ broker: { hosts: ["nope"] } }"#) == [#"test.json5:1:21: broker.hosts[0]: expected "host:port", found "nope""#])
    }

    /// `fences.maxVertices` and `input.maxAccuracy` (docs/configuration.md "The config file"): defaults, values,
    /// and errors naming the key path like every other section.
    @Test func limitsOfFencesAndAccuracy() throws {
        let defaults = GatewayConfig()
        #expect(defaults.fences.maxVertices == 100_000)
        #expect(defaults.input.maxAccuracy == 10000)
        let c = try decode("{ fences: { maxVertices: 500 }, input: { maxAccuracy: 250.5 } }")
        #expect(c.fences.maxVertices == 500)
        #expect(c.input.maxAccuracy == 250.5)
        #expect(messages("{ fences: { maxVertices: 1.5 } }") == ["test.json5:1:13: fences.maxVertices: expected a whole number from 4 to 2147483647, found 1.5"])
        #expect(messages("{ fences: { maxVertex: 5 } }") == ["test.json5:1:13: fences.maxVertex: unknown key (known keys here: maxVertices)"])
        #expect(messages("{ input: { maxAccuracy: -1 } }") == ["test.json5:1:12: input.maxAccuracy: expected a number >= 0, found -1"])
    }

    /// `journal.maxRows`: default, value, and errors naming the key path.
    @Test func journalMaxRows() throws {
        #expect(GatewayConfig().journal.maxRows == 5_000_000)
        #expect(try decode("{ journal: { maxRows: 1000, retentionDays: 7 } }").journal.maxRows == 1000)
        #expect(messages("{ journal: { maxRows: 0 } }") == ["test.json5:1:14: journal.maxRows: expected a whole number from 1 to 2147483647, found 0"])
        #expect(messages("{ journal: { maxRows: 2.5 } }") == ["test.json5:1:14: journal.maxRows: expected a whole number from 1 to 2147483647, found 2.5"])
        #expect(messages("{ journal: { maxRow: 5 } }") == ["test.json5:1:14: journal.maxRow: unknown key (known keys here: maxRows, retentionDays)"])
    }

    /// `output.trackMemory`: default 128 MiB, 0 turns tracks off, and errors naming the key path.
    @Test func trackMemory() throws {
        #expect(GatewayConfig().output.trackMemory == 134_217_728)
        #expect(try decode("{ output: { trackMemory: 0 } }").output.trackMemory == 0)
        #expect(try decode("{ output: { trackMemory: 1048576 } }").output.trackMemory == 1_048_576)
        #expect(messages("{ output: { trackMemory: -1 } }") == ["test.json5:1:13: output.trackMemory: expected a whole number from 0 to 1099511627776, found -1"])
        #expect(messages("{ output: { trackMemory: \"128M\" } }") == [#"test.json5:1:13: output.trackMemory: expected a whole number from 0 to 1099511627776, found "128M""#])
    }

    /// `input.maxEventsPerDevice`: default, value, and errors naming the key path.
    @Test func inputMaxEventsPerDevice() throws {
        #expect(GatewayConfig().input.maxEventsPerDevice == 120)
        #expect(try decode("{ input: { maxEventsPerDevice: 10 } }").input.maxEventsPerDevice == 10)
        #expect(messages("{ input: { maxEventsPerDevice: 0 } }") == ["test.json5:1:12: input.maxEventsPerDevice: expected a whole number from 1 to 2147483647, found 0"])
        #expect(messages("{ input: { maxEventsPerDevice: \"120\" } }") == [#"test.json5:1:12: input.maxEventsPerDevice: expected a whole number from 1 to 2147483647, found "120""#])
    }
}
