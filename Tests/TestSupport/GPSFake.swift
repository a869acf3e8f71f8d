import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `gpsfake -1 -q -P PORT -c CYCLE LOG`, launched directly (its PID is gpsfake's) and stopped by
/// PID together with the private gpsd it starts.
///
/// gpsfake quirks handled here:
/// - with `-1` and no `-p` it never exits by itself after the log (it waits 60 s, then fails
///   with "Test timed out"), so a test always stops it;
/// - it starts gpsd as its child (`gpsd -b -N -S PORT -F /tmp/gpsfake-PID.sock`); SIGTERM to
///   gpsfake runs its cleanup (ends and reaps gpsd) but can leave gpsfake itself running, and
///   SIGKILL to gpsfake alone orphans gpsd (a zombie of init here, which does not reap). So
///   gpsd is signalled first, then gpsfake gets SIGTERM, then SIGKILL;
/// - without `-n`, gpsd opens the pty only when a client watches, and discards what was written
///   before it was ready: start the reader first, and lead logs in (GPSDTests' `Fixtures.leadIn`).
public final class GPSFake {
    public let port: Int
    public let log: URL
    private let process: Process
    private let stderrURL: URL

    /// Starts `gpsfake -1 -q -P PORT -c CYCLE LOG` (CYCLE seconds per sentence).
    public init(log: URL, port: Int, cycle: Double) throws {
        self.port = port
        self.log = log
        stderrURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("geotrigger-gpsfake-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gpsfake")
        process.arguments = ["-1", "-q", "-P", String(port), "-c", String(cycle), log.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    public var pid: pid_t { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// What gpsfake and its gpsd wrote to stderr, for failure messages.
    public var diagnostics: String {
        (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
    }

    /// The PID of gpsfake's gpsd child, if it is running.
    public var daemonPID: pid_t? { GPSFake.children(of: pid, named: "gpsd").first }

    /// Waits until gpsfake's gpsd runs; returns its PID.
    public func waitForDaemon(timeout: Double = 20) async -> pid_t? {
        var daemon: pid_t?
        _ = await poll(timeout: .milliseconds(Int(timeout * 1000))) {
            daemon = daemonPID
            return daemon != nil || !process.isRunning
        }
        return daemon
    }

    /// Kills gpsd as a crash would (SIGKILL), then ends gpsfake (see `stop()`).
    public func killDaemon() async {
        await terminate(daemonSignal: SIGKILL)
    }

    /// Stops gpsd and gpsfake and removes the temporary stderr file.
    public func stop() async {
        await terminate(daemonSignal: SIGTERM)
        try? FileManager.default.removeItem(at: stderrURL)
    }

    /// Signals gpsd, then makes sure gpsfake reaps it and exits. When gpsd dies while gpsfake is
    /// blocked writing to the pty nobody reads any more, gpsfake does not notice; its SIGTERM
    /// handler still reaps gpsd (so no zombie is left to init), but gpsfake may keep running,
    /// hence the final SIGKILL.
    private func terminate(daemonSignal: Int32) async {
        let daemon = daemonPID
        if let daemon { kill(daemon, daemonSignal) }
        await waitForExit(timeout: 2)
        if process.isRunning {
            kill(pid, SIGTERM)
            await waitForExit(timeout: 2)
        }
        if process.isRunning {
            kill(pid, SIGKILL)
            await waitForExit(timeout: 5)
        }
        if let daemon, GPSFake.isAlive(daemon) {
            kill(daemon, SIGKILL)
        }
    }

    private func waitForExit(timeout: Double) async {
        _ = await poll(timeout: .milliseconds(Int(timeout * 1000))) { !process.isRunning }
    }

    /// PIDs whose parent is `parent` and whose command name is `name` (from /proc/PID/stat).
    public static func children(of parent: pid_t, named name: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let candidate = pid_t(entry), let stat = self.stat(of: candidate) else { return nil }
            return stat.parent == parent && stat.name == name && stat.state != "Z" ? candidate : nil
        }
    }

    /// Whether `pid` exists and is not a zombie.
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = stat(of: pid) else { return false }
        return stat.state != "Z"
    }

    private static func stat(of pid: pid_t) -> (name: String, state: Character, parent: pid_t)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        let name = String(text[text.index(after: open)..<close])
        let rest = text[text.index(after: close)...].split(separator: " ")
        guard rest.count > 2, let state = rest[0].first, let parent = pid_t(rest[1]) else { return nil }
        return (name, state, parent)
    }

    /// A loopback TCP port nobody listens on right now.
    public static func freePort() throws -> Int { try FreePort.next() }
}
