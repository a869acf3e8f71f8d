import Foundation

/// A fresh directory under the system temporary directory, removed when released.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("geotrigger-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A file path inside the directory.
    func file(_ name: String) -> String { path + "/" + name }
}
