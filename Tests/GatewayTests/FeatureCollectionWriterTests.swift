import Foundation
import GeotriggerCore
import Testing

@testable import Gateway

/// The `features` reply as bytes (``FeatureCollectionWriter``): the Feature members, the cut
/// name and properties saying `truncated`, and the byte budget.
struct FeatureCollectionWriterTests {
    static func read(_ bytes: [UInt8]) throws -> JSONObject {
        try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
    }

    @Test func featuresSayLayerFenceNameBufferTriggersPropertiesAndGeometry() throws {
        var writer = FeatureCollectionWriter()
        let point = Fence(
            id: "gate", layer: "sites", name: "Gate", properties: ["name": .string("Gate"), "crew": .number(3)],
            geometry: .points([Coordinate(lat: 34.45, lon: -119.7)]))
        let addedPoint = writer.append(point, buffer: 40, triggers: ["poi", "poi-wide"])
        #expect(addedPoint)
        let unnamed = Fence(id: "7", layer: "other", geometry: .points([Coordinate(lat: 1, lon: 2)]))
        let addedUnnamed = writer.append(unnamed, buffer: nil, triggers: [])
        #expect(addedUnnamed)
        let bytes = writer.finish(truncated: false)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"type":"FeatureCollection","features":["#
            + #"{"type":"Feature","id":"gate","properties":{"layer":"sites","fence":"gate","name":"Gate","buffer":40,"triggers":["poi","poi-wide"],"properties":{"name":"Gate","crew":3}},"geometry":{"type":"Point","coordinates":[-119.7,34.45]}},"#
            + #"{"type":"Feature","id":"7","properties":{"layer":"other","fence":"7","name":null,"buffer":null,"triggers":[],"properties":{}},"geometry":{"type":"Point","coordinates":[2,1]}}"#
            + #"],"truncated":false}"#)
    }

    @Test func aCutNameOrPropertiesSayTruncated() throws {
        let long = String(repeating: "é", count: Fence.outputLimit)
        let fence = Fence(
            id: "long", layer: "sites", name: long, properties: ["note": .string(long)],
            geometry: .points([Coordinate(lat: 0, lon: 0)]))
        var writer = FeatureCollectionWriter()
        let added = writer.append(fence, buffer: 5, triggers: ["t"])
        #expect(added)
        let reply = try Self.read(writer.finish(truncated: false))
        let properties = try #require(reply["features"]?.arrayValue?.first?.objectValue?["properties"]?.objectValue)
        #expect(properties["truncated"] == .bool(true))
        #expect(properties["name"]?.stringValue?.utf8.count ?? 0 <= Fence.outputLimit)
        #expect(properties["properties"] == .object(JSONObject()))
    }

    @Test func theBudgetStopsTheFeatureThatWouldPassIt() throws {
        let ring = (0...400).map { i -> Coordinate in
            let angle = Double(i % 400) / 400 * 2 * Double.pi
            return Coordinate(lat: 34.4 + 0.001 * sin(angle), lon: -119.6 + 0.001 * cos(angle))
        }
        let fence = Fence(id: "ring", layer: "big", geometry: .polygons([Polygon(exterior: ring)]))
        var probe = FeatureCollectionWriter()
        let addedOnce = probe.append(fence, buffer: 0, triggers: [])
        #expect(addedOnce)
        let one = probe.finish(truncated: false).count
        // Room for two and a half.
        let budget = one * 5 / 2
        var writer = FeatureCollectionWriter(budget: budget)
        let added = (0..<3).map { _ in writer.append(fence, buffer: 0, triggers: []) }
        #expect(added == [true, true, false])
        #expect(writer.count == 2)
        let bytes = writer.finish(truncated: true)
        #expect(bytes.count <= budget)
        let reply = try Self.read(bytes)
        #expect(reply["features"]?.arrayValue?.count == 2 && reply["truncated"] == .bool(true))
        // Too small for any: an empty collection that still reads.
        var tiny = FeatureCollectionWriter(budget: 10)
        let addedTiny = tiny.append(fence, buffer: 0, triggers: [])
        #expect(!addedTiny)
        #expect(try Self.read(tiny.finish(truncated: true))["features"] == .array([]))
        #expect(FeatureCollectionWriter.replyBudget == 900 * 1024)
    }
}
