import Foundation
import GeotriggerCore
import Testing
import TestSupport

@testable import Gateway

extension ServeTests {
    /// A SIGHUP reload leaves nothing of the previous fences behind: once the shards took the
    /// new snapshot, the start's snapshot (and with it its prepared fences, but those unchanged,
    /// which the new snapshot shares) is gone, so the gateway goes back to its steady size
    /// (docs/architecture.md "Start and shutdown"; `bench`-measured with a million fences in
    /// docs/performance.md).
    @Suite struct ReloadMemory {
        /// Holds what the test must not keep alive itself.
        final class Watch: @unchecked Sendable {
            weak var snapshot: EngineSnapshot?
            weak var fence: PreparedFence?
            weak var unchanged: PreparedFence?
        }

        @Test func aReloadLetsGoOfTheStartsFences() async throws {
            let h = try ServeHarness("reload-memory")
            defer { h.close() }
            let fences = try Self.folder(h, ["zones": Self.zones(Self.startZones)])
            let file = "\(fences)/zones.geojson"
            let config = try h.write("gw.json5", h.config(fences: fences))
            let watch = Watch()
            let signals = SignalStream(signals: [])
            // Built in a scope of its own, so that only the gateway holds the loaded setup.
            let server = try await { () async throws -> GatewayServer in
                let setup = try GatewaySetup.load(configFile: config)
                watch.snapshot = setup.snapshot
                watch.fence = setup.snapshot.fence(layer: "zones", id: "a")
                watch.unchanged = setup.snapshot.fence(layer: "zones", id: "b")
                return try await GatewayServer.build(setup, configFile: config, logger: Logger(label: "reload"), ownsProcess: false, signals: signals)
            }()
            #expect(watch.snapshot != nil && watch.fence != nil && watch.unchanged != nil)
            let running = Task { try await server.run() }
            // Fence a changes (renamed): the reload prepares it anew and the start's goes.
            try Self.zones([("a", "A renamed", 0)] + Self.startZones.dropFirst()).write(toFile: file, atomically: true, encoding: .utf8)
            signals.reload()
            let released = await poll(timeout: .seconds(30)) { watch.snapshot == nil && watch.fence == nil }
            #expect(released, "the start's snapshot is still held after the reload (snapshot \(watch.snapshot == nil ? "gone" : "kept"), fence \(watch.fence == nil ? "gone" : "kept"))")
            #expect(watch.unchanged != nil && watch.unchanged === server.runtimeFences.snapshot.fence(layer: "zones", id: "b"))
            server.stop()
            try await running.value
        }

        /// A reload of fences that did not change keeps the live snapshot's prepared fences:
        /// the new snapshot holds the very same objects, so the reload never has a second
        /// million prepared fences beside the first (docs/performance.md).
        @Test func anUnchangedReloadKeepsTheLivePreparedFences() async throws {
            let h = try ServeHarness("reload-reuse")
            defer { h.close() }
            let fences = try Self.folder(h, ["squares": FenceFolderTests.squares(300), "zones": Self.zones(Self.startZones)])
            let (server, running, signals) = try await Self.start(h, fences: fences)
            let before = server.runtimeFences.snapshot
            let after = await Self.reload(server, signals: signals, from: before)
            #expect(after.fences.count == 304 && after.fences.count == before.fences.count)
            let kept = zip(before.fences, after.fences).filter { $0 === $1 }.count
            #expect(kept == before.fences.count, "\(kept) of \(before.fences.count) prepared fences kept")
            server.stop()
            try await running.value
        }

