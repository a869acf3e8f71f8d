import Foundation
import Testing

@testable import GeotriggerCore

/// Differential test against shapely + pyproj: `Tests/Fixtures/geometry/make_oracle.py` wrote
/// `oracle.csv` (point, expected inside, expected geodesic signed distance) over the NYC taxi
/// zones, `synthetic.geojson` and the example layers in `fences/`.
@Suite struct GeometryOracleTests {
    struct Row {
        var layer: String
        var feature: Int
        var point: Coordinate
        var inside: Bool
        var distance: Double
    }

    static func rows() throws -> [Row] {
        let text = try String(contentsOf: GeometryFixtures.directory.appendingPathComponent("oracle.csv"), encoding: .utf8)
        return try text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count == 6, let feature = Int(f[1]), let lon = Double(f[2]), let lat = Double(f[3]),
                let distance = Double(f[5])
            else { throw GeometryFixtures.Failure(description: "oracle.csv: bad line \(line)") }
            return Row(
                layer: String(f[0]), feature: feature, point: Coordinate(lat: lat, lon: lon), inside: f[4] == "1",
                distance: distance)
        }
    }

    /// Every layer the oracle names, prepared.
    static func layers() throws -> [String: [PreparedFence]] {
        var urls = [
            GeometryFixtures.directory.appendingPathComponent("nyc-taxi-zones.geojson"),
            GeometryFixtures.directory.appendingPathComponent("synthetic.geojson"),
        ]
        let fences = GeometryFixtures.repository.appendingPathComponent("fences")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: fences.path)) ?? []
        where name.hasSuffix(".geojson") {
            urls.append(fences.appendingPathComponent(name))
        }
        var layers: [String: [PreparedFence]] = [:]
        for url in urls {
            layers[url.deletingPathExtension().lastPathComponent] = try GeometryFixtures.fences(at: url).map {
                try PreparedFence($0)
            }
        }
        return layers
    }

    static func tolerance(_ expected: Double) -> Double { max(0.005 * abs(expected), 0.1) }

    @Test func agreesWithShapelyAndPyproj() throws {
        let layers = try Self.layers()
        let rows = try Self.rows()
        #expect(rows.count >= 10_000)
        var insideChecked = 0, insideWrong = 0, distanceWrong = 0, boundedWrong = 0
        var worstAbsolute = 0.0, worstRelative = 0.0
        var worstRow: Row?
        var nearEdge = 0, acrossAntimeridian = 0
        for row in rows {
            let fence = try #require(layers[row.layer]?[row.feature], "\(row.layer) feature \(row.feature)")
            let buffer = fence.fence.buffer ?? 0
            let isPolygon = !fence.fence.geometry.needsBuffer
            let d = fence.signedDistance(to: row.point)
            let error = abs(d - row.distance)
            if error > worstAbsolute {
                worstAbsolute = error
                worstRow = row
            }
            if abs(row.distance) > 20 { worstRelative = max(worstRelative, error / abs(row.distance)) }
            if error > Self.tolerance(row.distance) {
                distanceWrong += 1
                if distanceWrong <= 10 {
                    Issue.record("\(row.layer) feature \(row.feature) at \(row.point): distance \(d), expected \(row.distance)")
                }
            }
            // The inside answer, for points farther than 0.1 m from the (buffered) boundary.
            let margin = isPolygon ? abs(row.distance) : abs(row.distance - buffer)
            if margin > 0.1 {
                insideChecked += 1
                let inside = isPolygon ? fence.contains(row.point) : d - buffer <= 0
                if inside != row.inside {
                    insideWrong += 1
                    if insideWrong <= 10 {
                        Issue.record("\(row.layer) feature \(row.feature) at \(row.point): inside \(inside), expected \(row.inside)")
                    }
                }
            }
            if abs(row.distance) <= 1 || abs(row.distance - buffer) <= 1 { nearEdge += 1 }
            if row.layer == "synthetic", row.point.lon < -179 { acrossAntimeridian += 1 }
            // The bounded query: exact within the limit, else the right side of it.
            for limit in [buffer, 10.0, 100.0] {
                let v = fence.signedDistance(to: row.point, within: limit)
                if abs(row.distance) <= limit - Self.tolerance(limit) {
                    if abs(v - row.distance) > Self.tolerance(row.distance) { boundedWrong += 1 }
                } else if abs(row.distance) > limit + Self.tolerance(limit) {
                    if abs(v) <= limit || (abs(row.distance) > 0.1 && (v < 0) != (row.distance < 0)) { boundedWrong += 1 }
                }
            }
        }
        print(
            "geometry oracle: \(rows.count) points, \(insideChecked) inside answers checked (\(insideWrong) wrong), "
                + "\(nearEdge) within 1 m of a boundary, \(acrossAntimeridian) west of -179; "
                + "worst distance error \(String(format: "%.4f", worstAbsolute)) m "
                + "(at \(worstRow.map { "\($0.layer) feature \($0.feature), expected \($0.distance) m" } ?? "-")), "
                + "worst relative error beyond 20 m \(String(format: "%.5f", worstRelative * 100)) %")
        #expect(insideWrong == 0)
        #expect(distanceWrong == 0)
        #expect(boundedWrong == 0)
        #expect(nearEdge > 1000)
        #expect(acrossAntimeridian > 50)
    }
}

