import Foundation

/// The repository's root, found from this file's path (`Tests/TestSupport/BuiltProducts.swift`).
public let repositoryRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

/// The package's programs as `swift build --build-tests` left them: `geotrigger`, `StoreHelper`.
public enum BuiltProducts {
    public struct Missing: Error, CustomStringConvertible {
        public var name: String
        public var candidates: [String]
        public var description: String {
            "\(name) not found at \(candidates.joined(separator: " or ")): build it with `swift build --build-tests`"
        }
    }

    /// `name` next to the running test bundle, else in `.build/debug`.
    public static func path(_ name: String) throws -> String {
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path)
        }
        candidates.append(repositoryRoot + "/.build/debug/\(name)")
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Missing(name: name, candidates: candidates)
        }
        return found
    }

    /// Runs `name` with `arguments` in `directory` to completion: exit status, standard output
    /// and standard error. Output goes through temporary files, so a long one never blocks on a
    /// full pipe.
    public static func run(_ name: String, _ arguments: [String], in directory: String) throws
        -> (status: Int32, output: String, error: String)
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outputPath = folder.appendingPathComponent("out").path, errorPath = folder.appendingPathComponent("err").path
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path(name))
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        try output.close()
        try error.close()
        return (process.terminationStatus,
                try String(contentsOfFile: outputPath, encoding: .utf8),
                try String(contentsOfFile: errorPath, encoding: .utf8))
    }
}
