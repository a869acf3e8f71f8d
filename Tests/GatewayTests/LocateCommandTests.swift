import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct LocateCommandTests {
    struct Row: Decodable, Equatable {
        var trigger: String
        var layer: String
        var fence: String
        var name: String?
        var inside: Bool
        var distance: Double
    }

    func locate(_ arguments: [String]) throws -> (status: Int32, rows: [Row], err: String) {
        let r = try runGeotrigger(["locate"] + arguments)
        let rows = r.status == 0 ? try JSONDecoder().decode([Row].self, from: Data(r.out.utf8)) : []
        return (r.status, rows, r.err)
    }

    @Test func jsonListsNearbyFencesPerTrigger() throws {
        // A point in the Redwood Section, 14.7 m from the Desert Section.
        let r = try locate(["34.4561", "-119.7067", "--json"])
        #expect(r.status == 0, "\(r.err)")
        let redwood = try #require(r.rows.first { $0.fence == "redwood" })
        #expect(redwood.inside && redwood.distance < 0 && redwood.trigger == "garden-sections")
        let desert = try #require(r.rows.first { $0.fence == "desert" })
        #expect(!desert.inside && desert.distance > 0)
        #expect(r.rows.allSatisfy { $0.distance <= 100 })
        #expect(r.rows.map(\.distance) == r.rows.map(\.distance).sorted())
    }

    @Test func configTriggersDecideInside() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("locate-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // With a 20 m buffer the Desert Section (14.7 m away) contains the point.
        try """
            { gateway: { fences: "\(repositoryRoot)/fences" },
              triggers: [ { name: "wide", fences: ["garden-sections"], buffer: 20 } ] }
            """.write(toFile: directory + "/gw.json5", atomically: true, encoding: .utf8)
        let r = try locate(["34.4561", "-119.7067", "--json", "--config", directory + "/gw.json5"])
        #expect(r.status == 0, "\(r.err)")
        #expect(Set(r.rows.map(\.trigger)) == ["wide"])
        let desert = try #require(r.rows.first { $0.fence == "desert" })
        #expect(desert.inside && desert.distance < 0)
    }

    /// Fence names come from files: the table and the JSON show their control characters
    /// escaped, and the JSON still decodes to the name.
    @Test func controlCharactersInFenceNamesAreEscaped() throws {
        let directory = try TemporaryDirectory()
        let fences = try HostileFences.write(in: directory)
        let text = try runGeotrigger(["locate", "10.0005", "10.0005", "--fences", fences])
        #expect(text.status == 0, "\(text.err)")
        let textRaw = HostileFences.rawControls(text.out)
        #expect(textRaw.isEmpty, "\(HostileFences.report(textRaw, in: text.out))")
        let rows = text.out.split(separator: "\n")
        #expect(rows.count == 2)
        #expect(rows.last?.hasPrefix(#"hostile  hostile  square  \u{1b}]0;x\u{7}\u{1b}[2J\u{9b}\u{2028}  yes"#) == true, "\(rows)")

        let json = try locate(["10.0005", "10.0005", "--fences", fences, "--json"])
        #expect(json.status == 0, "\(json.err)")
        let raw = try runGeotrigger(["locate", "10.0005", "10.0005", "--fences", fences, "--json"]).out
        let jsonRaw = HostileFences.rawControls(raw)
        #expect(jsonRaw.isEmpty, "\(HostileFences.report(jsonRaw, in: raw))")
        #expect(json.rows.map(\.name) == [HostileFences.name])
    }

    @Test func usageErrors() throws {
        #expect(try runGeotrigger(["locate", "91", "0"]).status == 2)
        #expect(try runGeotrigger(["locate", "1"]).status == 2)
        #expect(try runGeotrigger(["locate", "1", "2", "--accuracy", "-3"]).status == 2)
        let missing = try runGeotrigger(["locate", "1", "2", "--config", "/nonexistent/gw.json5"])
        #expect(missing.status == 2 && missing.err.contains("no such file"))
    }
}
