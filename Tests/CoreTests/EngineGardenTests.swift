import Foundation
import Testing
@testable import GeotriggerCore

/// The example garden (`fences/`) walked along `deploy/routes/garden-tour.geojson` at 1.4 m/s.
@Suite struct EngineGardenTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func layers() throws -> [FenceLayer] {
        try ["fleet", "garden-poi", "garden-sections"].map { name in
            let path = repository.appendingPathComponent("fences/\(name).geojson").path
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let (layer, errors) = FenceLayerParser.parse(bytes, file: "fences/\(name).geojson", layer: name)
            #expect(errors.isEmpty)
            return layer
        }
    }

    /// The tour's events at 1.4 m/s, "TYPE FENCE_ID" in order (`Tests/Fixtures/replay/garden-tour-events.txt`,
    /// checked independently with shapely and pyproj; the simulate test expects them too).
    static func tourEvents() throws -> [String] {
        let path = repository.appendingPathComponent("Tests/Fixtures/replay/garden-tour-events.txt").path
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// One fix per second along the route at `speed` m/s, straight in lon/lat between vertices.
    static func walk(speed: Double, start: Double, device: String) throws -> [LocationUpdate] {
        let path = repository.appendingPathComponent("deploy/routes/garden-tour.geojson").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let route = try JSONReader.parse(text, file: path, dialect: .json).value
        let points = try #require(route.objectValue?["coordinates"]?.arrayValue).map { p in
            let c = p.arrayValue!
            return Coordinate(lat: c[1].numberValue!, lon: c[0].numberValue!)
        }
        var updates: [LocationUpdate] = []
        var t = 0.0  // seconds walked so far
        var nextFix = 0.0
        for (a, b) in zip(points, points.dropFirst()) {
            let midLat = (a.lat + b.lat) / 2
            let dx = (b.lon - a.lon) * Earth.parallelRadius(atLatitude: midLat) * .pi / 180
            let dy = (b.lat - a.lat) * Earth.meridionalRadius(atLatitude: midLat) * .pi / 180
            let duration = (dx * dx + dy * dy).squareRoot() / speed
            while nextFix <= t + duration {
                let f = (nextFix - t) / duration
                updates.append(
                    LocationUpdate(
                        device: device, lat: a.lat + f * (b.lat - a.lat), lon: a.lon + f * (b.lon - a.lon),
                        time: start + nextFix, accuracy: 4, speed: speed))
                nextFix += 1
            }
            t += duration
        }
        return updates
    }

    @Test func gardenTourGivesTheExpectedSequence() throws {
        // No `triggers` key: one trigger per layer, with the layers' defaults (POI buffer 10 m,
        // messages from the layers' Arcade expressions).
        let snapshot = try EngineSnapshot(layers: try Self.layers(), configTriggers: nil)
        var monitor = DeviceMonitor(device: "visitors/ana", snapshot: snapshot, now: 0)
        let updates = try Self.walk(speed: 1.4, start: 1_796_040_000, device: "visitors/ana")
        var events: [FenceNotification] = []
        for u in updates { events += monitor.handle(u, receivedAt: u.time - 1_796_040_000).notifications }
        #expect(updates.count == 1_326)  // 1.86 km at 1.4 m/s
        let sequence = events.map { "\($0.type.rawValue) \($0.fenceID)" }
        // Checked independently with shapely (sections) and pyproj geodesic distances (POIs, 10 m):
        // the same crossings; within one update, exits come before enters.
        #expect(sequence == (try Self.tourEvents()))
        // Every section is visited; the two far points of interest are not.
        #expect(Set(events.filter { $0.layer == "garden-sections" }.map(\.fenceID)).count == 7)
        #expect(!sequence.contains { $0.hasSuffix("library") || $0.hasSuffix("conservation-center") })
        #expect(events.allSatisfy { $0.trigger == $0.layer })
        // Messages from the layers' Arcade expressions.
        #expect(events[0].message?.message == "Entered the geofence of Arroyo Section")
        #expect(events[1].message?.message == "Nearby: Entrance Gate")
        #expect(events[3].message?.message == "Left Arroyo Section")
        // Each exit belongs to the visit of the enter before it and measures it.
        var enters: [String: FenceNotification] = [:]
        #expect(events[0].position == updates[0] && events[0].distance < -15)  // the tour starts inside: initial enter
        for e in events {
            if e.type == .enter {
                enters[e.fenceID] = e
                if e.position != updates[0] {
                    #expect(e.distance <= 0 && e.distance > -1.5)  // the first fix inside: within one step
                }
            } else {
                let enter = try #require(enters[e.fenceID])
                #expect(e.visit == enter.id && e.dwellSeconds == e.position.time - enter.position.time)
                #expect(e.distance > 0 && e.distance < 1.5)
            }
        }
        #expect(monitor.stays.map(\.fence) == ["arroyo"])
    }
}
