import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

/// Where the CPU time went while a benchmark's load ran, from /proc: how busy the machine's
/// cores were, and how long the broker's and the gateway's threads ran and how long they waited
/// runnable for a core (`/proc/PID/task/TID/schedstat`). `bench e2e` names the bottleneck
/// from it when a target is missed.
struct LoadProfile: Sendable {
    /// Cores' worth of time: CPU seconds per second of the load.
    struct Share: Sendable, Equatable {
        var run: Double
        /// Runnable but not running: every core was busy with something else.
        var wait: Double
    }

    var seconds: Double
    var cores: Int
    /// The share of all cores' time that was busy (neither idle nor waiting for I/O).
    var machineBusy: Double
    /// The share of all cores' time the hypervisor gave to other machines.
    var steal: Double
    /// nil when the broker was not started by the benchmark.
    var broker: Share?
    /// The gateway's MQTT network threads (`mqtt-network`), which read, decode and evaluate
    /// every update, and its other threads (commits, outbox, timers); nil in the raw phase.
    var network: Share?
    var gatewayOther: Share?
    /// The benchmark process: the load generator and the subscribers.
    var bench: Double

    /// The figures of one moment, subtracted from a later one by ``init(from:to:)``.
    struct Snapshot {
        var time: Double
        /// /proc/stat's first line: busy, all (idle and I/O wait included) and stolen ticks.
        var machine: (busy: Double, all: Double, steal: Double)
        /// Thread id -> name, run and wait nanoseconds.
        var gateway: [Int32: (name: String, run: Double, wait: Double)]
        var broker: Share?
        var benchCPU: Double

        /// Busy, all and stolen ticks from /proc/stat's `cpu` line (user nice system idle iowait
        /// irq softirq steal ...; guest time is counted in user already).
        static func machineTicks(_ stat: String) -> (busy: Double, all: Double, steal: Double) {
            guard let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return (0, 0, 0) }
            let t = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
            guard t.count == 8 else { return (0, 0, 0) }
            let all = t.reduce(0, +)
            return (busy: all - t[3] - t[4], all: all, steal: t[7])
        }

        /// Every thread of `pid`: its name and its run and wait nanoseconds.
        static func threads(of pid: pid_t) -> [Int32: (name: String, run: Double, wait: Double)] {
            let task = "/proc/\(pid)/task"
            var threads: [Int32: (name: String, run: Double, wait: Double)] = [:]
            for id in ThreadPriorities.threads(of: "\(pid)") {
                guard let times = ChildProcess.read("\(task)/\(id)/schedstat").flatMap(schedstat) else { continue }
                let name = ChildProcess.read("\(task)/\(id)/comm").map { String($0.prefix { $0 != "\n" }) } ?? ""
                threads[id] = (name, times.run, times.wait)
            }
            return threads
        }

        /// Run and wait nanoseconds from a schedstat line ("run wait timeslices").
        static func schedstat(_ text: String) -> (run: Double, wait: Double)? {
            let fields = text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
            return fields.count >= 2 ? (fields[0], fields[1]) : nil
        }
    }

    /// The machine counts as saturated from this share of its cores' time.
    static let saturated = 0.9
    /// A single thread counts as saturated from this share of a core.
    static let threadSaturated = 0.9

    /// The figures in one line.
    var summary: String {
        let f = EndToEndBenchmark.format
        func share(_ s: Share) -> String { "ran \(f(s.run, 2)), waited \(f(s.wait, 2))" }
        var parts = ["\(cores) cores \(Self.percent(machineBusy)) busy (\(Self.percent(steal)) stolen)"]
        if let broker { parts.append("broker \(share(broker))") }
        if let network { parts.append("gateway network thread \(share(network))") }
        if let gatewayOther { parts.append("other gateway threads \(share(gatewayOther))") }
        parts.append("bench ran \(f(bench, 2))")
        return parts.joined(separator: "; ") + " (cores' worth over \(f(seconds, 1)) s)"
    }

    /// What limited the run, in one sentence: the first of the machine's cores, the gateway's
    /// network thread and the broker that was saturated.
    var bottleneck: String {
        let f = EndToEndBenchmark.format
        let waiting = network.map { " The gateway's network thread waited for a core \(Self.percent($0.wait)) of the time." } ?? ""
        if machineBusy >= Self.saturated {
            var users: [String] = []
            if let broker { users.append("the broker \(f(broker.run, 2))") }
            if let network, let gatewayOther { users.append("the gateway \(f(network.run + gatewayOther.run, 2))") }
            users.append("the load generator and subscribers \(f(bench, 2))")
            return "the machine: its \(cores) cores were \(Self.percent(machineBusy)) busy (cores' worth: \(users.joined(separator: ", ")))."
                + waiting
        }
        if let network, network.run >= Self.threadSaturated {
            return "the gateway's network thread, which reads, decodes and evaluates every update: it ran \(Self.percent(network.run)) of a core."
        }
        if let broker, broker.run >= Self.threadSaturated {
            return "the broker, which runs on one thread: it ran \(Self.percent(broker.run)) of a core."
        }
        return "no core was saturated (the machine was \(Self.percent(machineBusy)) busy)." + waiting
    }

    /// A share as a whole percentage ("34 %").
    static func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }

    var json: JSONValue {
        func share(_ s: Share?) -> JSONValue { s.map { .object(["run": .number($0.run), "wait": .number($0.wait)]) } ?? .null }
        return .object([
            "seconds": .number(seconds), "cores": .number(Double(cores)), "machineBusy": .number(machineBusy),
            "steal": .number(steal), "broker": share(broker), "network": share(network),
            "gatewayOther": share(gatewayOther), "bench": .number(bench), "bottleneck": .string(bottleneck),
        ])
    }
}

