import Foundation
import GeotriggerCore
import Testing

@testable import Gateway

/// The `track` reply for several devices as bytes (``TrackPartsWriter``): its members, the byte
/// budget, and parts that each stay under `partBytes` and read back, joined, as the one-message
/// reply.
struct TrackPartsWriterTests {
    static func read(_ bytes: [UInt8]) throws -> JSONObject {
        try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
    }

    /// `count` positions a minute apart from 2026-12-07T12:00:00Z, in micro-degrees as the
    /// track store keeps them.
    static func positions(_ count: Int, lat: Double = 40.7) -> [RecentTrack.Position] {
        (0..<count).map {
            RecentTrack.Position(lat: (lat * 1e6 + Double($0) * 100) / 1e6, lon: -73.9, time: 1_796_644_800 + Double($0) * 60)
        }
    }

    /// Writes `tracks` (nil: an unknown device) until the budget stops it; returns the messages
    /// and how many positions were written.
    static func write(_ tracks: [(String, [RecentTrack.Position]?)], budget: Int = FeatureCollectionWriter.replyBudget,
                      partBytes: Int? = nil) -> (messages: [[UInt8]], positions: Int) {
        var writer = TrackPartsWriter(budget: budget, partBytes: partBytes, appended: 30)
        var truncated = false
        devices: for (device, positions) in tracks {
            guard let positions else {
                guard writer.unknown(device: device) else { truncated = true; break }
                continue
            }
            guard writer.begin(device: device) else { truncated = true; break }
            for p in positions {
                guard writer.append(p) else {
                    writer.end()
                    truncated = true
                    break devices
                }
            }
            writer.end()
        }
        let written = writer.positions
        return (writer.finishParts(truncated: truncated), written)
    }

    /// The entries of `messages` read in order, those of one device in a row joined: device ->
    /// [time], or nil for unknown; with the order of devices.
    static func joined(_ messages: [[UInt8]]) throws -> [(device: String, times: [Double]?)] {
        var out: [(device: String, times: [Double]?)] = []
        for message in messages {
            for entry in try #require(try read(message)["tracks"]?.arrayValue) {
                let object = try #require(entry.objectValue)
                let device = try #require(object["device"]?.stringValue)
                guard object["unknown"] != .bool(true) else {
                    out.append((device, nil))
                    continue
                }
                let times = try #require(object["positions"]?.arrayValue).map {
                    ISO8601Time.parse($0.objectValue?["time"]?.stringValue ?? "") ?? .nan
                }
                if let last = out.last, last.device == device, let held = last.times {
                    out[out.count - 1].times = held + times
                } else {
                    out.append((device, times))
                }
            }
        }
        return out
    }

    @Test func oneMessageListsEachDeviceInOrderAndTheUnknownOnes() throws {
        let (messages, written) = Self.write([("v2", Self.positions(2)), ("ghost", nil), ("v1", [])])
        #expect(messages.count == 1 && written == 2)
        #expect(String(decoding: messages[0], as: UTF8.self) == #"{"tracks":[{"device":"v2","positions":["#
            + #"{"lat":40.7,"lon":-73.9,"time":"2026-12-07T12:00:00Z"},{"lat":40.7001,"lon":-73.9,"time":"2026-12-07T12:01:00Z"}]},"#
            + #"{"device":"ghost","unknown":true},{"device":"v1","positions":[]}],"truncated":false}"#)
    }

    /// Parts of at most `partBytes` (with what each carries beside), a device's positions
    /// running on across parts, all of them joined equal to the one message.
    @Test func partsStayUnderTheirSizeAndJoinToTheOneMessage() throws {
        let tracks: [(String, [RecentTrack.Position]?)] = [
            ("walker-1", Self.positions(130)), ("ghost", nil), ("walker-2", Self.positions(3, lat: 1)), ("walker-3", Self.positions(70, lat: -3)),
        ]
        let one = Self.write(tracks)
        let parts = Self.write(tracks, partBytes: 1024)
        #expect(one.positions == 203 && parts.positions == 203)
        #expect(parts.messages.count > 10, "\(parts.messages.count) parts")
        for (i, part) in parts.messages.enumerated() {
            #expect(part.count + 30 <= 1024, "part \(i + 1): \(part.count) bytes")
            let object = try Self.read(part)
            #expect(object["part"] == .number(Double(i + 1)) && object["parts"] == .number(Double(parts.messages.count)))
            #expect(object["truncated"] == .bool(false))
        }
        let joined = try Self.joined(parts.messages)
        let single = try Self.joined(one.messages)
        #expect(joined.map(\.device) == ["walker-1", "ghost", "walker-2", "walker-3"])
        #expect(joined.map(\.device) == single.map(\.device) && zip(joined, single).allSatisfy { $0.times == $1.times })
        #expect(joined[0].times == Self.positions(130).map(\.time))
    }

    /// The budget stops at the position that would pass it, in one message or in parts: what
    /// was written is the start of the whole, in order, and it says truncated.
    @Test func theBudgetStopsAtAPositionAndSaysTruncated() throws {
        let tracks: [(String, [RecentTrack.Position]?)] = [("a", Self.positions(100)), ("b", Self.positions(100)), ("c", Self.positions(100))]
        for partBytes in [nil, 1500] {
            let (messages, written) = Self.write(tracks, budget: 9_000, partBytes: partBytes)
            #expect(written > 50 && written < 300, "\(written) positions")
            #expect(messages.reduce(0) { $0 + $1.count + 30 } <= 9_000)
            for message in messages { #expect(try Self.read(message)["truncated"] == .bool(true)) }
            let joined = try Self.joined(messages)
            let times = joined.flatMap { $0.times ?? [] }
            #expect(times.count == written)
            #expect(joined.first?.times?.prefix(written) == Self.positions(100).map(\.time).prefix(min(written, 100))[...])
        }
    }
}
