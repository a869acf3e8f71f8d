import Foundation

/// Runs short helper programs (openssl, mosquitto_passwd) to completion.
public enum ExternalProgram {
    /// Runs `path` with `arguments`, waits, and returns its combined output.
    /// - Throws: `TestSupportError` with the command line and its output when it exits non-zero.
    @discardableResult
    public static func run(_ path: String, _ arguments: [String], in directory: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSupportError(
                "\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus):\n\(output)")
        }
        return output
    }
}
