#if canImport(Glibc)
import Glibc
#endif

/// A `geotrigger` subcommand.
package protocol Subcommand: Sendable {
    /// The word that selects it: `serve`, `check`, ...
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// The whole `--help` text.
    static var help: String { get }
    /// Runs with the arguments after the subcommand's name; returns the exit status.
    static func run(_ arguments: [String]) async throws -> Int32
    /// Whether `--help` after further words is the subcommand's own (`bench NAME --help`),
    /// rather than a request for this command's help.
    static var forwardsHelp: Bool { get }
}

extension Subcommand {
    package static var forwardsHelp: Bool { false }
}

/// Exit statuses of every command (docs/commands.md).
public enum ExitStatus {
    public static let ok: Int32 = 0
    public static let failure: Int32 = 1
    public static let usage: Int32 = 2
}

/// The `geotrigger` command line: picks the subcommand and maps errors to exit statuses.
public enum GeotriggerCommand {
    /// The product's commands; the executable adds `bench` (module Benchmarks) before `version`.
    static let subcommands: [any Subcommand.Type] = [
        ServeCommand.self,
        CheckCommand.self,
        LocateCommand.self,
        WatchCommand.self,
        SimulateCommand.self,
        ReplayCommand.self,
        EventsCommand.self,
    ]

    static func overview(_ subcommands: [any Subcommand.Type]) -> String {
        var text = """
            geotrigger: an MQTT geotrigger gateway. Turns device positions into geofence events.

            Usage: geotrigger COMMAND [OPTIONS]    (geotrigger COMMAND --help for each)

            Commands:

            """
        for command in subcommands {
            text += "  " + command.name.padding(toLength: 10) + command.summary + "\n"
        }
        text += "\nEvery command takes --config FILE. Exit status: 0 ok, 1 runtime failure, 2 usage or config error.\n"
        return text
    }

    /// Runs the command line `arguments` (without the program name) and returns the exit status.
    /// `more`: commands of other modules, listed after the product's.
    package static func main(_ arguments: [String], more: [any Subcommand.Type] = []) async -> Int32 {
        let subcommands = Self.subcommands + more + [VersionCommand.self]
        let overview = overview(subcommands)
        guard let first = arguments.first, first != "--help", first != "-h", first != "help" else {
            print(overview, terminator: "")
            return arguments.isEmpty ? ExitStatus.usage : ExitStatus.ok
        }
        guard let command = subcommands.first(where: { $0.name == first }) else {
            printError("geotrigger: unknown command '\(first)'\n\n" + overview)
            return ExitStatus.usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.first == "--help" || rest.first == "-h" || (!command.forwardsHelp && rest.contains("--help")) {
            print(command.help)
            return ExitStatus.ok
        }
        do {
            return try await command.run(rest)
        } catch let error as UsageError {
            printError("geotrigger \(command.name): \(error.message)\n(see geotrigger \(command.name) --help)")
            return ExitStatus.usage
        } catch {
            printError("geotrigger \(command.name): \(error)")
            return ExitStatus.failure
        }
    }
}

/// Writes `text` and a newline to standard error.
package func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

extension String {
    package func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
