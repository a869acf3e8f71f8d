import Foundation
import GeotriggerCore
import Testing

@testable import Gateway

/// The `features` reply as bytes (``FeatureCollectionWriter``): the Feature members, the cut
/// name and properties saying `truncated`, the byte budget, and the reply in parts
/// (`partBytes`).
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

    // MARK: Parts

    /// A closed ring of `positions` positions (about 36 bytes each as GeoJSON) around a point
    /// set by `k`.
    static func ring(_ id: String, positions: Int, k: Int = 0) -> Fence {
        var ring = (0..<positions).map { i -> Coordinate in
            let angle = Double(i) / Double(positions) * 2 * Double.pi
            return Coordinate(lat: 34.4 + Double(k) * 0.01 + 0.001 * sin(angle), lon: -119.6 + 0.001 * cos(angle))
        }
        ring.append(ring[0])
        return Fence(id: id, layer: "parts", geometry: .polygons([Polygon(exterior: ring)]))
    }

    /// `fences` written by `writer`, every one expected to fit, and its messages.
    static func write(_ fences: [Fence], _ writer: FeatureCollectionWriter, truncated: Bool = false) -> [[UInt8]] {
        var writer = writer
        for fence in fences {
            let added = writer.append(fence, buffer: nil, triggers: ["t"])
            #expect(added, "\(fence.id) left out")
        }
        return writer.finishParts(truncated: truncated)
    }

    /// Each part read, with its number, count and `truncated` checked against `parts` and `truncated`.
    static func readParts(_ parts: [[UInt8]], truncated: Bool) throws -> [JSONObject] {
        try parts.enumerated().map { i, bytes in
            let part = try read(bytes)
            #expect(part["type"] == .string("FeatureCollection") && part["truncated"] == .bool(truncated))
            #expect(part["part"] == .number(Double(i + 1)) && part["parts"] == .number(Double(parts.count)), "\(part.keys)")
            return part
        }
    }

    @Test func partsStayWithinTheirSizeAndReadAsTheOneMessageReply() throws {
        // 40 rings of 4 to 43 positions: features of about 200 to 1,700 bytes.
        let fences = (0..<40).map { i in Self.ring("f\(i)", positions: 4 + (i * 7) % 40, k: i) }
        let whole = try Self.read(Self.write(fences, FeatureCollectionWriter())[0])
        let wholeFeatures = try #require(whole["features"]?.arrayValue)
        #expect(wholeFeatures.count == 40)
        for partBytes in [1024, 2048, 4000] {
            for appended in [0, 25] {
                let parts = Self.write(fences, FeatureCollectionWriter(partBytes: partBytes, appended: appended))
                var features: [JSONValue] = []
                for (bytes, part) in zip(parts, try Self.readParts(parts, truncated: false)) {
                    let inPart = part["features"]?.arrayValue ?? []
                    #expect(!inPart.isEmpty)
                    #expect(bytes.count + appended <= partBytes || inPart.count == 1, "\(bytes.count) + \(appended) bytes")
                    features += inPart
                }
                #expect(features == wholeFeatures, "partBytes \(partBytes), appended \(appended)")
                #expect(parts.count > 1 && (partBytes == 1024 || parts.count < 40), "\(parts.count) parts of \(partBytes)")
            }
        }
    }

    /// A part holds as many features as fit with room for the widest end: with features of one
    /// size, `partBytes` just enough for three gives three a part, one byte less two.
    @Test func aPartTakesFeaturesUntilTheNextWouldPassItsSize() throws {
        let fences = (0..<7).map { i in Self.ring("r\(i)", positions: 20) }
        var probe = FeatureCollectionWriter()
        let addedOnce = probe.append(fences[0], buffer: nil, triggers: ["t"])
        #expect(addedOnce)
        let feature = probe.finish(truncated: false).count - FeatureCollectionWriter.head.utf8.count - FeatureCollectionWriter.longestTail
        let appended = 17
        let room = FeatureCollectionWriter(partBytes: 1024, appended: appended).partTailRoom
        #expect(room == #"],"truncated":false,"part":921600,"parts":921600}"#.utf8.count)
        let three = FeatureCollectionWriter.head.utf8.count + 3 * feature + 2 + room + appended
        for (partBytes, sizes) in [(three, [3, 3, 1]), (three - 1, [2, 2, 2, 1])] {
            let parts = Self.write(fences, FeatureCollectionWriter(partBytes: partBytes, appended: appended))
            let read = try Self.readParts(parts, truncated: false)
            #expect(read.map { $0["features"]?.arrayValue?.count ?? 0 } == sizes, "partBytes \(partBytes)")
            #expect(parts.allSatisfy { $0.count + appended <= partBytes })
        }
    }

    @Test func theBudgetCutsAcrossPartsAndEveryPartSaysTruncated() throws {
        let fences = (0..<30).map { i in Self.ring("b\(i)", positions: 20, k: i) }
        let appended = 40
        // Room for about twelve features of about 900 bytes, three to a part.
        let budget = 12_000, partBytes = 3000
        var writer = FeatureCollectionWriter(budget: budget, partBytes: partBytes, appended: appended)
        let added = fences.map { writer.append($0, buffer: nil, triggers: []) }
        let kept = added.prefix { $0 }.count
        #expect(kept > 3 && kept < 30 && added.dropFirst(kept).allSatisfy { !$0 }, "\(added)")
        #expect(writer.count == kept)
        let parts = writer.finishParts(truncated: true)
        let read = try Self.readParts(parts, truncated: true)
        #expect(parts.count > 1)
        let total = parts.reduce(0) { $0 + $1.count + appended }
        #expect(total <= budget, "\(total) bytes in \(parts.count) parts")
        // The next feature (about 900 bytes, 1,100 in a part of its own) would not have fitted.
        #expect(total > budget - 1500, "\(total) bytes in \(parts.count) parts")
        #expect(read.flatMap { $0["features"]?.arrayValue ?? [] }.count == kept)
        #expect(zip(parts, read).allSatisfy { $0.0.count + appended <= partBytes || $0.1["features"]?.arrayValue?.count == 1 })
    }

    @Test func aFeatureLargerThanAPartGoesAloneInItsPart() throws {
        let small = { (i: Int) in Self.ring("s\(i)", positions: 5, k: i) }
        let big = Self.ring("big", positions: 200)
        for (fences, sizes) in [([small(0), small(1), big, small(2)], [2, 1, 1]), ([big, small(0), small(1)], [1, 2])] {
            let parts = Self.write(fences, FeatureCollectionWriter(partBytes: 1024))
            let read = try Self.readParts(parts, truncated: false)
            #expect(read.map { $0["features"]?.arrayValue?.count ?? 0 } == sizes)
            for (bytes, part) in zip(parts, read) {
                let ids = (part["features"]?.arrayValue ?? []).map { $0.objectValue?["id"]?.stringValue ?? "?" }
                if ids.contains("big") {
                    #expect(ids == ["big"] && bytes.count > 1024)
                } else {
                    #expect(bytes.count <= 1024)
                }
            }
        }
    }

    @Test func noFeaturesIsOnePartAndWithoutPartBytesOneMessageAsBefore() throws {
        #expect(FeatureCollectionWriter(partBytes: 1024).finishParts(truncated: false).map { String(decoding: $0, as: UTF8.self) }
            == [#"{"type":"FeatureCollection","features":[],"truncated":false,"part":1,"parts":1}"#])
        #expect(FeatureCollectionWriter(partBytes: 1024, appended: 30).finishParts(truncated: true).map { String(decoding: $0, as: UTF8.self) }
            == [#"{"type":"FeatureCollection","features":[],"truncated":true,"part":1,"parts":1}"#])
        let fences = [Self.ring("a", positions: 12), Self.ring("b", positions: 12, k: 1)]
        var single = FeatureCollectionWriter()
        for fence in fences { _ = single.append(fence, buffer: nil, triggers: ["t"]) }
        let one = single.finish(truncated: false)
        #expect(Self.write(fences, FeatureCollectionWriter()) == [one])
        // The same features in two parts, the end of each as the reply's with its number.
        let parts = Self.write(fences, FeatureCollectionWriter(partBytes: 1024)).map { String(decoding: $0, as: UTF8.self) }
        let text = String(decoding: one, as: UTF8.self)
        let features = text.dropFirst(FeatureCollectionWriter.head.utf8.count).dropLast(FeatureCollectionWriter.longestTail)
        #expect(parts.count == 2)
        #expect(parts.map { $0.hasPrefix(FeatureCollectionWriter.head) } == [true, true])
        #expect(parts.first?.hasSuffix(#"}],"truncated":false,"part":1,"parts":2}"#) == true)
        #expect(parts.last?.hasSuffix(#"}],"truncated":false,"part":2,"parts":2}"#) == true)
        let partFeatures = parts.map { $0.dropFirst(FeatureCollectionWriter.head.utf8.count).dropLast(#"],"truncated":false,"part":1,"parts":2}"#.count) }
        #expect(partFeatures.joined(separator: ",") == features)
        #expect(FeaturesQuery.partBytesRange.upperBound == FeatureCollectionWriter.replyBudget)
    }
}
