import Foundation
import GeotriggerCore
import Store
import Testing
import TestSupport

@testable import Gateway

/// `promtool check metrics` on `text` (its standard input): the exit status and what it
/// printed. promtool (Debian package `prometheus`, installed by deploy/test.sh) must be there:
/// without it the calling test fails rather than skips.
func promtoolCheck(_ text: String) throws -> (status: Int32, output: String) {
    let path = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let promtool = try #require(path, "promtool is missing: install the Debian package prometheus (deploy/setup.sh RUN_PACKAGES)")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: promtool)
    process.arguments = ["check", "metrics"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = output
    try process.run()
    input.fileHandleForWriting.write(Data(text.utf8))
    try input.fileHandleForWriting.close()
    let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, printed)
}

/// One sample line of an exposition: `name{labels}` (the series) and its value.
struct MetricsLine: Hashable {
    var series: String
    var value: Double
}

/// The sample lines of an exposition text (comments skipped), in order.
func metricsLines(_ text: String) -> [MetricsLine] {
    text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        return MetricsLine(series: String(line[..<space]), value: value)
    }
}

/// The exposition writer and the metrics file writer, without a broker (docs/metrics.md:
/// `output.metricsFile`).
@Suite struct MetricsExpositionTests {
    static func sample(triggers: [String] = ["garden", "depot"]) -> StatusSample {
        var values = GatewayCounters.Values()
        values.received = 12
        values.accepted = 9
        values.dropped = Dictionary(uniqueKeysWithValues: DropReason.allCases.map { ($0, 0) })
        values.dropped[.notJSON] = 2
        values.dropped[.duplicate] = 1
        values.events = 3 * triggers.count
        for t in triggers {
            values.eventsByKind[.init(trigger: t, type: "enter")] = 2
            values.eventsByKind[.init(trigger: t, type: "exit")] = 1
        }
        var phones = GatewayCounters.PhoneCounts()
        for t in triggers { phones.triggers[t] = .init(pushes: 4, agree: 3, disagree: 1) }
        phones.unknownRegion = 2
        values.phones = phones
        values.trips = GatewayCounters.Trips(pending: 1, onRoute: 6, offRoute: 2)
        return StatusSample(counters: values, queueDepth: 4, devices: 7, outbox: OutboxCounts(local: 5, remote: 0),
                            brokers: [.init(name: "local", connected: true), .init(name: "remote", connected: false)],
                            version: "1.2.3-test")
    }

