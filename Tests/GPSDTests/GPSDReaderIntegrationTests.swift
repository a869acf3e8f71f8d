import Foundation
import GPSD
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// GPSDReader against a real gpsd fed by gpsfake on a free loopback port. The reader starts
/// first (gpsfake writes its log whether or not anyone listens); each log is led in by ~1.5 s
/// without a fix, which gpsd's device activation partly discards (see `GPSFake`).
@Suite(.serialized) struct GPSDReaderIntegrationTests {
    static func configuration(port: Int, initialBackoff: Double = 0.05, maximumBackoff: Double = 0.4)
        -> GPSDReader.Configuration
    {
        GPSDReader.Configuration(
            host: "127.0.0.1", port: port, initialBackoff: initialBackoff,
            maximumBackoff: maximumBackoff, pollInterval: 0.1)
    }

    /// Stops the reader and checks the stream finishes, not hanging in a read or a backoff.
    /// The reader's thread ends within `pollInterval` + `maximumBackoff` (0.5 s); the bound also
    /// covers the consumer task draining what it had not read yet, which on 2 loaded cores
    /// (other suites running beside this one, their process tests holding the 2-thread
    /// cooperative pool) has taken 22 s. It tells a stop from a hang, nothing finer.
    static func stop(_ reader: GPSDReader, _ consumer: Task<Void, Never>) async {
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            reader.stop()
            await consumer.value
        }
        #expect(elapsed < .seconds(60), "stop() took \(elapsed)")
    }

    struct Replay {
        var events: [GPSDEvent]
        var fixes: [GPSFix]
        var validRMCs: [NMEALog.Position]
        var last: NMEALog.Position
    }

    /// Plays a real log once and returns what the reader yielded up to its last valid fix.
    func replay(_ name: String, cycle: Double) async throws -> Replay {
        let fixture = Fixtures.nmea(name)
        let nmea = try NMEALog(fixture)
        let last = try #require(nmea.lastValidPosition, "\(name) has no valid fix")
        let log = try Fixtures.temporaryLog([
            .text(Fixtures.leadIn(seconds: 1.5, cycle: cycle)), .file(fixture),
        ])
        defer { try? FileManager.default.removeItem(at: log) }
        let port = try GPSFake.freePort()
        let reader = GPSDReader(configuration: Self.configuration(port: port))
        let (recorder, consumer) = EventRecorder.consuming(reader)
        reader.start()
        let fake = try GPSFake(log: log, port: port, cycle: cycle)
        let deadline = Double(nmea.sentenceCount + 40) * cycle * 2 + 30
        let reachedEnd = await recorder.wait(timeout: deadline) { events in
            events.contains { if case .fix(let fix) = $0 { last.matches(fix) } else { false } }
        }
        let diagnostics = fake.diagnostics
        await fake.stop()
        await Self.stop(reader, consumer)
        #expect(!GPSFake.children(of: fake.pid, named: "gpsd").contains { GPSFake.isAlive($0) })
        let events = await recorder.events
        #expect(reachedEnd, "\(name): no fix at the log's last valid position \(last); gpsfake said: \(diagnostics)")
        let fixes = events.compactMap { if case .fix(let fix) = $0 { fix } else { nil } }
        #expect(events.first { !$0.isDisconnected } == .connected)
        // One fix per epoch. (Times need not increase: telit-he910.log itself steps back from
        // 10:51:53.71 to 10:51:53.408; ordering is the engine's job.)
        #expect(zip(fixes, fixes.dropFirst()).allSatisfy { $0.time != $1.time }, "repeated fix time")
        return Replay(events: events, fixes: fixes, validRMCs: nmea.validRMCs, last: last)
    }

    /// The moving boat: 146 valid RMC among ~17 sentences a second (so many TPVs per epoch).
    @Test func realBoatLogGivesOneFixPerValidRMC() async throws {
        let replay = try await replay("bundg_zeus_9.log", cycle: 0.01)
        #expect(abs(replay.fixes.count - replay.validRMCs.count) <= 2,
                "fixes \(replay.fixes.count), valid RMC \(replay.validRMCs.count)")
        let first = try #require(replay.fixes.first)
        let firstRMC = try #require(replay.validRMCs.first)
        #expect(firstRMC.matches(first), "first fix \(first) vs first valid RMC \(firstRMC)")
        let last = try #require(replay.fixes.last)
        #expect(replay.last.matches(last), "last fix \(last) vs \(replay.last)")
        #expect(first.speed != nil && first.track != nil)
        // 2018 fix times against today's clock: one warning, and the fixes still came.
        #expect(replay.events.filter(\.isClockSkew).count == 1)
    }

    /// A static receiver that starts without a fix: `.noFix` first, then every valid epoch.
    @Test func realLogWithoutThenWithFix() async throws {
        let replay = try await replay("telit-he910.log", cycle: 0.02)
        #expect(abs(replay.fixes.count - replay.validRMCs.count) <= 2,
                "fixes \(replay.fixes.count), valid RMC \(replay.validRMCs.count)")
        let first = try #require(replay.fixes.first)
        let firstRMC = try #require(replay.validRMCs.first)
        #expect(firstRMC.matches(first), "first fix \(first) vs first valid RMC \(firstRMC)")
        let last = try #require(replay.fixes.last)
        let lastRMC = try #require(replay.validRMCs.last)
        #expect(lastRMC.matches(last), "last fix \(last) vs last valid RMC \(lastRMC)")
        let noFix = try #require(replay.events.firstIndex(of: .noFix), "no .noFix before the first fix")
        let firstFix = try #require(replay.events.firstIndex { $0.isFix })
        #expect(noFix < firstFix)
        let skews = replay.events.compactMap { if case .clockSkew(let seconds) = $0 { seconds } else { nil } }
        #expect(skews.count == 1)
        #expect((skews.first ?? 0) < -300, "2019 fix times are behind the system clock")
    }

    /// A walk of a few metres (SiRF-II). gpsd 3.22 reports the log's first valid epoch
    /// (09:53:04.802, the first after a no-fix period) without a time, or not at all: no fix for
    /// the reader, so the first fix is the second valid RMC.
    @Test func realWalkingLog() async throws {
        let replay = try await replay("haicom-305N.log", cycle: 0.05)
        #expect(abs(replay.fixes.count - replay.validRMCs.count) <= 2,
                "fixes \(replay.fixes.count), valid RMC \(replay.validRMCs.count)")
        let first = try #require(replay.fixes.first)
        #expect(replay.validRMCs.count > 1 && replay.validRMCs[1].matches(first),
                "first fix \(first) vs second valid RMC \(replay.validRMCs.dropFirst().first.map { "\($0)" } ?? "-")")
        let last = try #require(replay.fixes.last)
        let lastRMC = try #require(replay.validRMCs.last)
        #expect(lastRMC.matches(last), "last fix \(last) vs last valid RMC \(lastRMC)")
        #expect(replay.events.contains(.noFix))
    }

    /// A log without any fix (11:00:00-11:00:20) gives `.noFix` and no `.fix`; the fixes of a
    /// log played after it (from 12:00:00) mark the end, so the test knows gpsd read it all.
    /// gpsd 3.22 sends the first fixed epoch after a no-fix period without a time, which is no
    /// fix for the reader: the first fix is the 12:00:00 or (usually) the 12:00:01 epoch.
    @Test func logWithoutFixGivesNoFixOnly() async throws {
        let noFix = try NMEALog(Fixtures.nmea("no_fix.log"))
        #expect(noFix.validRMCs.isEmpty && noFix.lastValidPosition == nil)
        let after = try NMEALog(Fixtures.nmea("example_line.log"))
        let sentinels = Array(after.validRMCs.prefix(2))
        let cycle = 0.05
        let log = try Fixtures.temporaryLog([
            .text(Fixtures.leadIn(seconds: 1.5, cycle: cycle)), .file(Fixtures.nmea("no_fix.log")),
            .file(Fixtures.nmea("example_line.log")),
        ])
        defer { try? FileManager.default.removeItem(at: log) }
        let port = try GPSFake.freePort()
        let reader = GPSDReader(configuration: Self.configuration(port: port))
        let (recorder, consumer) = EventRecorder.consuming(reader)
        reader.start()
        let fake = try GPSFake(log: log, port: port, cycle: cycle)
        let sawFix = await recorder.wait(timeout: 60) { $0.contains { $0.isFix } }
        let diagnostics = fake.diagnostics
        await fake.stop()
        await Self.stop(reader, consumer)
        #expect(sawFix, "the fixes after the no-fix log never came; gpsfake said: \(diagnostics)")
        let events = await recorder.events
        let firstFixIndex = try #require(events.firstIndex { $0.isFix })
        let beforeFix = events[..<firstFixIndex]
        #expect(beforeFix.contains(.noFix), "no .noFix while the receiver had no fix: \(beforeFix)")
        guard case .fix(let firstFix) = events[firstFixIndex] else { return }
        #expect(sentinels.contains { $0.matches(firstFix) },
                "first fix \(firstFix) should be one of the first epochs after the no-fix log, \(sentinels)")
    }

    /// gpsd killed mid-run (SIGKILL) and a new one started on the same port: the reader yields
    /// `.disconnected`, reconnects by itself, and fixes resume.
    @Test func reconnectsWhenGpsdRestarts() async throws {
        let cycle = 0.05
        let example = try NMEALog(Fixtures.nmea("example_line.log"))
        let last = try #require(example.validRMCs.last)
        let log = try Fixtures.temporaryLog([
            .text(Fixtures.leadIn(seconds: 1.5, cycle: cycle)), .file(Fixtures.nmea("example_line.log")),
        ])
        defer { try? FileManager.default.removeItem(at: log) }
        let port = try GPSFake.freePort()
        let reader = GPSDReader(configuration: Self.configuration(port: port))
        let (recorder, consumer) = EventRecorder.consuming(reader)
        reader.start()

        let first = try GPSFake(log: log, port: port, cycle: cycle)
        let firstDaemon = await first.waitForDaemon()
        let gotFixes = await recorder.wait(timeout: 60) { $0.filter(\.isFix).count >= 3 }
        let seen = await recorder.summary
        let kernel = "\(KernelView.threads(named: "gpsd-reader")); \(KernelView.tcpSockets(port: port))"
        #expect(gotFixes, "no fixes from the first gpsd; gpsfake said: \(first.diagnostics); reader saw: \(seen); \(kernel)")
        await first.killDaemon()
        #expect(firstDaemon.map { !GPSFake.isAlive($0) } ?? false, "the first gpsd is still running")
        let lostIt = await recorder.wait(timeout: 10) { events in
            guard let lastFix = events.lastIndex(where: \.isFix) else { return false }
            return events[lastFix...].contains(where: \.isDisconnected)
        }
        #expect(lostIt, "no .disconnected after gpsd was killed; \(KernelView.threads(named: "gpsd-reader")); \(KernelView.tcpSockets(port: port))")
        let afterFixes = await recorder.events.reversed().prefix { !$0.isFix }.reversed()
        let loss = afterFixes.lazy.compactMap { if case .disconnected(let error) = $0 { error } else { nil } }.first
        #expect(loss?.message == "connection closed by gpsd", "the lost connection reads \(loss.map { "\($0)" } ?? "nothing")")
        let fixesBefore = await recorder.fixes.count
        #expect(fixesBefore < example.validRMCs.count, "the first replay must be cut short")

        let second = try GPSFake(log: log, port: port, cycle: cycle)
        let resumed = await recorder.wait(timeout: 60) { events in
            guard let reconnect = events.indices.filter({ events[$0].isConnected }).dropFirst().first else {
                return false
            }
            return events[reconnect...].contains { if case .fix(let fix) = $0 { last.matches(fix) } else { false } }
        }
        let diagnostics = second.diagnostics
        let kernelAfterRestart = "\(KernelView.threads(named: "gpsd-reader")); \(KernelView.tcpSockets(port: port))"
        await second.stop()
        await Self.stop(reader, consumer)
        let events = await recorder.events
        // What the reader saw, for a failure (it fails rarely under load, with the reader
        // reconnected and no fix after it).
        let afterRestart = events.indices.filter { events[$0].isConnected }.dropFirst().first.map {
            events[$0...].suffix(12).map { "\($0)" }.joined(separator: "; ")
        } ?? "no second connection"
        let seenInAll = await recorder.summary
        let sawAfterRestart = "reader saw from its second connection: \(afterRestart); in all: \(seenInAll); \(kernelAfterRestart)"
        #expect(resumed, "fixes did not resume after gpsd restarted; gpsfake said: \(diagnostics); \(sawAfterRestart)")
        #expect(events.filter(\.isConnected).count == 2)
        let reconnect = events.indices.filter { events[$0].isConnected }.dropFirst().first ?? events.endIndex
        #expect(events[reconnect...].filter(\.isFix).count >= example.validRMCs.count - 12,
                "most of the second replay's \(example.validRMCs.count) fixes")
    }

    /// No gpsd at start: `.disconnected` after each attempt, with growing waits between them,
    /// then a connection as soon as gpsd appears.
    @Test func retriesWithBackoffUntilGpsdAppears() async throws {
        let port = try GPSFake.freePort()
        let reader = GPSDReader(
            configuration: Self.configuration(port: port, initialBackoff: 0.1, maximumBackoff: 0.8))
        let (recorder, consumer) = EventRecorder.consuming(reader)
        reader.start()
        let retried = await recorder.wait(timeout: 20) { $0.filter(\.isDisconnected).count >= 5 }
        #expect(retried)
        let entries = await recorder.entries
        #expect(!entries.contains { $0.event.isConnected })
        let failures = entries.filter { $0.event.isDisconnected }
        for failure in failures {
            guard case .disconnected(let error) = failure.event else { continue }
            #expect(error.code == -6 && error.call == "gps_open(127.0.0.1:\(port))", "\(error)")
        }
        if failures.count >= 5 {
            let firstGap = failures[0].at.duration(to: failures[1].at)
            let laterGap = failures[3].at.duration(to: failures[4].at)
            #expect(laterGap > firstGap * 3, "backoff should grow: \(firstGap) then \(laterGap)")
            #expect(laterGap < .seconds(3), "backoff capped near 0.8 s: \(laterGap)")
        }

        let cycle = 0.05
        let example = try NMEALog(Fixtures.nmea("example_line.log"))
        let log = try Fixtures.temporaryLog([
            .text(Fixtures.leadIn(seconds: 1.5, cycle: cycle)), .file(Fixtures.nmea("example_line.log")),
        ])
        defer { try? FileManager.default.removeItem(at: log) }
        let fake = try GPSFake(log: log, port: port, cycle: cycle)
        let connected = await recorder.wait(timeout: 30) { events in
            events.contains(where: \.isConnected) && events.contains(where: \.isFix)
        }
        let diagnostics = fake.diagnostics
        await fake.stop()
        await Self.stop(reader, consumer)
        #expect(connected, "never connected once gpsd ran; gpsfake said: \(diagnostics)")
        let fixes = await recorder.fixes
        let firstRMC = try #require(example.validRMCs.first)
        if let first = fixes.first {
            #expect(firstRMC.matches(first), "first fix \(first) vs \(firstRMC)")
            // A fix whose epoch's HDOP came later than the tracker's settle time (a loaded
            // machine) goes out without accuracy; the next ones have it.
            #expect(fixes.prefix(5).contains { $0.accuracy != nil }, "gpsd's eph from HDOP gives an accuracy: \(fixes.prefix(5))")
        }
    }
}