// MARK: - Fixture loading


/// Reads the GeoJSON fixtures of `Tests/Fixtures/geometry` (and `fences/`) into `Fence` values
/// with Foundation's JSONSerialization: enough for the geometry tests, which must not depend
/// on the project's own fence parser.
enum GeometryFixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/geometry")
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The fences of a GeoJSON FeatureCollection file; `buffer` is the feature's, else the
    /// layer's `geotrigger.buffer` (the effective buffer without a trigger).
    static func fences(at url: URL) throws -> [Fence] {
        let layer = url.deletingPathExtension().lastPathComponent
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        guard let features = root?["features"] as? [[String: Any]] else {
            throw Failure(description: "\(url.path): no features")
        }
        let layerBuffer = number((root?["geotrigger"] as? [String: Any])?["buffer"])
        return try features.enumerated().map { index, feature in
            let properties = feature["properties"] as? [String: Any] ?? [:]
            guard let geometry = feature["geometry"] as? [String: Any], let type = geometry["type"] as? String
            else { throw Failure(description: "\(layer): feature \(index): no geometry") }
            let coordinates = geometry["coordinates"]
            func position(_ value: Any?) throws -> Coordinate {
                guard let pair = value as? [Any], pair.count >= 2, let lon = number(pair[0]), let lat = number(pair[1])
                else { throw Failure(description: "\(layer): feature \(index): bad position") }
                return Coordinate(lat: lat, lon: lon)
            }
            func path(_ value: Any?) throws -> [Coordinate] { try (value as? [Any] ?? []).map(position) }
            func polygon(_ value: Any?) throws -> Polygon {
                let rings = try (value as? [Any] ?? []).map(path)
                return Polygon(exterior: rings.first ?? [], holes: Array(rings.dropFirst()))
            }
            let shape: FenceGeometry
            switch type {
            case "Polygon": shape = .polygons([try polygon(coordinates)])
            case "MultiPolygon": shape = .polygons(try (coordinates as? [Any] ?? []).map(polygon))
            case "Point": shape = .points([try position(coordinates)])
            case "MultiPoint": shape = .points(try path(coordinates))
            case "LineString": shape = .lines([try path(coordinates)])
            case "MultiLineString": shape = .lines(try (coordinates as? [Any] ?? []).map(path))
            default: throw Failure(description: "\(layer): feature \(index): unsupported \(type)")
            }
            let id = feature["id"].map { "\($0)" } ?? "\(index)"
            return Fence(
                id: id, layer: layer, name: properties["name"] as? String, geometry: shape,
                buffer: number(properties["buffer"]) ?? layerBuffer, featureIndex: index)
        }
    }

    static func number(_ value: Any?) -> Double? {
        guard let n = value as? NSNumber, !(value is Bool) else { return nil }
        return n.doubleValue
    }
}
