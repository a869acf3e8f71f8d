import Gateway
import GeotriggerCore

#if canImport(Glibc)
import Glibc
#endif

extension EnduranceBenchmark {
    /// The figures of one run, as a text report or one JSON line, with the targets.
    struct Report {
        var options: Options
        var executable: String
        var zoneCount: Int
        var fleet: EnduranceFleet?
        /// The shipped config's persistence and autosave lines.
        var persistence: [String]
        var work: String
        var device: (name: String, major: Int, minor: Int)?
        /// warm-up, drive, settle, idle.
        var segments: [Segment]
        var unmatchedEvents: Int
        var sent: Int
        var loadAtStart: [Double]
        var loadAtEnd: [Double]
        var trips: TripSummary
        /// The trips' events (`PREFIX/events/trips/+`), by type: not in `segments`' events.
        var tripEvents: [String: Int] = [:]

        var drive: Segment { segments[1] }
        var idle: Segment { segments[3] }

        /// Bytes an event may cost the gateway.
        static let bytesPerEvent = 2048.0

        /// One target: the figure (nil: not measured in this run), its limit, met or missed.
        struct Target {
            var name: String
            var value: Double?
            var limit: Double
            var unit: String
            var decimals: Int
            /// The limit is a strict upper bound.
            var strict = false
            var met: Bool? { value.map { strict ? $0 < limit : $0 <= limit } }
        }

        /// The gateway's bytes in the drive beyond 2 KiB per event.
        var beyondEvents: Int64 { drive.gatewayBytes - Int64(Double(drive.events) * Self.bytesPerEvent) }

        var targets: [Target] {
            let mb = 1e6
            let d = drive, i = idle
            let brokerLimit = 100 * Double(options.devices) / 1000
            return [
                Target(
                    name: "gateway bytes per event (drive)", value: d.events > 0 ? Double(d.gatewayBytes) / Double(d.events) : nil,
                    limit: Self.bytesPerEvent, unit: " B", decimals: 0),
                Target(
                    name: "gateway MB/day beyond 2 KiB per event (drive; for --fleet edge)",
                    value: d.updates > 0 ? d.perDay(beyondEvents) / mb : nil, limit: 50, unit: " MB/day", decimals: 2),
                Target(
                    name: "broker MB/day (drive; 100 per 1,000 devices)", value: d.updates > 0 ? d.perDay(d.brokerBytes) / mb : nil,
                    limit: brokerLimit, unit: " MB/day", decimals: 2),
                // Idle, the broker changes nothing, so autosave_on_changes saves nothing: its
                // figure is what it wrote itself, without the benchmark's forced save.
                Target(
                    name: "idle: gateway + broker MB/day (the broker's own writes)",
                    value: i.perDay(i.gatewayBytes + i.brokerBytes - i.forcedSaveBytes) / mb, limit: 20, unit: " MB/day", decimals: 3),
                Target(name: "idle: gateway wake-ups/s", value: Double(i.gatewaySwitches) / i.seconds, limit: 5, unit: "/s", decimals: 2),
                Target(name: "idle: gateway CPU, % of a core", value: 100 * i.gatewayCPU / i.seconds, limit: 0.1, unit: " %", decimals: 3),
                Target(
                    name: "gateway CPU per update (drive, at \(IndexBenchmark.format(options.rate, 0)) updates/s; target at 100/s)",
                    value: d.updates > 0 ? d.gatewayCPU / Double(d.updates) * 1e6 : nil, limit: 50, unit: " us", decimals: 1),
                Target(
                    name: "event latency p99 (drive)", value: EndToEndBenchmark.percentile(0.99, of: d.latencies).map { $0 * 1000 },
                    limit: 1000, unit: " ms", decimals: 1, strict: true),
            ]
        }

        func megabytesPerDay(_ s: Segment, _ bytes: Int64) -> String { IndexBenchmark.format(s.perDay(bytes) / 1e6, 2) }

