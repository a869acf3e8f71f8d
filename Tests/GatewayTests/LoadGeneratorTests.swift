import Foundation
@testable import Benchmarks
import Gateway
import GeotriggerCore
import Testing

/// `bench e2e`'s load generator writes its payloads without formatting a `Double`: the text
/// must be what Swift prints for the rounded values, which the gateway decodes back to them.
@Suite struct LoadGeneratorTests {
    @Test func decimalsAreWrittenAsSwiftPrintsThem() {
        func text(_ units: Int, _ decimals: Int) -> String {
            var bytes: [UInt8] = []
            LoadGenerator.appendDecimal(units, decimals: decimals, to: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(text(407_312_345, 7) == "40.7312345")
        #expect(text(-739_500_000, 7) == "-73.95")
        #expect(text(50_000_000, 7) == "5.0")
        #expect(text(0, 7) == "0.0")
        #expect(text(-5, 7) == "-0.0000005")
        #expect(text(179_604_000_001, 2) == "1796040000.01")
        #expect(text(179_604_000_010, 2) == "1796040000.1")
        #expect(text(42, 0) == "42")
        #expect(text(0, 0) == "0")
    }

    @Test func payloadsHoldTheRoundedPositionAndFixTime() throws {
        for format in [PayloadFormat.json, .owntracks] {
            let generator = LoadGenerator(devices: 50, fences: [], format: format, baseTime: 1_796_040_000)
            for (d, k) in [(0, 0), (7, 1), (49, 10), (13, 99), (21, 150), (3, 12_345)] {
                let p = generator.position(device: d, step: k)
                let lat = (p.lat * 1e7).rounded() / 1e7, lon = (p.lon * 1e7).rounded() / 1e7
                let time = Double(1_796_040_000 * 100 + k) / 100
                let expected =
                    format == .json
                    ? "{\"lat\":\(lat),\"lon\":\(lon),\"time\":\(time),\"accuracy\":5}"
                    : "{\"_type\":\"location\",\"tid\":\"d\(d % 100)\",\"lat\":\(lat),\"lon\":\(lon),\"tst\":\(time),\"acc\":5}"
                #expect(generator.payload(device: d, step: k) == expected)
                #expect(generator.step(fixTime: time) == k)
            }
        }
    }

    /// The raw pass-through's topics are as long and as deep as the feed's, but outside its
    /// filter, so a gateway kept running between the phases does not take them.
    @Test func rawTopicsAreOutsideTheFeed() throws {
        for format in [PayloadFormat.json, .owntracks] {
            let generator = LoadGenerator(devices: 3, fences: [], format: format, baseTime: 1_796_040_000)
            let feed = try TopicFilter(generator.topicFilter), raw = try TopicFilter(generator.rawTopicFilter)
            for (topic, rawTopic) in zip(generator.topics, generator.rawTopics) {
                #expect(rawTopic.utf8.count == topic.utf8.count && rawTopic.split(separator: "/").count == topic.split(separator: "/").count)
                #expect(feed.deviceID(in: topic) != nil && feed.deviceID(in: rawTopic) == nil)
                #expect(raw.deviceID(in: rawTopic) != nil)
            }
        }
    }
}
