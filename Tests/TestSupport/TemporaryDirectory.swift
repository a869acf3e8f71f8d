import Foundation

/// A fresh directory under the system temp folder, removed (with its contents) when the last
/// reference goes away.
public final class TemporaryDirectory: Sendable {
    /// Absolute path, no trailing slash.
    public let path: String

    /// Creates `/tmp/PREFIX-XXXXXX`.
    public init(prefix: String = "geotrigger-test") throws {
        var template = Array("\(NSTemporaryDirectory())/\(prefix)-XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestSupportError("mkdtemp failed for prefix \(prefix): \(String(cString: strerror(errno)))")
        }
        path = String(cString: created).replacingOccurrences(of: "//", with: "/")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// The path of `name` inside this directory.
    public func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Writes `text` to `name` inside this directory and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let target = file(name)
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        return target
    }
}

/// A failure in test plumbing (a program that would not start, a file not written), with a
/// message saying what was expected.
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
