import Foundation
import Testing
import TestSupport
@testable import Gateway

private let badFixtures = repositoryRoot + "/Tests/Fixtures/fences-bad"

/// Runs the built `geotrigger` binary in the repository root; returns status, stdout, stderr.
func runGeotrigger(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
    let run = try BuiltProducts.run("geotrigger", arguments, in: repositoryRoot)
    return (run.status, run.output, run.error)
}

@Suite(.serialized) struct CheckCommandTests {
    @Test func exampleFencesAreValid() async {
        let report = CheckCommand.check(fencesFolder: repositoryRoot + "/fences")
        #expect(report.errors == [])
        #expect(report.summary == repositoryRoot + "/fences: 3 layers, 22 fences, 3 triggers, no errors")
        #expect(await GeotriggerCommand.main(["check", "--fences", repositoryRoot + "/fences"]) == ExitStatus.ok)
    }

    @Test func badFixturesListEveryErrorAndExit2() async {
        let report = CheckCommand.check(fencesFolder: badFixtures)
        #expect(report.errors.count == 46)
        #expect(report.errors.first == badFixtures + #"/bad-buffer.geojson: feature 0 ("Bench"): properties.buffer must be a number >= 0 (metres), found a string"#)
        #expect(report.errors.contains(badFixtures + "/invalid-json.geojson:8:7: expected ',' or '}' after object member"))
        #expect(report.errors.contains(
            badFixtures + #"/point-without-buffer.geojson: feature 0 ("Bench"): Point needs a buffer > 0 in trigger "point-without-buffer" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#))
        #expect(report.summary == "46 errors found")
        #expect(await GeotriggerCommand.main(["check", "--fences", badFixtures]) == ExitStatus.usage)
    }

    @Test func missingFolderIsAnError() async {
        let report = CheckCommand.check(fencesFolder: "/nonexistent-geotrigger-fences")
        #expect(report.errors == ["/nonexistent-geotrigger-fences: cannot read the fences folder: No such file or directory"])
        #expect(await GeotriggerCommand.main(["check", "--fences", "/nonexistent-geotrigger-fences"]) == ExitStatus.usage)
    }