        func text() -> String {
            let f = IndexBenchmark.format, g = IndexBenchmark.grouped
            var lines: [String] = []
            let fleetText = fleet.map { fleet in
                EnduranceFleet.Kind.allCases.filter { fleet.count($0) > 0 }.map { "\(g(fleet.count($0))) \($0.rawValue)" }.joined(separator: ", ")
            } ?? "nothing reporting"
            lines.append(
                "bench endurance: \(executable) serve; fleet \(options.fleet) (\(fleetText)), \(g(options.devices)) devices every \(f(options.interval, 1)) s "
                    + "(\(f(options.rate, 1)) updates/s, QoS 1), \(zoneCount) zones, holds \(f(EnduranceBenchmark.hold, 0)) s; "
                    + "warm-up \(f(segments[0].seconds, 0)) s, drive \(f(drive.seconds, 0)) s, settle \(f(segments[2].seconds, 0)) s, idle \(f(idle.seconds, 0)) s")
            lines.append(
                "broker: /usr/sbin/mosquitto with \(options.brokerConfig) (\(persistence.joined(separator: ", "))); work directory \(work) on "
                    + (device.map { "\($0.name) (\($0.major):\($0.minor))" } ?? "a device not in /proc/diskstats"))
            lines.append(
                "machine: \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, load average \(loadAtStart.map { f($0, 2) }.joined(separator: " ")) at start, "
                    + "\(loadAtEnd.map { f($0, 2) }.joined(separator: " ")) at end")
            lines.append("")
            let header = ["segment", "seconds", "updates", "events", "gateway MB/d", "broker MB/d", "disk MB/d", "gw wake/s", "broker wake/s", "gw CPU %", "broker CPU %"]
            let widths = [9, 8, 9, 8, 13, 12, 10, 10, 14, 9, 13]
            func row(_ cells: [String]) -> String {
                zip(cells, widths).enumerated().map { i, cell in
                    i == 0 ? cell.0.padding(toLength: cell.1) : String(repeating: " ", count: max(0, cell.1 - cell.0.count)) + cell.0
                }.joined()
            }
            lines.append(row(header))
            for s in segments {
                lines.append(
                    row([
                        s.name, f(s.seconds, 1), g(s.updates), g(s.events), megabytesPerDay(s, s.gatewayBytes), megabytesPerDay(s, s.brokerBytes),
                        s.diskBytes.map { megabytesPerDay(s, $0) } ?? "-", f(Double(s.gatewaySwitches) / s.seconds, 2),
                        f(Double(s.brokerSwitches) / s.seconds, 2), f(100 * s.gatewayCPU / s.seconds, 3), f(100 * s.brokerCPU / s.seconds, 3),
                    ]))
            }
            lines.append("")
            let d = drive
            var driveLine = "drive: gateway \(g(Int(d.gatewayBytes))) bytes"
            if d.events > 0 { driveLine += ", \(g(Int(Double(d.gatewayBytes) / Double(d.events)))) per event" }
            if d.updates > d.events {
                driveLine += "; beyond 2 KiB per event \(megabytesPerDay(d, beyondEvents)) MB/day, \(f(Double(beyondEvents) / Double(d.updates - d.events), 1)) bytes per quiet update"
            }
            if d.updates > 0 { driveLine += "; CPU \(f(d.gatewayCPU / Double(d.updates) * 1e6, 1)) us per update" }
            lines.append(driveLine)
            // A forced save writes the broker's whole database, changed or not: in a window
            // shorter than the time between two autosaves it is all of the broker's figure.
            if let tripsLine { lines.append(tripsLine) }
            lines.append(
                "broker: its own writes, without the forced save (a database of \(g(Int(idle.forcedSaveBytes))) bytes): drive "
                    + "\(megabytesPerDay(d, d.brokerBytes - d.forcedSaveBytes)) MB/day, idle \(megabytesPerDay(idle, idle.brokerBytes - idle.forcedSaveBytes)) MB/day")
            for s in segments {
                var parts: [String] = []
                if s.events > 0 || s.updates > 0 {
                    var events = "\(g(s.events)) events"
                    if let p50 = EndToEndBenchmark.percentile(0.5, of: s.latencies), let p99 = EndToEndBenchmark.percentile(0.99, of: s.latencies),
                        let max = s.latencies.last
                    {
                        events += ", latency p50 \(f(p50 * 1000, 1)) ms, p99 \(f(p99 * 1000, 1)) ms, max \(f(max * 1000, 1)) ms"
                    }
                    if s.decidedBySilence > 0 { events += ", \(g(s.decidedBySilence)) decided by silence" }
                    if s.unmatched > 0 { events += ", \(g(s.unmatched)) not matched to an update" }
                    parts.append(events)
                }
                parts.append(
                    "checkpoint thread \(g(Int(s.checkpointBytes))) bytes, broker's forced save \(g(Int(s.forcedSaveBytes))) bytes; logs: gateway \(g(Int(s.gatewayLogBytes))), broker \(g(Int(s.brokerLogBytes))) bytes")
                parts.append("CPU gateway \(f(s.gatewayCPU, 2)) s, broker \(f(s.brokerCPU, 2)) s; gateway VmRSS at the end \(f(Double(s.gatewayResident) / 1e6, 2)) MB")
                if s.progress > 0 { parts.append("\(g(s.progress)) trip progress messages") }
                lines.append("  \(s.name): " + parts.joined(separator: "; "))
            }
            if unmatchedEvents > 0 { lines.append("  \(g(unmatchedEvents)) event payloads could not be read") }
            lines.append("")
            lines.append("targets:")
            for t in targets {
                let value = t.value.map { f($0, t.decimals) + t.unit } ?? "n/a"
                let verdict = t.met.map { $0 ? "met" : "MISSED" } ?? "not measured"
                lines.append("  \(t.name.padding(toLength: 78)) \(value.padding(toLength: 14)) target \(t.strict ? "<" : "<=") \(f(t.limit, t.decimals))\(t.unit): \(verdict)")
            }
            return lines.joined(separator: "\n")
        }

