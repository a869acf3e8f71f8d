import Foundation
@testable import Benchmarks
import Gateway
import Testing

/// `bench e2e`'s load profile: the figures it takes from /proc and the bottleneck it names.
@Suite struct LoadProfileTests {
    typealias Snapshot = LoadProfile.Snapshot
    typealias Share = LoadProfile.Share

    @Test func procFilesAreParsed() {
        let stat = "cpu  100 20 30 400 50 6 4 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
        let ticks = Snapshot.machineTicks(stat)
        #expect(ticks.all == 620)
        #expect(ticks.busy == 170)  // all but idle (400) and I/O wait (50)
        #expect(ticks.steal == 10)
        #expect(Snapshot.machineTicks("intr 1 2 3").all == 0)
        #expect(Snapshot.schedstat("633145 2000 17\n").map { [$0.run, $0.wait] } == [633145, 2000])
        #expect(Snapshot.schedstat("") == nil)
    }

    func close(_ a: Share?, _ b: Share) -> Bool {
        guard let a else { return false }
        return abs(a.run - b.run) < 1e-9 && abs(a.wait - b.wait) < 1e-9
    }

    @Test func threadsAreSplitIntoTheNetworkThreadAndTheRest() {
        let start = Snapshot(
            time: 10, machine: (busy: 100, all: 1000, steal: 0),
            gateway: [1: ("geotrigger", 5e9, 1e9), 2: ("mqtt-network", 2e9, 0), 3: ("gone", 1e9, 1e9)],
            broker: Share(run: 1e9, wait: 0), benchCPU: 3)
        let end = Snapshot(
            time: 12, machine: (busy: 460, all: 1400, steal: 40),
            gateway: [1: ("geotrigger", 5.5e9, 1.2e9), 2: ("mqtt-network", 3.6e9, 0.6e9), 4: ("store", 0.3e9, 0.2e9)],
            broker: Share(run: 2.5e9, wait: 0.2e9), benchCPU: 4)
        let profile = LoadProfile(from: start, to: end, cores: 2)
        #expect(profile.seconds == 2)
        #expect(abs(profile.machineBusy - 0.9) < 1e-12)
        #expect(abs(profile.steal - 0.1) < 1e-12)
        #expect(close(profile.network, Share(run: 0.8, wait: 0.3)))
        // Thread 1's growth and the new thread 4 from zero; thread 3 ended and is left out.
        #expect(close(profile.gatewayOther, Share(run: 0.4, wait: 0.2)))
        #expect(close(profile.broker, Share(run: 0.75, wait: 0.1)))
        #expect(profile.bench == 0.5)
        // The raw phase has no gateway.
        let raw = LoadProfile(
            from: Snapshot(time: 0, machine: (0, 0, 0), gateway: [:], broker: nil, benchCPU: 0),
            to: Snapshot(time: 1, machine: (0, 0, 0), gateway: [:], broker: nil, benchCPU: 0.5), cores: 2)
        #expect(raw.network == nil && raw.gatewayOther == nil && raw.broker == nil)
        #expect(!raw.summary.contains("gateway"))
    }

    func profile(busy: Double, network: Double, broker: Double) -> LoadProfile {
        LoadProfile(
            seconds: 10, cores: 2, machineBusy: busy, steal: 0, broker: Share(run: broker, wait: 0.05),
            network: Share(run: network, wait: 0.25), gatewayOther: Share(run: 0.1, wait: 0.5), bench: 0.36)
    }

    @Test func theBottleneckIsTheFirstSaturatedResource() {
        let machine = profile(busy: 0.97, network: 0.95, broker: 0.95).bottleneck
        #expect(machine.hasPrefix("the machine: its 2 cores were 97 % busy"))
        #expect(machine.contains("the broker 0.95, the gateway 1.05, the load generator and subscribers 0.36"))
        #expect(machine.contains("network thread waited for a core 25 % of the time"))
        #expect(profile(busy: 0.7, network: 0.95, broker: 0.95).bottleneck.hasPrefix("the gateway's network thread"))
        #expect(profile(busy: 0.7, network: 0.5, broker: 0.92).bottleneck.hasPrefix("the broker, which runs on one thread: it ran 92 %"))
        #expect(profile(busy: 0.78, network: 0.46, broker: 0.56).bottleneck.hasPrefix("no core was saturated (the machine was 78 % busy)"))
    }

