import Glibc
import Synchronization

/// One `serve` per database (docs/limits.md): a write lock on `DATABASE.lock`, the file beside
/// the database, held from before the start says anything on the broker until the process ends.
/// A second `serve` on the same database finds it held and refuses to start, naming the
/// holder's PID, before it has published `starting` or connected any client: it never takes the
/// first one's broker session and never writes its outbox.
///
/// The lock is an fcntl record lock (`F_SETLK`, the kind SQLite itself uses): the kernel drops
/// it when its process ends, `kill -9` included, so a stale lock file never keeps a gateway
/// from starting, and `F_GETLK` tells a refused process the holder's PID. fcntl locks belong to
/// a process, not to a file descriptor, so a second lock taken in the same process would not
/// conflict: the process's own locks are also kept in ``held`` (by device and inode, whatever
/// path names the file), and a second one there is refused too. Closing any descriptor of the
/// file would drop the lock, so only this type opens it.
///
/// The file is created with mode 0600 and opened without following a symbolic link; it holds
/// the holder's PID as text (for a person; the refusal asks the kernel), and is left in place
/// at the end (removing it would race with a gateway that has just opened it).
final class DatabaseLock: Sendable {
    /// The lock file of the database at `database`.
    static func path(forDatabase database: String) -> String { database + ".lock" }

    /// Why the lock was not taken.
    enum Failure: Error, Sendable, CustomStringConvertible {
        /// Another process (or this one) holds it: `pid` when the kernel said who.
        case held(database: String, lockFile: String, pid: pid_t?)
        /// The lock file cannot be created, opened or locked.
        case unusable(database: String, lockFile: String, call: String, errno: Int32)

        var description: String {
            switch self {
            case .held(let database, let lockFile, let pid):
                let holder = pid.map { "PID \($0)" } ?? "a process that just let go of it"
                return "the database \(database) is in use by another geotrigger serve (\(holder) holds the lock on \(lockFile)): "
                    + "expected one gateway per database; stop that one first, or give this one a gateway.database of its own"
            case .unusable(let database, let lockFile, let call, let code):
                let reason = String(cString: strerror(code))
                let expected = code == ELOOP
                    ? "expected a regular file there, not a symbolic link"
                    : "expected a folder the gateway can write, beside gateway.database"
                return "cannot lock the database \(database): \(call) \(lockFile): \(reason); \(expected)"
            }
        }
    }

    let lockFile: String
    private let fd: Int32
    private let identity: FileIdentity

    /// A lock file's device and inode.
    private struct FileIdentity: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// The lock files this process holds (fcntl locks do not conflict within one process).
    private static let held = Mutex<Set<FileIdentity>>([])

    /// Takes the lock of the database at `database` (a resolved path), or throws what holds it.
    init(database: String) throws(Failure) {
        let lockFile = Self.path(forDatabase: database)
        // The whole take under ``held``: a descriptor of a file this process has locked is
        // never opened (closing it would drop the lock), and two threads never race for one.
        let taken = try Self.held.withLock { (held) throws(Failure) -> (Int32, FileIdentity) in
            var existing = stat()
            if lstat(lockFile, &existing) == 0, held.contains(FileIdentity(existing)) {
                throw .held(database: database, lockFile: lockFile, pid: getpid())
            }
            let fd = open(lockFile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .unusable(database: database, lockFile: lockFile, call: "open", errno: errno) }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let code = errno
                close(fd)
                throw .unusable(database: database, lockFile: lockFile, call: "fstat", errno: code)
            }
            let identity = FileIdentity(info)
            // Renamed in by someone else since the lstat: kept open rather than closed, so that
            // this process's lock on it stays.
            guard !held.contains(identity) else { throw .held(database: database, lockFile: lockFile, pid: getpid()) }
            if let refusal = Self.lock(fd, database: database, lockFile: lockFile) {
                close(fd)
                throw refusal
            }
            held.insert(identity)
            return (fd, identity)
        }
        self.lockFile = lockFile
        fd = taken.0
        identity = taken.1
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(taken.0, 0) == 0 { _ = text.withUnsafeBytes { pwrite(taken.0, $0.baseAddress, $0.count, 0) } }
    }

    /// Takes the write lock on the whole file open at `fd`; what refused it, or nil.
    private static func lock(_ fd: Int32, database: String, lockFile: String) -> Failure? {
        for _ in 0..<3 {
            var request = wholeFile(F_WRLCK)
            if fcntl(fd, F_SETLK, &request) == 0 { return nil }
            let code = errno
            guard code == EACCES || code == EAGAIN else {
                return .unusable(database: database, lockFile: lockFile, call: "fcntl(F_SETLK)", errno: code)
            }
            var probe = wholeFile(F_WRLCK)
            if fcntl(fd, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) {
                return .held(database: database, lockFile: lockFile, pid: probe.l_pid > 0 ? probe.l_pid : nil)
            }
            // Let go of between the two calls: try again.
        }
        return .held(database: database, lockFile: lockFile, pid: nil)
    }

    /// The lock is let go when the process ends, or here.
    deinit {
        close(fd)
        Self.held.withLock { _ = $0.remove(identity) }
    }

    /// An fcntl request of `type` for the whole file.
    private static func wholeFile(_ type: Int32) -> flock {
        var request = flock()
        request.l_type = Int16(type)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = 0
        request.l_len = 0
        return request
    }
}