    @Test func configTriggerAndExpressionErrorsAreListedTogether() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/gw.json5"
        try """
            {
              gateway: { fences: "\(repositoryRoot)/fences" },
              output: { qos: 3 },
              triggers: [
                { name: "a", fences: ["garden-sections"], rule: "entre" },
                { name: "b", fences: ["fleet"], message: "'x' + (" },
              ],
            }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let report = CheckCommand.check(configFile: config, fencesFolder: nil)
        // The config's own error stops before fences and triggers are read.
        #expect(report.errors == ["\(config):3:13: output.qos: expected a whole number from 0 to 1, found 3"])
        try String(contentsOfFile: config, encoding: .utf8).replacingOccurrences(of: "qos: 3", with: "qos: 1")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let second = CheckCommand.check(configFile: config, fencesFolder: nil)
        #expect(second.errors.count == 2, "\(second.errors)")
        #expect(second.errors.first?.hasPrefix("\(config):5:") == true)
        #expect(second.errors.first?.contains("rule") == true)
        #expect(second.errors.last?.hasPrefix("\(config):6:") == true)
        #expect(second.errors.last?.contains("message") == true)
    }

    /// A bad `speedLimit` is reported at its line and column, naming the trigger and what was
    /// expected; a good one (a number, or a fence property) passes.
    @Test func aBadSpeedLimitNamesTheTriggerAndWhatWasExpected() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/gw.json5"
        try """
            {
              gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [
                { name: "yard", fences: ["garden-sections"], speedLimit: 5 },
                { name: "roads", fences: ["fleet"], speedLimit: "50 km/h" },
                { name: "zones", fences: ["fleet"], speedLimit: { property: "maxspeed" } },
              ],
            }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let report = CheckCommand.check(configFile: config, fencesFolder: nil)
        #expect(report.errors == [
            #"\#(config):5:41: triggers[1] ("roads"): speedLimit: expected a speed in m/s > 0 or {"property": NAME}, found "50 km/h""#
        ])
        #expect(report.summary == "1 error found")
    }

    @Test func layersWithoutFileAreNamedAsRuntimeLayers() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "t", fences: ["garden-section", "fleet"] } ] }
            """.write(toFile: directory + "/gw.json5", atomically: true, encoding: .utf8)
        let report = CheckCommand.check(configFile: directory + "/gw.json5", fencesFolder: nil)
        #expect(report.errors == [])
        #expect(report.notes == [
            "note: layer \"garden-section\" has no file in \(repositoryRoot)/fences: it is a runtime layer, its fences arrive on geotriggers/fences/garden-section/FENCE_ID"
        ])
        #expect(report.summary == "\(repositoryRoot)/fences: 3 layers, 22 fences, 1 trigger, no errors")
    }

    @Test func argumentsAndHelp() async {
        #expect(await GeotriggerCommand.main(["check", "--config", "/nonexistent/geotrigger.json5"]) == ExitStatus.usage)
        #expect(await GeotriggerCommand.main(["check", "extra"]) == ExitStatus.usage)
        #expect(await GeotriggerCommand.main(["check", "--help"]) == ExitStatus.ok)
        #expect(GeotriggerCommand.subcommands.contains { $0.name == "check" })
    }

    @Test func realBinaryChecksTheDefaultFolder() throws {
        // A load slower than a second (a busy machine) also logs its progress on standard error.
        func withoutProgress(_ text: String) -> [Substring] {
            text.split(separator: "\n").filter { !$0.hasPrefix("notice [geotrigger] loading fences: ") && !$0.hasPrefix("notice [geotrigger] loaded fences: ") }
        }
        let ok = try runGeotrigger(["check"])
        #expect(ok.status == 0)
        #expect(ok.out == "fences: 3 layers, 22 fences, 3 triggers, no errors\n")
        #expect(withoutProgress(ok.err) == [])

        let bad = try runGeotrigger(["check", "--fences", "Tests/Fixtures/fences-bad"])
        #expect(bad.status == 2)
        let lines = withoutProgress(bad.err)
        #expect(lines.count == 47)
        #expect(lines.last == "46 errors found")
        #expect(lines.contains("Tests/Fixtures/fences-bad/invalid-json.geojson:8:7: expected ',' or '}' after object member"))
        #expect(bad.out == "")

        let config = try runGeotrigger(["check", "--config", "geotrigger.json5"])
        #expect(config.status == 2)
        #expect(config.err.contains("geotrigger.json5: cannot read the config file: no such file"))
    }
}

/// `fences.maxVertices` (docs/configuration.md "The config file"): `check` reports a fence over it, naming the
/// file, the feature and the limit; under the default the same file is valid.
@Suite struct CheckMaxVerticesTests {
    @Test func aFenceOverMaxVerticesIsReported() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/fences", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A 12-gon: 13 positions with the closing one.
        var ring: [String] = []
        for k in 0..<12 {
            let angle = Double(k) / 12 * 2 * Double.pi
            ring.append("[\(8.5 + 0.01 * cos(angle)), \(47.3 + 0.01 * sin(angle))]")
        }
        ring.append(ring[0])
        try """
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "id": "yard", "properties": {"name": "Yard"},
               "geometry": {"type": "Polygon", "coordinates": [[\(ring.joined(separator: ", "))]]}}]}
            """.write(toFile: directory + "/fences/depots.geojson", atomically: true, encoding: .utf8)
        let config = directory + "/gw.json5"
        try #"{ fences: { maxVertices: 12 } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let report = CheckCommand.check(configFile: config, fencesFolder: nil)
        #expect(report.errors == [
            directory + #"/fences/depots.geojson: feature 0 ("Yard"): Polygon has 13 positions, more than fences.maxVertices (12) allows"#,
        ])
        try #"{ fences: { maxVertices: 13 } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(CheckCommand.check(configFile: config, fencesFolder: nil).errors == [])
    }
}
