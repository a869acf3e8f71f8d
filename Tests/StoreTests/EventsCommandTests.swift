import Foundation
import Testing
import TestSupport
import Store

/// `geotrigger events`, run as the real binary against a journal written by ``GatewayStore``.
@Suite struct EventsCommandTests {
    static let payloads = [
        #"{"id":"e1","visit":"e1","gateway":"gw-1","trigger":"garden","device":"workers/alice","type":"enter","notification":"entered","fence":{"id":"desert","layer":"sections","name":"Desert Section","properties":{}},"position":{"lat":34.45,"lon":-119.71,"time":"2026-11-30T12:00:00Z"},"distance":-3.2,"message":"Entered Desert Section","actions":[],"properties":{},"emitted":"2026-11-30T12:00:00.120Z"}"#,
        #"{"id":"e2","visit":"x","gateway":"gw-1","trigger":"depot","device":"vehicles/v17","type":"enter","notification":"entered","fence":{"id":"gate","layer":"depot","name":"Gate","properties":{}},"position":{"lat":34.4,"lon":-119.7,"time":"2026-11-30T12:30:00Z"},"distance":-1,"actions":[],"properties":{},"emitted":"2026-11-30T12:30:00.050Z"}"#,
        #"{"id":"e3","visit":"e1","gateway":"gw-1","trigger":"garden","device":"workers/alice","type":"exit","notification":"exited","reason":"stale","fence":{"id":"desert","layer":"sections","name":"Desert Section","properties":{}},"position":{"lat":34.45,"lon":-119.71,"time":"2026-11-30T13:00:00Z"},"distance":-3.2,"dwellSeconds":3600,"actions":[],"properties":{},"emitted":"2026-11-30T13:10:00Z"}"#,
    ]

    static func journal(in directory: TemporaryDirectory) async throws -> String {
        let path = directory.file("journal.db")
        let store = try await GatewayStore(path: path)
        let t = 1_796_040_000.0  // 2026-11-30T12:00:00Z
        _ = try await store.commit(StoreBatch(events: [
            JournalEvent(id: "e1", device: "workers/alice", trigger: "garden", layer: "sections", fence: "desert",
                         type: "enter", fixTime: t, emittedTime: t + 0.12, payload: payloads[0]),
            JournalEvent(id: "e2", device: "vehicles/v17", trigger: "depot", layer: "depot", fence: "gate",
                         type: "enter", fixTime: t + 1800, emittedTime: t + 1800.05, payload: payloads[1]),
        ]))
        _ = try await store.commit(StoreBatch(events: [
            JournalEvent(id: "e3", device: "workers/alice", trigger: "garden", layer: "sections", fence: "desert",
                         type: "exit", fixTime: t + 3600, emittedTime: t + 4200, payload: payloads[2]),
        ]))
        await store.close()
        return path
    }

    @Test func jsonPrintsEachEventExactlyAsStoredWithFilters() async throws {
        let directory = try TemporaryDirectory()
        let database = try await Self.journal(in: directory)
        let all = try BuiltProducts.run("geotrigger", ["events", "--json", "--database", database], in: directory.path)
        #expect(all.status == 0, "\(all.error)")
        #expect(all.output == Self.payloads.joined(separator: "\n") + "\n")

        let alice = try BuiltProducts.run(
            "geotrigger", ["events", "--json", "--database", database, "--device", "workers/alice",
                           "--since", "2026-11-30T12:15:00Z"], in: directory.path)
        #expect(alice.output == Self.payloads[2] + "\n")
        let epoch = try BuiltProducts.run(
            "geotrigger", ["events", "--json", "--database=\(database)", "--since", "1796041800"], in: directory.path)
        #expect(epoch.output == Self.payloads[1] + "\n" + Self.payloads[2] + "\n")
        let byTrigger = try BuiltProducts.run(
            "geotrigger", ["events", "--json", "--database", database, "--trigger", "depot"], in: directory.path)
        #expect(byTrigger.output == Self.payloads[1] + "\n")
        let byFence = try BuiltProducts.run(
            "geotrigger", ["events", "--json", "--database", database, "--fence", "desert"], in: directory.path)
        #expect(byFence.output == Self.payloads[0] + "\n" + Self.payloads[2] + "\n")
    }

