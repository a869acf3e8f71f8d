import FoundationEssentials
import Store

/// `geotrigger events`: prints events from the event journal (the gateway's SQLite database).
enum EventsCommand: Subcommand {
    static let name = "events"
    static let summary = "query the event journal"
    static let help = """
        Usage: geotrigger events [--since TIME] [--device ID] [--trigger NAME] [--fence ID]
                                 [--json] [--database FILE] [--config FILE]

        Prints the events the gateway journaled, oldest first (in the order they were committed).

          --since TIME      only events whose deciding fix time is at or after TIME: ISO-8601
                            (2026-11-30T12:00:00Z, 2026-11-30T13:00:00+01:00, 2026-11-30) or
                            epoch seconds (1796040000)
          --device ID       only this device (such as workers/alice)
          --trigger NAME    only this trigger
          --fence ID        only this fence id (in any layer)
          --json            one event per line, exactly as published on MQTT (the event schema)
          --database FILE   the gateway database (default ./geotrigger.db)
          --config FILE     the gateway config (its gateway.database is read)

        Without --json each event is one line: fix time, type, device, layer/fence (name),
        trigger, reason, and message when there is one. Control characters in them (names and
        messages may come from MQTT) are shown as escapes such as \\u{1b}; with --json they are
        JSON escapes (\\u001b, \\u009b, \\u2028), so each line still decodes to the event as
        published. The journal keeps events for journal.retentionDays days. The database is
        opened read-only; the gateway may be running.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let options = try Arguments(arguments, valued: ["since", "device", "trigger", "fence", "database", "config"],
                                    flags: ["json"])
        if let extra = options.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        var config = GatewayConfig()
        if let file = options["config"] {
            do { config = try GatewayConfig.load(file: file) } catch { throw UsageError(error.description) }
        }
        let path = options["database"] ?? config.resolve(config.gateway.database)
        if path.isEmpty { throw UsageError("--database expects a file name") }
        var query = JournalQuery(device: options["device"], trigger: options["trigger"], fence: options["fence"])
        if let since = options["since"] { query.since = try parseTime(since, option: "since") }
        guard fileExists(path) else {
            throw UsageError("--database \(path): no such file (the gateway creates it at gateway.database)")
        }
        let store: GatewayStore
        do {
            store = try await GatewayStore(path: path, options: GatewayStore.Options(readOnly: true))
        } catch {
            printError("geotrigger events: cannot read the journal in \(path): \(error)")
            return ExitStatus.failure
        }
        let entries = try await store.events(query)
        await store.close()
        let json = options.has("json")
        var output = ""
        for entry in entries {
            // Names, device ids and messages may come from anyone who can publish to the broker.
            output += json ? ControlCharacters.escapedJSON(entry.event.payload) : Logger.escaped(describe(entry.event))
            output += "\n"
            if output.utf8.count > 64 * 1024 {
                print(output, terminator: "")
                output = ""
            }
        }
        print(output, terminator: "")
        return ExitStatus.ok
    }

    /// ISO-8601 (with or without fractional seconds or a time of day) or epoch seconds.
    static func parseTime(_ text: String, option: String) throws(UsageError) -> Double {
        if let seconds = Double(text), seconds.isFinite { return seconds }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date.timeIntervalSince1970
        }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day()) {
            return date.timeIntervalSince1970
        }
        throw UsageError("--\(option) expects an ISO-8601 time (2026-11-30T12:00:00Z) or epoch seconds, got '\(text)'")
    }

    /// The keys of an event payload the text form shows beyond the journal's columns.
    private struct PayloadSummary: Decodable {
        struct FenceSummary: Decodable { var name: String? }
        var reason: String?
        var inferred: Bool?
        var message: String?
        var dwellSeconds: Double?
        var fence: FenceSummary?
        var trip: String?
    }

    /// One readable line: `2026-11-30T12:00:00Z  enter  workers/alice  garden/desert (Desert Section)  trigger garden  "Entered Desert Section"`.
    static func describe(_ event: JournalEvent) -> String {
        let summary = try? JSONDecoder().decode(PayloadSummary.self, from: Data(event.payload.utf8))
        let time = Date(timeIntervalSince1970: event.fixTime)
            .formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: event.fixTime.rounded() != event.fixTime))
        // A trip's event (docs/trips.md "Events") has its trip where a fence event has its fence.
        let place = event.layer.isEmpty && event.fence.isEmpty ? summary?.trip.map { "trip \($0)" } : nil
        var line = "\(time)  \(event.type.padding(toLength: 5)) \(event.device)  " + (place ?? "\(event.layer)/\(event.fence)")
        if let name = summary?.fence?.name, !name.isEmpty { line += " (\(name))" }
        line += "  trigger \(event.trigger)"
        if summary?.inferred == true { line += "  inferred" }
        if let reason = summary?.reason, reason != "moved" { line += "  reason \(reason)" }
        if let dwell = summary?.dwellSeconds { line += "  after \(Int(dwell.rounded())) s" }
        if let message = summary?.message, !message.isEmpty { line += "  \"\(message)\"" }
        return line
    }

    private static func fileExists(_ path: String) -> Bool {
        (try? FileManager.default.attributesOfItem(atPath: path)) != nil
    }
}
