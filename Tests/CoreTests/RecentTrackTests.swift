import Foundation
import Testing
@testable import GeotriggerCore

/// ``RecentTrack``: the console's recent track of a device (docs/console.md): thinned to one
/// position per 10 s of fix time, nothing for a parked device, a day kept, a few bytes a
/// position, paged oldest first.
@Suite struct RecentTrackTests {
    static let t0 = 1_780_000_000.0
    /// Metres north and east of a point in Santa Barbara, as a coordinate.
    static func at(north: Double, east: Double) -> Coordinate {
        Coordinate(lat: 34.45 + north / 111_195, lon: -119.70 + east / (111_195 * cos(34.45 * .pi / 180)))
    }

    @Test func aDriveIsThinnedToOnePositionPerTenSecondsOfFixTime() {
        var track = RecentTrack()
        // 15 m/s east, a fix every 3 s for 10 minutes (and one out of order).
        var kept: [Double] = []
        for k in 0...200 {
            let time = Self.t0 + Double(k) * 3
            if track.record(Self.at(north: 0, east: Double(k) * 45), time: time, accuracy: 5) { kept.append(time - Self.t0) }
        }
        let late = track.record(Self.at(north: 0, east: 0), time: Self.t0 + 1, accuracy: 5)
        #expect(!late)
        // 0, 12, 24, ...: each the first fix at least 10 s after the one kept before.
        #expect(kept == Array(stride(from: 0.0, through: 600, by: 12)))
        let (positions, more) = track.positions(since: Self.t0)
        #expect(!more && positions.map { $0.time - Self.t0 } == kept)
        // Each within 0.2 m of its fix (millionths of a degree).
        for (position, offset) in zip(positions, kept) {
            let fix = Self.at(north: 0, east: offset / 3 * 45)
            #expect(Earth.distance(Coordinate(lat: position.lat, lon: position.lon), fix) < 0.2)
        }
    }

    @Test func aParkedDeviceAddsNothingWhileItsJitterStaysWithinItsAccuracy() {
        var track = RecentTrack()
        var rng = SystemRandomNumberGenerator()
        for k in 0..<3600 {
            let jitter = Self.at(north: Double.random(in: -6...6, using: &rng), east: Double.random(in: -6...6, using: &rng))
            track.record(jitter, time: Self.t0 + Double(k), accuracy: 20)
        }
        #expect(track.count == 1)
        // It drives off: kept again.
        let drove = track.record(Self.at(north: 0, east: 300), time: Self.t0 + 3600, accuracy: 20)
        #expect(drove)
    }

    @Test func aDayIsKeptAndOlderChunksLeave() {
        var track = RecentTrack()
        for k in 0..<(2 * 8640) {  // two days, a fix every 10 s, driving to and fro
            track.record(Self.at(north: 0, east: Double(k % 200) * 100), time: Self.t0 + Double(k) * 10, accuracy: 5)
        }
        let now = Self.t0 + 2 * 86_400
        let before = track.count
        let freed = track.expire(now: now)
        #expect(freed > 0 && track.count < before)
        let oldest = try! #require(track.oldestTime)
        // Whole chunks leave: at most one chunk's positions from before the day.
        #expect(oldest >= now - RecentTrack.window - Double(RecentTrack.chunkCapacity) * 10)
        #expect(track.positions(since: now - RecentTrack.window).positions.first!.time >= now - RecentTrack.window)
        let rest = track.expire(now: now + 2 * 86_400)
        #expect(rest > 0 && track.count == 0)
    }

    /// 1,000 devices reporting every 10 s for a day must stay under 100 MB together: a van
    /// driving round a 5 km loop at 15 m/s all day; and one whose fixes jump 5 km every 20th
    /// fix and back (a glitching receiver), each jump 18 bytes.
    @Test func aDayOfTenSecondPositionsTakesAbout57KB() {
        for jumps in [false, true] {
            var track = RecentTrack()
            for k in 0..<8640 {
                let angle = Double(k) * 150 / 5000 * 2 * .pi
                let north = 800 * sin(angle) + (jumps && k % 20 == 0 ? 5000 : 0), east = 800 * cos(angle)
                track.record(Self.at(north: north, east: east), time: Self.t0 + Double(k) * 10, accuracy: 5)
            }
            print("recent track\(jumps ? " with jumps" : ""): \(track.count) positions in \(track.bytes) bytes (\(Double(track.bytes) / Double(track.count)) bytes a position); 1,000 devices: \(track.bytes * 1000 / 1_000_000) MB")
            #expect(track.count == 8640)
            #expect(track.bytes * 1000 < 100_000_000)
        }
    }

    @Test func longStepsAndLongGapsStartANewChunkAndReadBackExactly() {
        var track = RecentTrack()
        let fixes: [(Coordinate, Double)] = [
            (Self.at(north: 0, east: 0), 0), (Self.at(north: 10_000, east: 0), 10),  // 10 km: past Int16
            (Self.at(north: 10_000, east: 50), 8_000),  // past 6,553 s
            (Coordinate(lat: -33.87, lon: 151.21), 8_020),  // the other side of the world
        ]
        for (coordinate, offset) in fixes {
            let kept = track.record(coordinate, time: Self.t0 + offset, accuracy: nil)
            #expect(kept)
        }
        let positions = track.positions(since: 0).positions
        #expect(positions.count == 4)
        for (position, (coordinate, offset)) in zip(positions, fixes) {
            #expect(abs(position.lat - coordinate.lat) < 1e-6 && abs(position.lon - coordinate.lon) < 1e-6)
            #expect(abs(position.time - (Self.t0 + offset)) < 0.06)
        }
    }

    @Test func pagesCoverEveryPositionOnceInOrder() {
        var track = RecentTrack()
        for k in 0..<1000 { track.record(Self.at(north: Double(k) * 20, east: 0), time: Self.t0 + Double(k) * 10, accuracy: 5) }
        var all: [RecentTrack.Position] = []
        var offset = 0
        while true {
            let page = track.positions(since: Self.t0 + 2000, offset: offset, limit: 97)
            all += page.positions
            offset += page.positions.count
            if !page.more { break }
        }
        #expect(all.count == 800 && all.first!.time == Self.t0 + 2000)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.time + 10 == $1.time })
        // Over a budget the oldest chunk goes first.
        let bytes = track.bytes
        let dropped = track.dropOldestChunk()
        #expect(dropped > 0 && track.bytes < bytes && track.oldestTime! > Self.t0)
    }
}
