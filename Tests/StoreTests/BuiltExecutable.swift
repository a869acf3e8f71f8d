import Foundation
import TestSupport

/// Finds a program of this package built next to the test bundle (`swift build --build-tests`
/// builds every executable), falling back to `.build/debug`.
enum BuiltExecutable {
    struct Missing: Error, CustomStringConvertible {
        var name: String
        var candidates: [String]
        var description: String {
            "\(name) not found at \(candidates.joined(separator: " or ")): build it with `swift build --build-tests`"
        }
    }

    static func path(_ name: String) throws -> String {
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path)
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/\(name)").path)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Missing(name: name, candidates: candidates)
        }
        return found
    }

    /// Runs `name` with `arguments` to completion, its output going to files in `directory`:
    /// exit status, stdout, stderr.
    static func run(_ name: String, _ arguments: [String], in directory: TemporaryDirectory) throws
        -> (status: Int32, output: String, error: String)
    {
        let outputPath = directory.file("stdout-\(UUID().uuidString)")
        let errorPath = directory.file("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path(name))
        process.arguments = arguments
        process.standardOutput = FileHandle(forWritingAtPath: outputPath)
        process.standardError = FileHandle(forWritingAtPath: errorPath)
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus,
                try String(contentsOfFile: outputPath, encoding: .utf8),
                try String(contentsOfFile: errorPath, encoding: .utf8))
    }
}
