import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// What processes write to disk and how often their threads wake, from /proc (`bench
/// endurance`): the parsers are pure, the readers read /proc.
enum DiskWrites {
    /// The write counters of /proc/PID/io (or /proc/PID/task/TID/io).
    struct IO: Sendable, Equatable {
        /// Bytes the process caused to be written to storage (counted when it dirtied the pages).
        var writeBytes: Int64
        /// Of those, bytes that never reached storage (the file truncated or deleted before
        /// writeback).
        var cancelledWriteBytes: Int64
        /// What reaches the disk: `write_bytes - cancelled_write_bytes`.
        var net: Int64 { writeBytes - cancelledWriteBytes }
    }

    /// `write_bytes` and `cancelled_write_bytes` of an io file's text (nil when either is missing).
    static func parseIO(_ text: String) -> IO? {
        var write: Int64?, cancelled: Int64?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = Int64(parts[1].filter { !$0.isWhitespace })
            switch parts[0] {
            case "write_bytes": write = value
            case "cancelled_write_bytes": cancelled = value
            default: break
            }
        }
        guard let write, let cancelled else { return nil }
        return IO(writeBytes: write, cancelledWriteBytes: cancelled)
    }

    /// The io counters of process `pid` (all its threads, those ended included).
    static func io(of pid: pid_t) -> IO? { ChildProcess.read("/proc/\(pid)/io").flatMap(parseIO) }

    /// The io counters of the calling thread alone.
    static func currentThreadIO() -> IO? { ChildProcess.read("/proc/thread-self/io").flatMap(parseIO) }

    /// `voluntary_ctxt_switches + nonvoluntary_ctxt_switches` of a task's status text.
    static func contextSwitches(status text: String) -> Int? {
        var total = 0, found = 0
        for line in text.split(separator: "\n")
        where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
            guard let n = Int(line.drop { $0 != ":" }.dropFirst().filter { !$0.isWhitespace }) else { return nil }
            total += n
            found += 1
        }
        return found == 2 ? total : nil
    }

    /// Context switches of every live thread of `pid`, by thread id.
    static func contextSwitches(of pid: pid_t) -> [pid_t: Int] {
        var switches: [pid_t: Int] = [:]
        for id in ThreadPriorities.threads(of: "\(pid)") {
            if let n = ChildProcess.read("/proc/\(pid)/task/\(id)/status").flatMap(contextSwitches(status:)) { switches[id] = n }
        }
        return switches
    }

    /// The switches between two readings of ``contextSwitches(of:)``: a thread that started in
    /// between counts from zero; one that ended is left out (its last switches are lost).
    static func switches(from start: [pid_t: Int], to end: [pid_t: Int]) -> Int {
        end.reduce(0) { $0 + max(0, $1.value - (start[$1.key] ?? 0)) }
    }

    // MARK: The block device

    /// The major and minor numbers of a `dev_t` (glibc's encoding).
    static func majorMinor(_ device: UInt64) -> (major: Int, minor: Int) {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        return (Int(major), Int(minor))
    }

    /// The name and sectors written (512 bytes each, the 10th field) of device
    /// `major`:`minor` in /proc/diskstats text.
    static func sectorsWritten(diskstats text: String, major: Int, minor: Int) -> (name: String, sectors: Int64)? {
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, Int(f[0]) == major, Int(f[1]) == minor, let sectors = Int64(f[9]) else { continue }
            return (String(f[2]), sectors)
        }
        return nil
    }

    /// The block device holding `path` (from `stat`'s `st_dev`), as /proc/diskstats names it;
    /// nil when it is not listed there (an overlay or network file system).
    static func blockDevice(of path: String) -> (name: String, major: Int, minor: Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let (major, minor) = majorMinor(UInt64(info.st_dev))
        guard let text = ChildProcess.read("/proc/diskstats"), let found = sectorsWritten(diskstats: text, major: major, minor: minor) else {
            return nil
        }
        return (found.name, major, minor)
    }

    /// Bytes written to device `major`:`minor` so far (sectors x 512), or nil.
    static func deviceBytesWritten(major: Int, minor: Int) -> Int64? {
        ChildProcess.read("/proc/diskstats").flatMap { sectorsWritten(diskstats: $0, major: major, minor: minor) }.map { $0.sectors * 512 }
    }

    /// The name of the file system type of `path` when it lives in memory (tmpfs, ramfs), else
    /// nil. `statfs` is looked up by name (Swift's Glibc module has no `sys/vfs.h`); its
    /// `f_type` is the first field, a machine word.
    static func memoryFileSystem(at path: String) -> String? {
        typealias StatFS = @convention(c) (UnsafePointer<CChar>, UnsafeMutableRawPointer) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "statfs") else { return nil }
        var buffer = [UInt8](repeating: 0, count: 512)  // struct statfs is 120 bytes on 64-bit Linux
        let type: Int? = buffer.withUnsafeMutableBytes { raw in
            guard unsafeBitCast(symbol, to: StatFS.self)(path, raw.baseAddress!) == 0 else { return nil }
            return raw.load(as: Int.self)
        }
        switch type.map({ UInt64(UInt(bitPattern: $0)) & 0xffff_ffff }) {
        case 0x0102_1994: return "tmpfs"
        case 0x8584_58f6: return "ramfs"
        default: return nil
        }
    }
}