extension LoadProfile {
    /// The profile between two snapshots. A thread that ended in between is left out; one
    /// that started counts from zero.
    init(from start: Snapshot, to end: Snapshot, cores: Int = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) {
        seconds = max(1e-9, end.time - start.time)
        self.cores = cores
        let all = max(1, end.machine.all - start.machine.all)
        machineBusy = (end.machine.busy - start.machine.busy) / all
        steal = (end.machine.steal - start.machine.steal) / all
        let perSecond = 1e9 * seconds
        if let b0 = start.broker, let b1 = end.broker {
            broker = Share(run: (b1.run - b0.run) / perSecond, wait: (b1.wait - b0.wait) / perSecond)
        }
        if !end.gateway.isEmpty {
            var network = Share(run: 0, wait: 0), other = Share(run: 0, wait: 0)
            for (id, thread) in end.gateway {
                let before = start.gateway[id]
                let run = (thread.run - (before?.run ?? 0)) / perSecond
                let wait = (thread.wait - (before?.wait ?? 0)) / perSecond
                if thread.name == "mqtt-network" {
                    network.run += run
                    network.wait += wait
                } else {
                    other.run += run
                    other.wait += wait
                }
            }
            self.network = network
            gatewayOther = other
        }
        bench = (end.benchCPU - start.benchCPU) / seconds
    }
}

extension LoadProfile {
    /// Several phases' profiles as one, each figure averaged over their seconds (nil when there
    /// are none).
    init?(pooling profiles: [LoadProfile]) {
        guard let first = profiles.first else { return nil }
        let seconds = profiles.reduce(0) { $0 + $1.seconds }
        func mean(_ value: (LoadProfile) -> Double) -> Double { profiles.reduce(0) { $0 + value($1) * $1.seconds } / seconds }
        func share(_ part: (LoadProfile) -> Share?) -> Share? {
            guard profiles.allSatisfy({ part($0) != nil }) else { return nil }
            return Share(run: mean { part($0)!.run }, wait: mean { part($0)!.wait })
        }
        self.seconds = seconds
        cores = first.cores
        machineBusy = mean(\.machineBusy)
        steal = mean(\.steal)
        broker = share(\.broker)
        network = share(\.network)
        gatewayOther = share(\.gatewayOther)
        bench = mean(\.bench)
    }
}

extension LoadProfile.Snapshot {
    /// Reads /proc for `gateway` and `broker` (either may be absent).
    init(gateway: pid_t?, broker: pid_t?) {
        time = MonotonicClock.now()
        machine = ChildProcess.read("/proc/stat").map(Self.machineTicks) ?? (0, 0, 0)
        self.gateway = gateway.map(Self.threads) ?? [:]
        self.broker = broker.map { pid in
            Self.threads(of: pid).values.reduce(LoadProfile.Share(run: 0, wait: 0)) { LoadProfile.Share(run: $0.run + $1.run, wait: $0.wait + $1.wait) }
        }
        benchCPU = ResourceUsage.cpuSeconds()
    }
}