    @Test func escapesLabelValuesAndHelp() {
        #expect(MetricsExposition.escapeLabel(#"a"b\c"# + "\nd") == #"a\"b\\c\nd"#)
        #expect(MetricsExposition.escapeLabel("plain ü") == "plain ü")
        #expect(MetricsExposition.escapeHelp("x\\y\n\"z\"") == #"x\\y\n"z""#)
        var e = MetricsExposition()
        e.family("t_total", .counter, help: "line one\nline \\two", [.init(1, labels: [("trigger", "say \"hi\"\\\n")])])
        #expect(e.text == """
            # HELP t_total line one\\nline \\\\two
            # TYPE t_total counter
            t_total{trigger="say \\"hi\\"\\\\\\n"} 1

            """)
    }

    @Test func oneFamilyPerNameAndOneLinePerSeries() {
        var e = MetricsExposition()
        e.family("g", .gauge, help: "g", [.init(1, labels: [("a", "x")]), .init(2, labels: [("a", "w")]), .init(3, labels: [("a", "x")])])
        e.family("g", .gauge, help: "again", [.init(9)])
        e.family("h", .gauge, help: "empty", [])
        #expect(e.text == "# HELP g g\n# TYPE g gauge\ng{a=\"w\"} 2\ng{a=\"x\"} 3\n# HELP h empty\n# TYPE h gauge\n")
        #expect(MetricsExposition.format(2.5) == "2.5" && MetricsExposition.format(-3) == "-3")
        #expect(MetricsExposition.format(.infinity) == "+Inf" && MetricsExposition.format(.nan) == "NaN")
    }

    /// Every family of the design with HELP and TYPE before its samples, each series once,
    /// the values of the sample; promtool finds nothing to say, even for awkward trigger names.
    @Test func theGatewaysMetricsPassPromtool() throws {
        let text = MetricsFile.exposition(Self.sample(triggers: ["garden", "quote\" back\\slash\nnewline", "café/ü"]))
        print("exposition:\n\(text)")
        let families: [(String, String)] = [
            ("geotrigger_updates_received_total", "counter"), ("geotrigger_updates_accepted_total", "counter"),
            ("geotrigger_updates_dropped_total", "counter"), ("geotrigger_events_total", "counter"),
            ("geotrigger_devices", "gauge"), ("geotrigger_queue_depth", "gauge"), ("geotrigger_outbox_messages", "gauge"),
            ("geotrigger_broker_connected", "gauge"), ("geotrigger_build_info", "gauge"),
            ("geotrigger_phone_pushes_total", "counter"), ("geotrigger_phone_transitions_total", "counter"),
            ("geotrigger_phone_transitions_unjudged_total", "counter"), ("geotrigger_trips", "gauge"),
        ]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (name, type) in families {
            let help = lines.firstIndex { $0.hasPrefix("# HELP \(name) ") }
            let typeLine = lines.firstIndex(of: "# TYPE \(name) \(type)")
            #expect(help != nil && typeLine == help.map { $0 + 1 }, "\(name)")
            #expect(lines.filter { $0.hasPrefix("# HELP \(name) ") }.count == 1, "\(name)")
            let first = lines.firstIndex { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
            if let first, let typeLine { #expect(first > typeLine, "\(name): a sample before its TYPE") }
        }
        let samples = metricsLines(text)
        #expect(Set(samples.map(\.series)).count == samples.count, "a duplicate series")
        let value = Dictionary(samples.map { ($0.series, $0.value) }, uniquingKeysWith: { a, _ in a })
        #expect(value["geotrigger_updates_received_total"] == 12 && value["geotrigger_updates_accepted_total"] == 9)
        #expect(samples.filter { $0.series.hasPrefix("geotrigger_updates_dropped_total{") }.count == DropReason.allCases.count)
        #expect(value[#"geotrigger_updates_dropped_total{reason="notJSON"}"#] == 2)
        #expect(value[#"geotrigger_events_total{trigger="quote\" back\\slash\nnewline",type="enter"}"#] == 2)
        #expect(value[#"geotrigger_events_total{trigger="café/ü",type="exit"}"#] == 1)
        #expect(value["geotrigger_devices"] == 7 && value["geotrigger_queue_depth"] == 4)
        #expect(value[#"geotrigger_trips{state="pending"}"#] == 1 && value[#"geotrigger_trips{state="onRoute"}"#] == 6)
        #expect(value[#"geotrigger_trips{state="offRoute"}"#] == 2)
        #expect(value[#"geotrigger_outbox_messages{destination="local"}"#] == 5)
        #expect(value[#"geotrigger_broker_connected{broker="local"}"#] == 1 && value[#"geotrigger_broker_connected{broker="remote"}"#] == 0)
        #expect(value[#"geotrigger_build_info{version="1.2.3-test"}"#] == 1)
        #expect(value[#"geotrigger_phone_pushes_total{trigger="café/ü"}"#] == 4)
        #expect(value[#"geotrigger_phone_transitions_total{trigger="garden",verdict="disagree"}"#] == 1)
        #expect(value[#"geotrigger_phone_transitions_unjudged_total{reason="unknownRegion"}"#] == 2)

        let check = try promtoolCheck(text)
        print("promtool check metrics: exit \(check.status), output: \(check.output.isEmpty ? "(none)" : check.output)")
        #expect(check.status == 0 && check.output.isEmpty, "\(check.output)")
        // promtool does find fault with a counter named against its rules (so the check above
        // means something).
        let broken = try promtoolCheck(text.replacingOccurrences(of: "geotrigger_updates_received_total", with: "geotrigger_updates_received"))
        #expect(broken.status != 0 && broken.output.contains("_total"), "promtool: \(broken.status) \(broken.output)")
    }

    /// The file is replaced whole, mode 0644, no temporary left; a write that fails is the
    /// `metricsFile` warning naming the file, cleared by the next write that succeeds.
    @Test func writesAtomicallyAndWarnsOnFailure() async throws {
        let directory = try TemporaryDirectory(prefix: "metrics-file")
        let warnings = Warnings(logger: Logger(label: "test"))
        let path = directory.file("sub/geotrigger.prom")
        let file = MetricsFile(path: path, warnings: warnings)
        await file.writeAndWait(Self.sample())
        #expect(warnings.texts.count == 1)
        #expect(warnings.texts.first?.contains("cannot write the metrics file \(path)") == true, "\(warnings.texts)")
        #expect(warnings.texts.first?.contains("No such file or directory") == true, "\(warnings.texts)")
        #expect(!FileManager.default.fileExists(atPath: path))

        try FileManager.default.createDirectory(atPath: directory.file("sub"), withIntermediateDirectories: false)
        await file.writeAndWait(Self.sample())
        #expect(warnings.texts.isEmpty, "\(warnings.texts)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text == MetricsFile.exposition(Self.sample()))
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o644)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("sub")) == ["geotrigger.prom"])

        // A newer sample replaces the file whole.
        await file.writeAndWait(Self.sample(triggers: ["only"]))
        let again = try String(contentsOfFile: path, encoding: .utf8)
        #expect(again.contains(#"trigger="only""#) && !again.contains(#"trigger="garden""#))
    }

    /// Symbolic links planted at the temporary file's path and at the file's own path are
    /// never followed: the files they point to are unchanged, and the metrics file is a
    /// regular file of its own, mode 0644.
    @Test func plantedSymlinksAreNotFollowed() async throws {
        let directory = try TemporaryDirectory(prefix: "metrics-links")
        let path = directory.file("geotrigger.prom")
        let outsideTemporary = try directory.write("outside-temporary", "not yours\n")
        let outsideTarget = try directory.write("outside-target", "not yours either\n")
        #expect(symlink(outsideTemporary, directory.file(".geotrigger.prom.tmp")) == 0)
        #expect(symlink(outsideTarget, path) == 0)
        let warnings = Warnings(logger: Logger(label: "test"))
        let file = MetricsFile(path: path, warnings: warnings)
        await file.writeAndWait(Self.sample())
        #expect(try String(contentsOfFile: outsideTemporary, encoding: .utf8) == "not yours\n")
        #expect(try String(contentsOfFile: outsideTarget, encoding: .utf8) == "not yours either\n")
        #expect(warnings.texts.isEmpty, "\(warnings.texts)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)  // not followed
        #expect(attributes[.type] as? FileAttributeType == .typeRegular)
        #expect((attributes[.posixPermissions] as? Int) == 0o644)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == MetricsFile.exposition(Self.sample()))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
            == ["geotrigger.prom", "outside-target", "outside-temporary"])
    }

    @Test func configKeyIsAPathOrNull() throws {
        let directory = try TemporaryDirectory(prefix: "metrics-config")
        let good = try directory.write("gw.json5", #"{ output: { metricsFile: "metrics/gw.prom" }, triggers: [] }"#)
        let config = try GatewayConfig.load(file: good)
        #expect(config.output.metricsFile == "metrics/gw.prom")
        #expect(config.resolve(config.output.metricsFile!) == directory.path + "/metrics/gw.prom")
        let absolute = try directory.write("abs.json5", #"{ output: { metricsFile: "/var/lib/x.prom" } }"#)
        #expect(try GatewayConfig.load(file: absolute).output.metricsFile == "/var/lib/x.prom")
        let off = try directory.write("off.json5", "{ output: { metricsFile: null } }")
        #expect(try GatewayConfig.load(file: off).output.metricsFile == nil)
        #expect(GatewayConfig().output.metricsFile == nil)

        for (text, message) in [
            ("{\n  output: { metricsFile: 5 } }", "bad.json5:2:13: output.metricsFile: expected a string or null, found a number"),
            ("{\n  output: { metricsFile: true } }", "bad.json5:2:13: output.metricsFile: expected a string or null, found a boolean"),
            (#"{ output: { metricsFile: "" } }"#, #"bad.json5:1:13: output.metricsFile: expected the path of a file or null, found """#),
            (#"{ output: { metricsFile: "dir/" } }"#, #"bad.json5:1:13: output.metricsFile: expected the path of a file or null, found "dir/""#),
        ] {
            let bad = try directory.write("bad.json5", text)
            #expect {
                try GatewayConfig.load(file: bad)
            } throws: { error in
                let described = "\(error)"
                let ok = described.contains(message)
                if !ok { print("got: \(described)") }
                return ok
            }
        }
    }
}