        /// A reload after the file changed: the fence whose geometry changed and the one whose
        /// properties changed are prepared anew from the file, the removed one is gone, the
        /// added one is there, and the untouched one is still the live object.
        @Test func aReloadPreparesTheChangedFencesAnew() async throws {
            let h = try ServeHarness("reload-changed")
            defer { h.close() }
            let fences = try Self.folder(h, ["zones": Self.zones(Self.startZones)])
            let file = "\(fences)/zones.geojson"
            let (server, running, signals) = try await Self.start(h, fences: fences)
            let before = server.runtimeFences.snapshot
            // b moves east, c is renamed, d goes, e comes (in d's place: a, b and c keep their feature index).
            try Self.zones([("a", "A", 0), ("b", "B", 5), ("c", "C renamed", 2), ("e", "E", 4)])
                .write(toFile: file, atomically: true, encoding: .utf8)
            let after = await Self.reload(server, signals: signals, from: before)
            let old = { (id: String) in before.fence(layer: "zones", id: id) }
            let new = { (id: String) in after.fence(layer: "zones", id: id) }
            #expect(after.fences.map(\.fence.id) == ["a", "b", "c", "e"])
            #expect(new("a") != nil && new("a") === old("a"))
            let b = try #require(new("b"))
            #expect(b !== old("b"))
            #expect(b.fence.geometry == Self.square(5))
            #expect(b.bounds.minLon > -119.796 && old("b")!.bounds.minLon < -119.796)
            let c = try #require(new("c"))
            #expect(c !== old("c"))
            #expect(c.fence.name == "C renamed" && c.fence.properties["name"] == .string("C renamed"))
            #expect(new("d") == nil)
            #expect(new("e")?.fence.name == "E")
            server.stop()
            try await running.value
        }

        /// Zones `a` to `d`, one square each, side by side.
        static let startZones: [(id: String, name: String, column: Int)] = [("a", "A", 0), ("b", "B", 1), ("c", "C", 2), ("d", "D", 3)]

        /// The corners of the square of column `column` (0.0005 degrees, 0.001 degrees apart), closed.
        static func corners(_ column: Int) -> [Coordinate] {
            let lon = -119.8 + Double(column) * 0.001, lat = 34.4
            return [(lon, lat), (lon + 0.0005, lat), (lon + 0.0005, lat + 0.0005), (lon, lat + 0.0005), (lon, lat)]
                .map { Coordinate(lat: $0.1, lon: $0.0) }
        }

        /// The square of column `column` as a fence's geometry.
        static func square(_ column: Int) -> FenceGeometry { .polygons([Polygon(exterior: corners(column))]) }

        /// A layer of `zones`, each the square of its column.
        static func zones(_ zones: [(id: String, name: String, column: Int)]) -> String {
            let features = zones.map { zone -> String in
                let ring = corners(zone.column).map { "[\($0.lon), \($0.lat)]" }.joined(separator: ", ")
                return #"{"type": "Feature", "id": "\#(zone.id)", "properties": {"name": "\#(zone.name)"}, "#
                    + #""geometry": {"type": "Polygon", "coordinates": [[\#(ring)]]}}"#
            }
            return #"{"type": "FeatureCollection", "features": [\#n"# + features.joined(separator: ",\n") + "\n]}\n"
        }

        /// A fences folder in the harness's directory holding `layers` (name: GeoJSON text).
        static func folder(_ h: ServeHarness, _ layers: [String: String]) throws -> String {
            let fences = h.directory.file("fences")
            try FileManager.default.createDirectory(atPath: fences, withIntermediateDirectories: true)
            for (name, text) in layers { try text.write(toFile: "\(fences)/\(name).geojson", atomically: true, encoding: .utf8) }
            return fences
        }

        /// A gateway of the fences in `fences`, running in the test's process.
        static func start(_ h: ServeHarness, fences: String) async throws
            -> (server: GatewayServer, running: Task<Void, any Error>, signals: SignalStream)
        {
            let config = try h.write("gw.json5", h.config(fences: fences))
            let signals = SignalStream(signals: [])
            let server = try await GatewayServer.build(
                try GatewaySetup.load(configFile: config), configFile: config, logger: Logger(label: "reload"), ownsProcess: false,
                signals: signals)
            return (server, Task { try await server.run() }, signals)
        }

        /// Reloads as SIGHUP does; returns the live snapshot once it is no longer `before`.
        static func reload(_ server: GatewayServer, signals: SignalStream, from before: EngineSnapshot) async -> EngineSnapshot {
            signals.reload()
            #expect(await poll(timeout: .seconds(30)) { server.runtimeFences.snapshot !== before }, "no new snapshot after the reload")
            return server.runtimeFences.snapshot
        }
    }
}
