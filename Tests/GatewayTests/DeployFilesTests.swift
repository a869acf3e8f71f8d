import Foundation
import Gateway
import Testing
import TestSupport

/// The shipped deploy files agree with each other: the installed config's database is where
/// the systemd unit lets the gateway write, and its broker user is the shipped ACL's gateway.
@Suite struct DeployFilesTests {
    static let deploy = repositoryRoot + "/deploy"

    /// `KEY=VALUE` lines of the unit.
    static func unitSettings() throws -> [String: String] {
        let text = try String(contentsOfFile: "\(deploy)/geotrigger.service", encoding: .utf8)
        var settings: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return settings
    }

    /// Loads `file` as if installed at /etc/geotrigger/NAME (install.sh; copied into a temp
    /// folder of that name, so relative paths resolve as they would there).
    static func installed(_ file: String) throws -> GatewayConfig {
        let folder = try TemporaryDirectory(prefix: "etc-geotrigger")
        let path = try folder.write("geotrigger.json5", try String(contentsOfFile: file, encoding: .utf8))
        return try GatewayConfig.load(file: path)
    }

    @Test(arguments: ["geotrigger.example.json5", "nats/gateway-shard-0.json5", "nats/gateway-shard-1.json5", "nats/gateway-shard-2.json5"])
    func databaseIsInTheUnitsStateDirectory(file: String) throws {
        let unit = try Self.unitSettings()
        let state = "/var/lib/" + (try #require(unit["StateDirectory"]))
        #expect(unit["WorkingDirectory"] == state)
        #expect(unit["ReadOnlyPaths"] == "/etc/geotrigger" && unit["ProtectSystem"] == "strict")
        let config = try Self.installed("\(Self.deploy)/\(file)")
        let database = config.resolve(config.gateway.database)
        #expect(database.hasPrefix(state + "/"), "\(file): database \(database) is not writable under the unit (only \(state) is)")
    }

    @Test func exampleBrokerUserIsTheShippedACLsGateway() throws {
        let config = try Self.installed("\(Self.deploy)/geotrigger.example.json5")
        let user = try #require(config.broker.username)
        #expect(user == config.clientID(remote: false), "use_username_as_clientid: the gateway's user is named like its client id")
        let readme = try String(contentsOfFile: "\(Self.deploy)/mosquitto/README.md", encoding: .utf8)
        #expect(readme.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("geotrigger-dynsec add gateway \(user)") },
                "deploy/mosquitto/README.md adds the gateway's user \(user) with the gateway role")
    }

    /// The console's folder: the shipped config's websockets listener serves the folder
    /// install.sh fills (the console and Debian's Leaflet, a package it installs).
    @Test func consoleFolderIsTheListenersHttpDir() throws {
        let install = try String(contentsOfFile: "\(Self.deploy)/install.sh", encoding: .utf8)
        let folder = try #require(install.split(separator: "\n").first { $0.hasPrefix("CONSOLE=") }).dropFirst("CONSOLE=".count)
        let conf = try String(contentsOfFile: "\(Self.deploy)/mosquitto/geotrigger.conf", encoding: .utf8)
        #expect(conf.split(separator: "\n").contains("http_dir \(folder)"))
        #expect(conf.split(separator: "\n").contains("protocol websockets"))
        let installed = try #require(install.split(separator: "\n").first { $0.hasPrefix("install_packages ") })
        #expect(installed.split(separator: " ").contains("libjs-leaflet"))
        #expect(install.contains("cp -RL /usr/share/javascript/leaflet \"$CONSOLE/leaflet\""))
    }

    /// The shipped broker config saves its database after many changes, never on a timer: a
    /// timed `autosave_interval` rewrote the whole file every minute, idle or not (a microSD
    /// card's wear); `persistence` stays (the gateway's session and the retained topics survive
    /// a restart). The interval is the one the config's comment works out (52 saves a day of
    /// 1.2 MB at 1,000 devices), and docs/operations.md gives the same number.
    @Test func brokerSavesAfterChangesNotOnATimer() throws {
        let conf = try String(contentsOfFile: "\(Self.deploy)/mosquitto/geotrigger.conf", encoding: .utf8)
        let lines = conf.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(lines.contains("persistence true"))
        #expect(lines.contains("autosave_on_changes true"), "without it autosave_interval counts seconds")
        let interval = try #require(lines.first { $0.hasPrefix("autosave_interval ") }).dropFirst("autosave_interval ".count)
        let changes = try #require(Int(interval))
        #expect(changes == 1_000_000)
        #expect(lines.filter { $0.hasPrefix("autosave_interval ") || $0.hasPrefix("autosave_on_changes ") }.count == 2)
        // About 600 changes/s at 1,000 devices (the comment's measure): at most 100 MB a day of 1.2 MB saves.
        let savesPerDay = 600.0 * 86_400 / Double(changes)
        #expect(savesPerDay * 1.2 <= 100)
        let operations = try String(contentsOfFile: repositoryRoot + "/docs/operations.md", encoding: .utf8)
        #expect(operations.contains("autosave_interval 1000000"))
    }

    @Test func unitBoundsMemoryTasksAndProc() throws {
        let unit = try Self.unitSettings()
        #expect(unit["ProtectProc"] == "invisible")
        #expect(unit["MemoryHigh"] != nil && unit["MemoryMax"] != nil && unit["TasksMax"] != nil)
    }
}

/// `output.metricsFile` in the deploy files: the example's (commented) path is in a folder the
/// unit lets the gateway write, the one docs/metrics.md tells node_exporter to read, and the
/// tests' packages bring promtool.
@Suite struct DeployMetricsFileTests {
    @Test func exampleMetricsFileIsWritableUnderTheUnitAndReadByNodeExporter() throws {
        let example = try String(contentsOfFile: "\(DeployFilesTests.deploy)/geotrigger.example.json5", encoding: .utf8)
        let commented = "// metricsFile: "
        #expect(example.contains(commented), "the example shows output.metricsFile commented")
        let folder = try TemporaryDirectory(prefix: "etc-geotrigger")
        let path = try folder.write("geotrigger.json5", example.replacingOccurrences(of: commented, with: "metricsFile: "))
        let config = try GatewayConfig.load(file: path)
        let metrics = config.resolve(try #require(config.output.metricsFile))
        let directory = String(metrics[..<metrics.lastIndex(of: "/")!])
        #expect(metrics.hasSuffix(".prom"), "node_exporter's textfile collector reads *.prom only")

        let unit = try DeployFilesTests.unitSettings()
        let writable = (unit["ReadWritePaths"] ?? "").split(separator: " ").map { $0.hasPrefix("-") ? String($0.dropFirst()) : String($0) }
        #expect(writable.contains(directory), "\(directory) is not in the unit's ReadWritePaths (\(writable))")

        let docs = try String(contentsOfFile: repositoryRoot + "/docs/metrics.md", encoding: .utf8)
        #expect(docs.contains("--collector.textfile.directory=\(directory)"))
        #expect(docs.contains(metrics))

        let setup = try String(contentsOfFile: "\(DeployFilesTests.deploy)/setup.sh", encoding: .utf8)
        let packages = try #require(setup.split(separator: "\n").first { $0.hasPrefix("RUN_PACKAGES=(") })
        #expect(packages.dropFirst("RUN_PACKAGES=(".count).dropLast().split(separator: " ").contains("prometheus"), "promtool for the tests")
    }
}