        /// Trip progress messages per second in the drive.
        var progressPerSecond: Double { Double(drive.progress) / max(1e-9, drive.seconds) }

        /// "state N, ..." of a trips reply.
        static func states(_ reply: BenchSubscriber.TripsReply) -> String {
            reply.states.sorted { $0.key < $1.key }.map { "\($0.key) \(IndexBenchmark.grouped($0.value))" }.joined(separator: ", ")
        }

        /// The trips' line of the text report (nil without `--trips`).
        var tripsLine: String? {
            guard trips.requested > 0 else { return nil }
            let f = IndexBenchmark.format, g = IndexBenchmark.grouped
            func open(_ reply: BenchSubscriber.TripsReply?) -> String {
                reply.map { "\(g($0.count)) (\(Self.states($0)))" } ?? "n/a"
            }
            var parts = [
                "trips: \(g(trips.requested)) requested (corridor \(f(EnduranceBenchmark.tripCorridor, 0)) m); open before the warm-up \(open(trips.atStart)), "
                    + "after the drive \(open(trips.afterDrive))"
            ]
            parts.append(
                "events " + (tripEvents.isEmpty ? "none" : tripEvents.sorted { $0.key < $1.key }.map { "\($0.key) \(g($0.value))" }.joined(separator: ", ")))
            var progress = "progress \(f(progressPerSecond, 1))/s in the drive"
            if drive.updates > 0 { progress += " (\(f(Double(drive.progress) / Double(drive.updates), 3)) per update)" }
            parts.append(progress)
            if let residentWith = trips.residentWith, let perTrip = trips.memoryPerTrip {
                parts.append(
                    "gateway VmRSS \(f(Double(trips.residentBefore) / 1e6, 2)) MB before the trips, \(f(Double(residentWith) / 1e6, 2)) MB once followed: "
                        + "\(g(Int(perTrip.rounded()))) bytes per trip (before any fix)")
            }
            return parts.joined(separator: "; ")
        }

