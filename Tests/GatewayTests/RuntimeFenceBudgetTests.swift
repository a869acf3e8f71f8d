import Foundation
import GeotriggerCore
import MQTT
import Store
import Testing
import TestSupport

@testable import Gateway

/// `runtime.maxBytes` (docs/limits.md): the runtime fences' payloads together stay within the
/// budget, live and at start. ``RuntimeFences`` is built as `serve` builds it, over a real
/// database file, with a client that never connects (its error publishes go nowhere; the
/// status warnings carry the same reasons). A SIGHUP-style ``RuntimeFences/reload(_:)`` runs
/// after every message handed over before it, so it is the barrier before reading the store.
@Suite struct RuntimeFenceBudgetTests {
    /// A directory with an empty fence folder and a config with `runtime` set to `runtime`.
    struct Rig {
        let directory: TemporaryDirectory
        let setup: GatewaySetup
        let store: GatewayStore
        let warnings = Warnings(logger: Logger(label: "budget-test"))

        init(runtime: String) async throws {
            directory = try TemporaryDirectory(prefix: "fence-budget")
            try FileManager.default.createDirectory(atPath: directory.file("fences"), withIntermediateDirectories: true)
            _ = try directory.write("fences/zones.geojson", #"{"type":"FeatureCollection","features":[]}"#)
            let config = try directory.write("gw.json5", "{ broker: { port: 1, clientId: \"gw-budget\" }, runtime: \(runtime) }")
            setup = try GatewaySetup.load(configFile: config)
            store = try await GatewayStore(path: directory.file("gw.db"))
        }

        func fences() async throws -> RuntimeFences {
            let client = try MQTTClient(MQTTConfiguration(port: 1, clientId: "gw-budget-\(UUID().uuidString.prefix(8))"))
            let (_, adoptions) = AsyncStream.makeStream(of: EngineSnapshot.self)
            return await RuntimeFences(setup: setup, client: client, store: store, warnings: warnings, logger: Logger(label: "budget-test"),
                                       adoptions: adoptions)
        }

        /// The stored fences' ids in `layer` and their sizes.
        func stored(_ layer: String = "jobs") async throws -> [String: Int] {
            Dictionary(uniqueKeysWithValues: try await store.runtimeFenceSizes().filter { $0.layer == layer }.map { ($0.fence, $0.bytes) })
        }

        func warning(_ fence: String, layer: String = "jobs") -> String? {
            warnings.texts.first { $0.hasPrefix("runtime fence \(layer)/\(fence) rejected") }
        }
    }

    /// A Point fence whose payload is exactly `bytes` long (padded in a property).
    static func feature(_ bytes: Int, lat: Double = 34.45) -> [UInt8] {
        let head = #"{"type":"Feature","properties":{"buffer":40,"pad":""#
        let tail = #""},"geometry":{"type":"Point","coordinates":[-119.7,\#(lat)]}}"#
        let padding = bytes - head.utf8.count - tail.utf8.count
        precondition(padding >= 0)
        return Array((head + String(repeating: "x", count: padding) + tail).utf8)
    }

    /// A change published now (not flagged retained: a retained copy the gateway holds in
    /// another version is taken as stale, see RuntimeFenceBookTests).
    static func message(_ layer: String, _ id: String, _ payload: [UInt8]) -> MQTTMessage {
        MQTTMessage(topic: "geotriggers/fences/\(layer)/\(id)", payload: payload, qos: .atLeastOnce, retain: false)
    }

