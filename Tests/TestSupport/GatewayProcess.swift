import Foundation

/// The real `geotrigger` binary, started by a test with its own config and stopped by its PID.
public final class GatewayProcess: @unchecked Sendable {
    /// The built `geotrigger` next to the test bundle (`swift build` builds it before the tests).
    public static var executable: String {
        (try? BuiltProducts.path("geotrigger")) ?? repositoryRoot + "/.build/debug/geotrigger"
    }

    public let arguments: [String]
    public let directory: String
    public let logFile: String
    private let process = Process()

    /// Starts `geotrigger ARGUMENTS` in `directory`, standard error and output into `logFile`.
    public init(_ arguments: [String], directory: String, logFile: String, environment: [String: String] = [:]) throws {
        self.arguments = arguments
        self.directory = directory
        self.logFile = logFile
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logFile))
        handle.seekToEndOfFile()
        process.executableURL = URL(fileURLWithPath: GatewayProcess.executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        var env = ProcessInfo.processInfo.environment
        env["GEOTRIGGER_LOG_LEVEL"] = env["GEOTRIGGER_LOG_LEVEL"] ?? "debug"
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardError = handle
        process.standardOutput = handle
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// Sends `signal` to the gateway's PID.
    public func signal(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    /// SIGTERM, then waits for the exit (SIGKILL after `timeout` seconds); returns the exit status.
    @discardableResult
    public func terminate(timeout: Double = 20) -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        signal(SIGTERM)
        return waitForExit(timeout: timeout) ?? { kill(); return -1 }()
    }

    /// SIGKILL (the `kill -9` of the durability tests) and wait.
    public func kill() {
        guard process.isRunning else { return }
        signal(SIGKILL)
        process.waitUntilExit()
    }

    /// Waits for the process to exit by itself; its status, or nil on time-out.
    public func waitForExit(timeout: Double) -> Int32? {
        _ = pollBlocking(timeout: .milliseconds(Int(timeout * 1000)), interval: .milliseconds(10)) { !process.isRunning }
        if process.isRunning { return nil }
        return process.terminationStatus
    }

    deinit { kill() }
}