        func json() -> String {
            func segment(_ s: Segment) -> JSONValue {
                .object([
                    "name": .string(s.name), "seconds": .number(s.seconds), "updates": .number(Double(s.updates)), "events": .number(Double(s.events)),
                    "gatewayBytes": .number(Double(s.gatewayBytes)), "checkpointBytes": .number(Double(s.checkpointBytes)),
                    "forcedSaveBytes": .number(Double(s.forcedSaveBytes)),
                    "brokerBytes": .number(Double(s.brokerBytes)), "diskBytes": s.diskBytes.map { .number(Double($0)) } ?? .null,
                    "gatewayBytesPerDay": .number(s.perDay(s.gatewayBytes)), "brokerBytesPerDay": .number(s.perDay(s.brokerBytes)),
                    "diskBytesPerDay": s.diskBytes.map { .number(s.perDay($0)) } ?? .null,
                    "gatewayLogBytes": .number(Double(s.gatewayLogBytes)), "brokerLogBytes": .number(Double(s.brokerLogBytes)),
                    "gatewayWakeupsPerSecond": .number(Double(s.gatewaySwitches) / s.seconds),
                    "brokerWakeupsPerSecond": .number(Double(s.brokerSwitches) / s.seconds),
                    "gatewayCPUSeconds": .number(s.gatewayCPU), "brokerCPUSeconds": .number(s.brokerCPU),
                    "gatewayResidentBytes": .number(Double(s.gatewayResident)), "progress": .number(Double(s.progress)),
                    "decidedBySilence": .number(Double(s.decidedBySilence)), "unmatched": .number(Double(s.unmatched)),
                    "latencyMs": .object([
                        "p50": EndToEndBenchmark.percentile(0.5, of: s.latencies).map { .number($0 * 1000) } ?? .null,
                        "p99": EndToEndBenchmark.percentile(0.99, of: s.latencies).map { .number($0 * 1000) } ?? .null,
                        "max": s.latencies.last.map { .number($0 * 1000) } ?? .null,
                    ]),
                ])
            }
            let summary: JSONObject = [
                "gateway": .string(executable), "fleet": .string(options.fleet),
                "mix": fleet.map { fleet in .object(JSONObject(EnduranceFleet.Kind.allCases.map { (key: $0.rawValue, value: .number(Double(fleet.count($0)))) })) } ?? .null,
                "devices": .number(Double(options.devices)), "interval": .number(options.interval), "zones": .number(Double(zoneCount)),
                "sent": .number(Double(sent)), "device": device.map { .string($0.name) } ?? .null,
                "segments": .array(segments.map(segment)),
                "gatewayBytesPerEvent": drive.events > 0 ? .number(Double(drive.gatewayBytes) / Double(drive.events)) : .null,
                "gatewayBytesPerQuietUpdate": drive.updates > drive.events ? .number(Double(beyondEvents) / Double(drive.updates - drive.events)) : .null,
                "cpuMicrosecondsPerUpdate": drive.updates > 0 ? .number(drive.gatewayCPU / Double(drive.updates) * 1e6) : .null,
                "trips": trips.requested == 0 ? .null : .object([
                    "requested": .number(Double(trips.requested)),
                    "openAtStart": trips.atStart.map { .number(Double($0.count)) } ?? .null,
                    "openAfterDrive": trips.afterDrive.map { .number(Double($0.count)) } ?? .null,
                    "statesAfterDrive": trips.afterDrive.map { reply in
                        .object(JSONObject(reply.states.sorted { $0.key < $1.key }.map { (key: $0.key, value: .number(Double($0.value))) }))
                    } ?? .null,
                    "events": .object(JSONObject(tripEvents.sorted { $0.key < $1.key }.map { (key: $0.key, value: .number(Double($0.value))) })),
                    "progressPerSecond": .number(progressPerSecond),
                    "residentBeforeBytes": .number(Double(trips.residentBefore)),
                    "residentWithBytes": trips.residentWith.map { .number(Double($0)) } ?? .null,
                    "memoryPerTripBytes": trips.memoryPerTrip.map { .number($0) } ?? .null,
                ]),
                "loadAverage": .object(["start": .array(loadAtStart.map { .number($0) }), "end": .array(loadAtEnd.map { .number($0) })]),
                "targets": .array(targets.map { t in
                    .object([
                        "name": .string(t.name), "value": t.value.map { .number($0) } ?? .null, "limit": .number(t.limit),
                        "met": t.met.map { .bool($0) } ?? .null,
                    ])
                }),
            ]
            return JSONValue.object(summary).serialized()
        }
    }
}