    /// The report prints the bottleneck under a missed target only, and for latency what the
    /// broker alone did.
    @Test func aMissedTargetIsReportedWithItsBottleneck() throws {
        var options = EndToEndBenchmark.Options()
        options.rate = 36_000
        var raw = EndToEndBenchmark.PhaseResult()
        raw.latencies = [0.001, 0.002]
        raw.profile = profile(busy: 0.5, network: 0, broker: 0.5)
        var gateway = EndToEndBenchmark.PhaseResult()
        gateway.latencies = [0.002, 0.090]
        gateway.peakResidentBytes = 50 << 20
        gateway.profile = profile(busy: 0.78, network: 0.46, broker: 0.56)
        let report = EndToEndBenchmark.Report(options: options, fenceCount: 10, raw: raw, gateway: gateway, loadAtStart: [], loadAtEnd: [])
        let lines = report.text().split(separator: "\n").map(String.init)
        let missed = try #require(lines.firstIndex { $0.hasPrefix("  p99 event latency: 90.000 ms") && $0.hasSuffix("MISSED") })
        #expect(lines[missed + 1] == "    bottleneck: no core was saturated (the machine was 78 % busy). The gateway's network thread waited for a core 25 % of the time.")
        #expect(lines[missed + 2] == "    the broker alone had p99 2.00 ms at this rate (raw phase), with the machine 50 % busy; an event crosses the broker twice, with a commit in between.")
        let met = try #require(lines.firstIndex { $0.hasPrefix("  peak RSS:") })
        #expect(lines[met].hasSuffix(", met") && met == lines.count - 1)
        #expect(lines.filter { $0.hasPrefix("  while publishing: ") }.count == 2)
        #expect(report.json().contains(#""why":["bottleneck: no core was saturated"#))
    }

    /// `--rounds`: the phases of the rounds pooled (the rate is that of the sums, the profile
    /// averaged over the seconds), and each round's rates and ratio listed.
    @Test func roundsArePooled() throws {
        typealias Phase = EndToEndBenchmark.PhaseResult
        func phase(sent: Int, seconds: Double, latencies: [Double], busy: Double, broker: Double) -> Phase {
            var p = Phase()
            p.sent = sent
            p.received = sent
            p.completionSeconds = seconds
            p.latencies = latencies
            p.cpuSeconds = seconds / 2
            p.profile = LoadProfile(
                seconds: seconds, cores: 2, machineBusy: busy, steal: 0, broker: Share(run: broker, wait: 0.1),
                network: nil, gatewayOther: nil, bench: 0.3)
            return p
        }
        let raws = [phase(sent: 800, seconds: 10, latencies: [0.003], busy: 0.9, broker: 0.9),
                    phase(sent: 300, seconds: 5, latencies: [0.001, 0.002], busy: 0.6, broker: 0.6)]
        let gateways = [phase(sent: 700, seconds: 10, latencies: [0.002], busy: 0.9, broker: 0.8),
                        phase(sent: 330, seconds: 5, latencies: [0.004], busy: 0.9, broker: 0.5)]
        let raw = Phase(pooling: raws), gateway = Phase(pooling: gateways)
        #expect(raw.sent == 1100 && raw.received == 1100 && raw.completionSeconds == 15 && raw.cpuSeconds == 7.5)
        #expect(raw.latencies == [0.001, 0.002, 0.003])
        let profile = try #require(raw.profile)
        #expect(profile.seconds == 15 && abs(profile.machineBusy - 0.8) < 1e-12 && abs(profile.broker!.run - 0.8) < 1e-12)
        #expect(profile.network == nil)
        var unfinished = raws[1]
        unfinished.completionSeconds = nil
        #expect(Phase(pooling: [raws[0], unfinished]).rate == nil)

        var options = EndToEndBenchmark.Options()
        options.rounds = 2
        let report = EndToEndBenchmark.Report(
            options: options, fenceCount: 10, raw: raw, gateway: gateway,
            rounds: zip(raws, gateways).map { ($0.rate, $1.rate) }, loadAtStart: [], loadAtEnd: [])
        #expect(abs(try #require(report.ratio) - 1030.0 / 1100) < 1e-12)
        let lines = report.text().split(separator: "\n")
        #expect(lines.contains("rounds (raw -> gateway updates/s, ratio): 80 -> 70 0.875; 60 -> 66 1.100"))
        #expect(report.json().contains(#""rounds":[{"raw":80,"gateway":70,"ratio":0.875},{"raw":60,"gateway":66,"ratio":1.1}]"#))
    }

    /// This process, read from /proc: the calling thread has run, and the machine has ticked.
    @Test func aSnapshotOfThisProcess() {
        var spin = 0.0
        for i in 0..<200_000 { spin += Double(i).squareRoot() }
        #expect(spin > 0)
        let snapshot = Snapshot(gateway: getpid(), broker: getpid())
        #expect(snapshot.machine.all > 0)
        #expect(!snapshot.gateway.isEmpty)
        #expect(snapshot.gateway.values.contains { $0.run > 0 })
        #expect((snapshot.broker?.run ?? 0) >= snapshot.gateway.values.map(\.run).max() ?? 0)
    }
}