    @Test func textPrintsOneReadableLinePerEvent() async throws {
        let directory = try TemporaryDirectory()
        let database = try await Self.journal(in: directory)
        let text = try BuiltProducts.run("geotrigger", ["events", "--database", database], in: directory.path)
        #expect(text.status == 0, "\(text.error)")
        #expect(text.output.split(separator: "\n") == [
            #"2026-11-30T12:00:00Z  enter  workers/alice  sections/desert (Desert Section)  trigger garden  "Entered Desert Section""#,
            "2026-11-30T12:30:00Z  enter  vehicles/v17  depot/gate (Gate)  trigger depot",
            "2026-11-30T13:00:00Z  exit  workers/alice  sections/desert (Desert Section)  trigger garden  reason stale  after 3600 s",
        ])
    }

    /// A fence name that would retitle the window and clear the screen, with a C1 CSI and a
    /// line separator: what the gateway's serializer writes (C0 escaped, the rest raw).
    static let hostileName = "\u{1b}]0;x\u{07}\u{1b}[2J\u{9b}\u{2028}"
    static let hostilePayload =
        #"{"id":"h1","visit":"h1","gateway":"gw-1","trigger":"garden","device":"workers/b\#u{9b}ob","type":"enter","notification":"entered","fence":{"id":"runtime-1","layer":"runtime","name":"\u001b]0;x\u0007\u001b[2J\#u{9b}\#u{2028}","properties":{}},"position":{"lat":34.45,"lon":-119.71,"time":"2026-11-30T12:00:00Z"},"distance":-1,"message":"Entered \u001b]0;x\u0007\u001b[2J\#u{9b}\#u{2028}","actions":[],"properties":{},"emitted":"2026-11-30T12:00:00Z"}"#

    @Test func controlCharactersFromTheJournalNeverReachTheTerminal() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("hostile.db")
        let store = try await GatewayStore(path: path)
        _ = try await store.commit(StoreBatch(events: [
            JournalEvent(id: "h1", device: "workers/b\u{9b}ob", trigger: "garden", layer: "runtime", fence: "runtime-1",
                         type: "enter", fixTime: 1_796_040_000, emittedTime: 1_796_040_000, payload: Self.hostilePayload),
        ]))
        await store.close()

        let text = try BuiltProducts.run("geotrigger", ["events", "--database", path], in: directory.path)
        #expect(text.status == 0, "\(text.error)")
        let textRaw = Self.rawControls(text.output)
        #expect(textRaw.isEmpty, "\(textRaw.count) raw control characters (\(textRaw.filter { $0 == 0x1B }.count) ESC): \(text.output.debugDescription)")
        #expect(text.output == #"2026-11-30T12:00:00Z  enter  workers/b\u{9b}ob  runtime/runtime-1 (\u{1b}]0;x\u{7}\u{1b}[2J\u{9b}\u{2028})  trigger garden  "Entered \u{1b}]0;x\u{7}\u{1b}[2J\u{9b}\u{2028}""# + "\n")

        let json = try BuiltProducts.run("geotrigger", ["events", "--json", "--database", path], in: directory.path)
        #expect(json.status == 0, "\(json.error)")
        let jsonRaw = Self.rawControls(json.output)
        #expect(jsonRaw.isEmpty, "\(jsonRaw.count) raw control characters (\(jsonRaw.filter { $0 == 0x1B }.count) ESC): \(json.output.debugDescription)")
        let lines = json.output.split(separator: "\n")
        #expect(lines.count == 1)
        let event = try #require(try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any])
        #expect((event["fence"] as? [String: Any])?["name"] as? String == Self.hostileName)
        #expect(event["message"] as? String == "Entered " + Self.hostileName)
        #expect(event["device"] as? String == "workers/b\u{9b}ob")
    }

    /// The scalars of `output` a terminal acts on: C0 but the line feed, DEL, C1, U+2028, U+2029.
    static func rawControls(_ output: String) -> [UInt32] {
        output.unicodeScalars.map(\.value).filter {
            ($0 < 0x20 && $0 != 0x0A) || (0x7F...0x9F).contains($0) || $0 == 0x2028 || $0 == 0x2029
        }
    }

    @Test func usageErrorsExitTwoAndSayWhy() async throws {
        let directory = try TemporaryDirectory()
        let database = try await Self.journal(in: directory)
        let config = try BuiltProducts.run("geotrigger", ["events", "--config", "gw.json5", "--database", database], in: directory.path)
        #expect(config.status == 2)
        #expect(config.error.contains("gw.json5: cannot read the config file: no such file"))
        // With a config, gateway.database (relative to the config's folder) is the journal.
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        let name = URL(fileURLWithPath: database).lastPathComponent
        try "{ gateway: { database: \"../\(name)\" } }".write(toFile: directory.file("etc/real.json5"), atomically: true, encoding: .utf8)
        let viaConfig = try BuiltProducts.run("geotrigger", ["events", "--config", directory.file("etc/real.json5"), "--json"], in: directory.path)
        #expect(viaConfig.status == 0, "\(viaConfig.error)")
        #expect(viaConfig.output.split(separator: "\n").count == 3)
        let missing = try BuiltProducts.run("geotrigger", ["events", "--database", directory.file("none.db")], in: directory.path)
        #expect(missing.status == 2)
        #expect(missing.error.contains("none.db: no such file"))
        let since = try BuiltProducts.run("geotrigger", ["events", "--database", database, "--since", "yesterday"], in: directory.path)
        #expect(since.status == 2)
        #expect(since.error.contains("--since expects an ISO-8601 time"))
        let help = try BuiltProducts.run("geotrigger", ["events", "--help"], in: directory.path)
        #expect(help.status == 0)
        #expect(help.output.contains("Usage: geotrigger events [--since TIME]"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("none.db")))
    }
}
