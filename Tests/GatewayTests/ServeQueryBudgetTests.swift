import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// The `fences` and `near` queries over a layer too large for one reply (docs/control-plane.md "Queries"):
    /// each reply stays under 900 KiB and says `truncated`; `fences` pages with `offset` through
    /// every fence of the layer, `near` lists the nearest first. On a real broker that takes at
    /// most 1 MiB, as the shipped config does (a reply over it would never arrive).
    @Suite struct QueryBudget {
        typealias Rig = FeaturesQuery.Rig

        static let budget = 900 * 1024
        /// 20,000 squares of about 40 m, 0.001 degrees apart (about 111 m north, 92 m east).
        static let rows = 100, columns = 200
        static let spacing = 0.001
        static let south = 34.0, west = -118.0

        /// The grid layer: fence `g-R-C` (row R from the south, column C from the west), named
        /// `Grid R/C`, its centre `R` and `C` spacings from the south-west corner.
        static func gridLayer() -> String {
            var features: [String] = []
            features.reserveCapacity(rows * columns)
            let d = 0.0002
            for r in 0..<rows {
                for c in 0..<columns {
                    let lat = south + Double(r) * spacing, lon = west + Double(c) * spacing
                    let ring = [(lon - d, lat - d), (lon + d, lat - d), (lon + d, lat + d), (lon - d, lat + d), (lon - d, lat - d)]
                        .map { String(format: "[%.7f,%.7f]", $0.0, $0.1) }.joined(separator: ",")
                    features.append(
                        #"{"type":"Feature","id":"g-\#(r)-\#(c)","properties":{"name":"Grid \#(r)/\#(c)","zone":"north-east quadrant"},"#
                            + #""geometry":{"type":"Polygon","coordinates":[[\#(ring)]]}}"#)
                }
            }
            return #"{"type":"FeatureCollection","features":[\#(features.joined(separator: ","))]}"#
        }

        static func gridRig(_ name: String) async throws -> Rig {
            try await Rig(name, extraFences: ["grid.geojson": gridLayer()], extraTriggers: #"{ name: "grid", fences: ["grid"] },"#)
        }

        static func read(_ bytes: [UInt8]) throws -> JSONObject {
            try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
        }

        /// A plain `{"fences": LAYER}` of 20,000 fences is cut at the budget with the layer's
        /// `count`; pages asked with `offset` = the fences received so far give every fence
        /// once, in file order; `limit` cuts a page shorter.
        @Test(.timeLimit(.minutes(3))) func aLayerTooLargeForOneReplyIsTruncatedAndPagesThroughEveryFenceOnce() async throws {
            let rig = try await Self.gridRig("fences-budget")
            defer { rig.close() }
            let firstBytes = try await rig.replyBytes(#"{"fences":"grid"}"#)
            let first = try Self.read(firstBytes)
            print("fences budget: the first page has \(first["fences"]?.arrayValue?.count ?? -1) of 20000 fences in \(firstBytes.count) bytes")
            #expect(firstBytes.count <= Self.budget, "\(firstBytes.count) bytes")
            #expect(first["truncated"] == .bool(true) && first["count"] == .number(20_000) && first["layer"] == .string("grid"))
            #expect(first["offset"] == .number(0) && first["correlation"] == .string("1"))
            let row = try #require(first["fences"]?.arrayValue?.first?.objectValue)
            #expect(row["id"] == .string("g-0-0") && row["name"] == .string("Grid 0/0") && row["geometry"] == .string("Polygon"))
            #expect(row["properties"]?.objectValue?["zone"] == .string("north-east quadrant"))

            var ids = (first["fences"]?.arrayValue ?? []).compactMap { $0.objectValue?["id"]?.stringValue }
            var pages = 1
            while pages < 40 {
                let bytes = try await rig.replyBytes(#"{"fences":{"layer":"grid","offset":\#(ids.count)}}"#)
                let page = try Self.read(bytes)
                #expect(bytes.count <= Self.budget, "page \(pages + 1): \(bytes.count) bytes")
                #expect(page["offset"] == .number(Double(ids.count)) && page["count"] == .number(20_000))
                let rows = (page["fences"]?.arrayValue ?? []).compactMap { $0.objectValue?["id"]?.stringValue }
                #expect(!rows.isEmpty, "page \(pages + 1) is empty: \(page.keys)")
                ids += rows
                pages += 1
                guard page["truncated"] == .bool(true), !rows.isEmpty else { break }
            }
            print("fences budget: \(ids.count) fences in \(pages) pages")
            let expected = (0..<Self.rows).flatMap { r in (0..<Self.columns).map { c in "g-\(r)-\(c)" } }
            #expect(ids.count == expected.count && ids == expected, "\(ids.count) fences in \(pages) pages")
            #expect(pages >= 3)

            // `limit`, and the last page of all.
            let three = try Self.read(try await rig.replyBytes(#"{"fences":{"layer":"grid","offset":200,"limit":3}}"#))
            #expect(three["fences"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } == ["g-1-0", "g-1-1", "g-1-2"])
            #expect(three["truncated"] == .bool(true))
            let last = try Self.read(try await rig.replyBytes(#"{"fences":{"layer":"grid","offset":19998,"limit":5}}"#))
            #expect(last["fences"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } == ["g-99-198", "g-99-199"])
            #expect(last["truncated"] == .bool(false))
            let past = try Self.read(try await rig.replyBytes(#"{"fences":{"layer":"grid","offset":20000}}"#))
            #expect(past["fences"] == .array([]) && past["truncated"] == .bool(false) && past["count"] == .number(20_000))
            // A small layer: whole, as before.
            let poi = try Self.read(try await rig.replyBytes(#"{"fences":"garden-poi"}"#))
            #expect(poi["fences"]?.arrayValue?.count == 11 && poi["truncated"] == .bool(false) && poi["count"] == .number(11))
        }

        /// `near` with a radius of 100 km over 20,000 fences: the 1,000 nearest (the default
        /// `limit`), nearest first, `truncated`; every square whose centre is within 1.5 km is
        /// among them (about 690; the 1,000th is about 1.8 km away).
        @Test(.timeLimit(.minutes(3))) func nearWithAHugeRadiusIsNearestFirstAndTruncated() async throws {
            let rig = try await Self.gridRig("near-budget")
            defer { rig.close() }
            let (r0, c0) = (50, 100)
            let lat = Self.south + Double(r0) * Self.spacing, lon = Self.west + Double(c0) * Self.spacing
            let bytes = try await rig.replyBytes(#"{"near":{"lat":\#(lat),"lon":\#(lon),"radius":100000}}"#)
            let reply = try Self.read(bytes)
            let rows = (reply["near"]?.arrayValue ?? []).compactMap(\.objectValue)
            print("near budget: \(rows.count) fences in \(bytes.count) bytes")
            #expect(bytes.count <= Self.budget, "\(bytes.count) bytes")
            #expect(reply["truncated"] == .bool(true) && rows.count == 1000, "\(rows.count) rows, \(reply.keys)")
            #expect(rows.first?["fence"] == .string("g-50-100") && (rows.first?["distance"]?.numberValue ?? 0) < 0)
            let distances = rows.compactMap { $0["distance"]?.numberValue }
            #expect(distances.count == rows.count && zip(distances, distances.dropFirst()).allSatisfy { $0 <= $1 }, "not nearest first")
            #expect(rows.allSatisfy { $0["layer"] == .string("grid") })
            let listed = Set(rows.compactMap { $0["fence"]?.stringValue })
            let metresPerRow = 111_195 * Self.spacing, metresPerColumn = metresPerRow * cos(lat * .pi / 180)
            var within = 0
            for r in 0..<Self.rows {
                for c in 0..<Self.columns {
                    let dy = Double(r - r0) * metresPerRow, dx = Double(c - c0) * metresPerColumn
                    guard (dx * dx + dy * dy).squareRoot() <= 1500 else { continue }
                    within += 1
                    #expect(listed.contains("g-\(r)-\(c)"), "g-\(r)-\(c) is within 1.5 km and not listed")
                }
            }
            #expect(within > 600 && (distances.last ?? 0) > 1500 && (distances.last ?? .infinity) < 2200, "\(within), \(distances.last ?? -1)")

            // `limit`: more rows, still under the budget; a small radius: all there are, not truncated.
            let manyBytes = try await rig.replyBytes(#"{"near":{"lat":\#(lat),"lon":\#(lon),"radius":100000,"limit":10000}}"#)
            let many = try Self.read(manyBytes)
            #expect(manyBytes.count <= Self.budget && many["truncated"] == .bool(true), "\(manyBytes.count) bytes")
            #expect((many["near"]?.arrayValue?.count ?? 0) > 1000)
            let small = try Self.read(try await rig.replyBytes(#"{"near":{"lat":\#(lat),"lon":\#(lon),"radius":100}}"#))
            #expect(small["truncated"] == .bool(false))
            #expect(Set(small["near"]?.arrayValue?.compactMap { $0.objectValue?["fence"]?.stringValue } ?? [])
                == ["g-50-100", "g-49-100", "g-51-100", "g-50-99", "g-50-101"])
        }
    }
}
