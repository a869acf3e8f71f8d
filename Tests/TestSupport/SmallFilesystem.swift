import Foundation

/// A small file system of its own (a tmpfs of `bytes`, mounted on a fresh folder: the tests run
/// as root) that a test fills up, so that a gateway process whose database lives there is
/// refused writes for real (`SQLITE_FULL`), with no hook in the gateway; removing the filler
/// makes room again. Unmounted when the last reference goes away.
public final class SmallFilesystem: Sendable {
    /// The mount point: absolute, no trailing slash.
    public let path: String
    private var filler: String { "\(path)/filler" }

    /// Mounts a tmpfs of `bytes` on `/tmp/PREFIX-XXXXXX`.
    public init(bytes: Int = 8 << 20, prefix: String = "small-fs") throws {
        var template = Array("\(NSTemporaryDirectory())/\(prefix)-XXXXXX".utf8CString)
        guard let created = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestSupportError("mkdtemp failed for prefix \(prefix): \(String(cString: strerror(errno)))")
        }
        path = String(cString: created).replacingOccurrences(of: "//", with: "/")
        do {
            try ExternalProgram.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0755", "tmpfs", path])
        } catch {
            rmdir(path)
            throw TestSupportError("a full disk needs a tmpfs of its own, and mounting one needs root: \(error)")
        }
    }

    deinit {
        // Lazy: a gateway killed a moment ago may still hold its files open.
        _ = try? ExternalProgram.run("/bin/umount", ["-l", path])
        rmdir(path)
    }

    /// The path of `name` on this file system.
    public func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Takes every free block with a filler file: from now on a write that needs a new block
    /// fails with `ENOSPC`. Returns the bytes it took.
    @discardableResult
    public func fill() throws -> Int {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestSupportError("cannot create \(filler): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0, count: 64 << 10)
        var taken = 0
        while true {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            if n > 0 {
                taken += n
                continue
            }
            guard errno == ENOSPC else { throw TestSupportError("filling \(path): \(String(cString: strerror(errno)))") }
            return taken
        }
    }

    /// Removes the filler: writes find room again.
    public func makeRoom() {
        unlink(filler)
    }
}