    @Test func aFenceThatWouldPassMaxBytesIsRejectedWithTheSizesAndThePreviousVersionStays() async throws {
        let rig = try await Rig(runtime: "{ maxBytes: 1000 }")
        #expect(rig.setup.config.runtime.maxBytes == 1000)
        let fences = try await rig.fences()
        await fences.queueChange(Self.message("jobs", "a", Self.feature(400)))
        await fences.queueChange(Self.message("jobs", "b", Self.feature(400)))
        // 800 live: 300 more is one byte too many... 200 fits exactly.
        await fences.queueChange(Self.message("jobs", "c", Self.feature(300)))
        await fences.queueChange(Self.message("jobs", "d", Self.feature(200)))
        await fences.reload(rig.setup)
        // A replacement counts without the version it replaces: b 400 -> 401 is 1001.
        await fences.queueChange(Self.message("jobs", "b", Self.feature(401, lat: 34.46)))
        await fences.reload(rig.setup)
        let c = rig.warning("c"), b = rig.warning("b")
        print("runtime.maxBytes 1000: c: \(c ?? "accepted"); b: \(b ?? "accepted"); stored: \(try await rig.stored())")
        #expect(c?.contains("the payload is 300 bytes and the other runtime fences hold 800 bytes: 1100 bytes together, over runtime.maxBytes (1000)") == true,
                "\(rig.warnings.texts)")
        #expect(b?.contains("the payload is 401 bytes and the other runtime fences hold 600 bytes: 1001 bytes together") == true,
                "\(rig.warnings.texts)")
        #expect(rig.warning("d") == nil)
        #expect(try await rig.stored() == ["a": 400, "b": 400, "d": 200])
        #expect(fences.snapshot.fence(layer: "jobs", id: "b") != nil && fences.snapshot.fence(layer: "jobs", id: "c") == nil)
        // Deleting one makes room: c fits now.
        await fences.queueChange(Self.message("jobs", "a", []))
        await fences.queueChange(Self.message("jobs", "c", Self.feature(300)))
        await fences.reload(rig.setup)
        #expect(try await rig.stored() == ["b": 400, "c": 300, "d": 200])
        await fences.shutdown()
        await rig.store.close()
    }

    @Test func aStartFromADatabaseOverTheBudgetLoadsWhatFitsAndWarns() async throws {
        let rig = try await Rig(runtime: "{ maxBytes: 1050 }")
        // Written as a run with a larger budget would have: 5 x 300 bytes, and one of 150.
        var rows: [(layer: String, fence: String, feature: [UInt8]?)] = (1...5).map { ("jobs", "f\($0)", Self.feature(300)) }
        rows.append(("jobs", "g", Self.feature(150)))
        try await rig.store.saveRuntimeFences(rows)
        let fences = try await rig.fences()
        let loaded = ["f1", "f2", "f3", "f4", "f5", "g"].filter { fences.snapshot.fence(layer: "jobs", id: $0) != nil }
        let warning = rig.warnings.texts.first { $0.contains("left out at start") }
        print("start over runtime.maxBytes 1050: loaded \(loaded); warning: \(warning ?? "none")")
        // By layer then id, each that still fits: f1-f3 (900), then g (1050); f4 and f5 are left out.
        #expect(loaded == ["f1", "f2", "f3", "g"])
        #expect(warning?.hasPrefix("2 saved runtime fences (600 bytes) were left out at start: the 4 restored hold 1050 bytes of runtime.maxBytes 1050") == true,
                "\(rig.warnings.texts)")
        // The retained copy of a left-out one is rejected like any fence over the budget; a
        // delete of one deletes its row; with none left the warning goes.
        await fences.queueChange(Self.message("jobs", "f4", Self.feature(300)))
        await fences.reload(rig.setup)
        #expect(rig.warning("f4")?.contains("over runtime.maxBytes (1050)") == true, "\(rig.warnings.texts)")
        await fences.queueChange(Self.message("jobs", "f4", []))
        await fences.queueChange(Self.message("jobs", "f5", []))
        await fences.reload(rig.setup)
        #expect(try await rig.stored().keys.sorted() == ["f1", "f2", "f3", "g"])
        #expect(!rig.warnings.texts.contains { $0.contains("left out at start") }, "\(rig.warnings.texts)")
        await fences.shutdown()
        await rig.store.close()
    }

    @Test func maxBytesIsReadFromTheConfigWithItsPlace() throws {
        let directory = try TemporaryDirectory(prefix: "fence-budget-config")
        #expect(GatewayConfig().runtime.maxBytes == 64 << 20)
        let path = try directory.write("gw.json5", "{\n  runtime: { maxBytes: -1 },\n}")
        do {
            _ = try GatewayConfig.load(file: path)
            Issue.record("a negative runtime.maxBytes was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains("gw.json5:2:") && text.contains("maxBytes"), "\(text)")
        }
    }
}
