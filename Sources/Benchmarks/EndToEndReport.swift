import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

extension EndToEndBenchmark {
    /// The `p` quantile (0...1) of `sorted` values (the nearest rank above), nil when empty.
    static func percentile(_ p: Double, of sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        return sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded(.up)))]
    }

    /// The figures of one run, as a text report or one JSON line, with its targets (docs/performance.md "Summary").
    struct Report {
        var options: Options
        var fenceCount: Int
        var raw: PhaseResult?
        var gateway: PhaseResult
        /// With `--rounds` above 1: each round's raw and gateway rates (the phases above are
        /// their pools).
        var rounds: [(raw: Double?, gateway: Double?)] = []
        var loadAtStart: [Double]
        var loadAtEnd: [Double]

        /// One target: the figure, the limit, their ratio and whether it is met.
        struct Target {
            var name: String
            var value: Double
            var limit: Double
            var atLeast: Bool
            var unit: String
            /// What the load profile says about it, printed when it is missed.
            var why: [String] = []
            var ratio: Double { value / limit }
            var met: Bool { atLeast ? value >= limit : value <= limit }
        }

        var ratio: Double? {
            guard let r = raw?.rate, let g = gateway.rate, r > 0 else { return nil }
            return g / r
        }

        func percentile(_ p: Double, of values: [Double]? = nil) -> Double? {
            EndToEndBenchmark.percentile(p, of: values ?? gateway.latencies)
        }

        var targets: [Target] {
            var t: [Target] = []
            if options.duration > 0 {
                let bottleneck = gateway.profile.map { ["bottleneck: \($0.bottleneck)"] } ?? []
                if options.rate == nil, let ratio {
                    t.append(Target(name: "sustained rate / raw pass-through", value: ratio, limit: 0.9, atLeast: true, unit: "", why: bottleneck))
                }
                if options.rate != nil, let p99 = percentile(0.99) {
                    var why = bottleneck
                    if let raw, let rawP99 = percentile(0.99, of: raw.latencies) {
                        why.append(
                            "the broker alone had p99 \(EndToEndBenchmark.format(rawP99 * 1000, 2)) ms at this rate (raw phase)"
                                + (raw.profile.map { ", with the machine \(LoadProfile.percent($0.machineBusy)) busy" } ?? "")
                                + "; an event crosses the broker twice, with a commit in between.")
                    }
                    t.append(Target(name: "p99 event latency", value: p99 * 1000, limit: 5, atLeast: false, unit: " ms", why: why))
                }
                t.append(Target(name: "peak RSS", value: megabytes(gateway.peakResidentBytes), limit: 64, atLeast: false, unit: " MB"))
            }
            // The idle target is for a gateway with a site's fence folder (`fences/`), not for
            // the 10,000 generated polygons, whose prepared geometry alone is ~30 MB.
            if options.fenceFolder != nil {
                t.append(Target(name: "idle RSS", value: megabytes(gateway.idleResidentBytes), limit: 20, atLeast: false, unit: " MB"))
            }
            return t
        }

        func megabytes(_ bytes: Int) -> Double { Double(bytes) / 1_048_576 }

        var warmUp: Double { EndToEndBenchmark.warmUp(options) }

        /// "; first 1 s: N events, p99 X ms, max Y ms" for `values` (the warm-up's latencies).
        func warmUpSummary(_ values: [Double], _ noun: String) -> String {
            let f = EndToEndBenchmark.format
            guard let p99 = percentile(0.99, of: values), let max = values.last else { return "" }
            return "; first \(f(warmUp, 0)) s: \(IndexBenchmark.grouped(values.count)) \(noun), p99 \(f(p99 * 1000, 2)) ms, max \(f(max * 1000, 1)) ms"
        }

        func text() -> String {
            let f = EndToEndBenchmark.format
            let g = IndexBenchmark.grouped
            var lines: [String] = []
            lines.append(
                "bench e2e: \(g(options.devices)) devices, \(g(fenceCount)) fences\(options.fenceFolder.map { " (\($0))" } ?? " (generated polygons)"), "
                    + "QoS \(options.qos.rawValue), \(options.format.rawValue), "
                    + (options.rate.map { "\(g(Int($0))) updates/s" } ?? "as fast as possible") + ", \(f(options.duration, 0)) s per phase, "
                    + "\(options.publishers) publisher connection\(options.publishers == 1 ? "" : "s"), devices \(options.lockstep ? "in lockstep" : "out of step")"
                    + (options.rounds > 1 ? ", \(options.rounds) rounds of both phases pooled" : "")
                    + (warmUp > 0 ? "; latencies after a \(f(warmUp, 0)) s warm-up" : ""))
            lines.append(
                "machine: \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, load average \(loadAtStart.map { f($0, 2) }.joined(separator: " ")) at start, "
                    + "\(loadAtEnd.map { f($0, 2) }.joined(separator: " ")) at end")
            func rate(_ p: PhaseResult) -> String {
                p.rate.map { "\(g(Int($0))) updates/s" } ?? "not all arrived"
            }
            if let raw {
                var line = "raw pass-through: \(rate(raw)) (\(g(raw.sent)) sent in \(f(raw.publishSeconds, 2)) s, \(g(raw.received)) received, \(g(raw.lost)) lost)"
                if let p50 = percentile(0.5, of: raw.latencies), let p99 = percentile(0.99, of: raw.latencies), let max = raw.latencies.last {
                    line += "; latency publish -> subscriber p50 \(f(p50 * 1000, 2)) ms, p99 \(f(p99 * 1000, 2)) ms, max \(f(max * 1000, 1)) ms"
                        + warmUpSummary(raw.warmUpLatencies, "updates")
                }
                lines.append(line + (raw.brokerCPUSeconds.map { "; broker CPU \(f($0, 2)) s" } ?? ""))
                if let profile = raw.profile { lines.append("  while publishing: \(profile.summary)") }
            }
            if options.duration > 0 {
                let gw = gateway
                var line = "gateway: \(rate(gw))"
                if let ratio { line += " = \(f(ratio, 3)) of raw" }
                line += " (\(g(gw.sent)) sent in \(f(gw.publishSeconds, 2)) s; received \(g(gw.received)), accepted \(g(gw.accepted)), dropped \(g(gw.dropped)), lost \(g(gw.lost))"
                if let load = gw.loadRate { line += "; \(g(Int(load))) updates/s during the load" }
                if let lag = gw.eventsLagSeconds, lag >= 0.01 { line += "; the last event arrived \(f(lag, 2)) s after every update was taken" }
                lines.append(line + ")")
                var events = "events: \(g(gw.events)) received (gateway counted \(g(gw.eventsCounter)))"
                if let p50 = percentile(0.5), let p99 = percentile(0.99), let max = gw.latencies.last {
                    events += "; latency publish -> event p50 \(f(p50 * 1000, 2)) ms, p99 \(f(p99 * 1000, 2)) ms, max \(f(max * 1000, 1)) ms"
                        + warmUpSummary(gw.warmUpLatencies, "events")
                }
                lines.append(events)
                if !rounds.isEmpty {
                    lines.append("rounds (raw -> gateway updates/s, ratio): " + rounds.map { round in
                        let ratio = round.raw.flatMap { r in round.gateway.map { f($0 / r, 3) } } ?? "-"
                        return "\(round.raw.map { g(Int($0)) } ?? "-") -> \(round.gateway.map { g(Int($0)) } ?? "-") \(ratio)"
                    }.joined(separator: "; "))
                }
                if let a50 = percentile(0.5, of: gw.toEmitted), let a99 = percentile(0.99, of: gw.toEmitted),
                    let b50 = percentile(0.5, of: gw.fromEmitted), let b99 = percentile(0.99, of: gw.fromEmitted)
                {
                    lines.append(
                        "  split at the event's emitted time (ms precision): publish -> event built p50 \(f(a50 * 1000, 1)) ms, p99 \(f(a99 * 1000, 1)) ms; "
                            + "built -> subscriber (commit, outbox, broker) p50 \(f(b50 * 1000, 1)) ms, p99 \(f(b99 * 1000, 1)) ms")
                }
                lines.append(
                    "gateway CPU \(f(gw.cpuSeconds, 2)) s (\(f(gw.cpuSeconds / Double(max(1, gw.sent)) * 1e6, 1)) us per update)"
                        + (gw.brokerCPUSeconds.map { ", broker CPU \(f($0, 2)) s" } ?? "") + ", bench CPU \(f(gw.benchCPUSeconds, 2)) s")
                if let profile = gw.profile { lines.append("  while publishing: \(profile.summary)") }
            }
            lines.append(
                "gateway memory: idle RSS \(f(megabytes(gateway.idleResidentBytes), 1)) MB (after start, \(f(gateway.startupSeconds, 2)) s to started), "
                    + "peak RSS \(f(megabytes(gateway.peakResidentBytes), 1)) MB, RSS after the load \(f(megabytes(gateway.endResidentBytes), 1)) MB")
            lines.append("targets:")
            for t in targets {
                lines.append(
                    "  \(t.name): \(f(t.value, 3))\(t.unit) (target \(t.atLeast ? ">=" : "<=") \(f(t.limit, 2))\(t.unit)): \(f(t.ratio, 3)) of the target, \(t.met ? "met" : "MISSED")")
                lines += t.met ? [] : t.why.map { "    " + $0 }
            }
            return lines.joined(separator: "\n")
        }

        func json() -> String {
            func phase(_ p: PhaseResult) -> JSONValue {
                var o: JSONObject = [
                    "sent": .number(Double(p.sent)), "publishSeconds": .number(p.publishSeconds),
                    "received": .number(Double(p.received)), "lost": .number(Double(p.lost)),
                    "rate": p.rate.map { .number($0.rounded()) } ?? .null,
                ]
                if let b = p.brokerCPUSeconds { o["brokerCPUSeconds"] = .number(b) }
                if let profile = p.profile { o["profile"] = profile.json }
                if !p.latencies.isEmpty {
                    o["latencyMs"] = .object([
                        "p50": percentile(0.5, of: p.latencies).map { .number($0 * 1000) } ?? .null,
                        "p99": percentile(0.99, of: p.latencies).map { .number($0 * 1000) } ?? .null,
                        "max": .number(p.latencies.last! * 1000),
                    ])
                }
                if !p.warmUpLatencies.isEmpty {
                    o["warmUpLatencyMs"] = .object([
                        "count": .number(Double(p.warmUpLatencies.count)),
                        "p99": percentile(0.99, of: p.warmUpLatencies).map { .number($0 * 1000) } ?? .null,
                        "max": .number(p.warmUpLatencies.last! * 1000),
                    ])
                }
                return .object(o)
            }
            var gw = phase(gateway).objectValue!
            gw["accepted"] = .number(Double(gateway.accepted))
            gw["dropped"] = .number(Double(gateway.dropped))
            gw["loadRate"] = gateway.loadRate.map { .number($0.rounded()) } ?? .null
            gw["eventsLagSeconds"] = gateway.eventsLagSeconds.map { .number(($0 * 1000).rounded() / 1000) } ?? .null
            gw["events"] = .number(Double(gateway.events))
            if gw["latencyMs"] == nil { gw["latencyMs"] = .object(["p50": .null, "p99": .null, "max": .null]) }
            gw["cpuSeconds"] = .number(gateway.cpuSeconds)
            gw["idleRSSMB"] = .number(megabytes(gateway.idleResidentBytes))
            gw["peakRSSMB"] = .number(megabytes(gateway.peakResidentBytes))
            gw["endRSSMB"] = .number(megabytes(gateway.endResidentBytes))
            gw["startupSeconds"] = .number(gateway.startupSeconds)
            let summary: JSONObject = [
                "devices": .number(Double(options.devices)), "fences": .number(Double(fenceCount)),
                "fenceFolder": options.fenceFolder.map { .string($0) } ?? .null,
                "qos": .number(Double(options.qos.rawValue)), "format": .string(options.format.rawValue),
                "rate": options.rate.map { .number($0) } ?? .null, "duration": .number(options.duration),
                "publishers": .number(Double(options.publishers)), "lockstep": .bool(options.lockstep),
                "rounds": .array(rounds.map { round in
                    .object([
                        "raw": round.raw.map { .number($0.rounded()) } ?? .null,
                        "gateway": round.gateway.map { .number($0.rounded()) } ?? .null,
                        "ratio": round.raw.flatMap { r in round.gateway.map { .number($0 / r) } } ?? .null,
                    ])
                }),
                "warmUpSeconds": .number(warmUp),
                "cores": .number(Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))),
                "loadAverage": .object(["start": .array(loadAtStart.map { .number($0) }), "end": .array(loadAtEnd.map { .number($0) })]),
                "raw": raw.map(phase) ?? .null,
                "gateway": .object(gw),
                "ratio": ratio.map { .number($0) } ?? .null,
                "targets": .array(targets.map { t in
                    .object([
                        "name": .string(t.name), "value": .number(t.value), "limit": .number(t.limit), "ratio": .number(t.ratio), "met": .bool(t.met),
                        "why": .array(t.met ? [] : t.why.map { .string($0) }),
                    ])
                }),
            ]
            return JSONValue.object(summary).serialized()
        }
    }
}
