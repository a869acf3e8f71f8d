import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// A program the benchmarks start (the broker, `geotrigger serve`): launched directly with
/// `posix_spawn`, so `pid` is the program's own, its output going to a log file; stopped by
/// signals to that PID. Also reads the program's CPU time and memory from /proc.
final class ChildProcess {
    /// The process id.
    let pid: pid_t
    /// The command line, for messages.
    let commandLine: String
    /// Where stdout and stderr go.
    let logPath: String
    private var exitStatus: Int32?

    /// Starts `executable` (a path, or a name looked up in PATH) with `arguments`, stdout and
    /// stderr appended to `logPath`.
    /// - Throws: `UsageError` naming the program when it cannot be started.
    init(_ executable: String, _ arguments: [String], logPath: String) throws {
        commandLine = ([executable] + arguments).joined(separator: " ")
        self.logPath = logPath
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Sockets of this process (libmosquitto's are not close-on-exec) must not live on in the child.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        // The child starts with no signal blocked and default handlers, so SIGTERM stops it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child = pid_t()
        let code = posix_spawnp(&child, executable, &actions, &attributes, argv, environ)
        guard code == 0 else {
            throw UsageError("cannot start \(executable): \(String(cString: strerror(code)))")
        }
        pid = child
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            _ = wait(timeout: 5)
        }
    }

    /// Whether the process has not exited yet (reaps it if it has).
    var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = status
            return false
        }
        return r == 0
    }

    /// Sends `signal` to the process.
    func signal(_ signal: Int32) {
        if exitStatus == nil { kill(pid, signal) }
    }

    /// Waits up to `timeout` seconds for the process to exit; its raw wait status, or nil.
    @discardableResult
    func wait(timeout: Double) -> Int32? {
        let deadline = MonotonicClock.now() + timeout
        while isRunning, MonotonicClock.now() < deadline { usleep(10_000) }
        return exitStatus
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds; returns the wait status.
    @discardableResult
    func stop(grace: Double = 10) -> Int32? {
        signal(SIGTERM)
        if let status = wait(timeout: grace) { return status }
        signal(SIGKILL)
        return wait(timeout: 5)
    }

    /// The last `count` lines of the log, for error messages.
    func logTail(_ count: Int = 20) -> String {
        guard let file = fopen(logPath, "r") else { return "" }
        defer { fclose(file) }
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            lines.append(String(decoding: bytes, as: UTF8.self))
            if lines.count > count { lines.removeFirst() }
        }
        return lines.joined()
    }

    // MARK: /proc figures

    /// User + system CPU seconds the process has used (/proc/PID/stat utime + stime).
    var cpuSeconds: Double {
        guard let text = ChildProcess.read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident set size now (VmRSS), bytes.
    var residentBytes: Int { statusField("VmRSS:") }

    /// Peak resident set size (VmHWM), bytes.
    var peakResidentBytes: Int { statusField("VmHWM:") }

    private func statusField(_ name: String) -> Int {
        guard let text = ChildProcess.read("/proc/\(pid)/status") else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return (Int(String(line.dropFirst(name.count).filter(\.isNumber))) ?? 0) * 1024
        }
        return 0
    }

    /// A small text file's contents (procfs files report size 0, so read until the end).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The 1, 5 and 15 minute load averages.
    static func loadAverage() -> [Double] {
        guard let text = read("/proc/loadavg") else { return [] }
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    /// This executable's path (/proc/self/exe).
    static func currentExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A free TCP port on 127.0.0.1 (bound to port 0, then released).
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw UsageError("cannot open a socket to find a free port") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { s in
                bind(fd, s, length) == 0 && getsockname(fd, s, &length) == 0
            }
        }
        guard bound else { throw UsageError("cannot bind a loopback socket to find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// True once something accepts TCP connections on 127.0.0.1:`port` (or `host`).
    static func accepts(host: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

extension ChildProcess {
    /// Sets TCP_NODELAY on every TCP socket of this process connected to `port` (the benchmark's
    /// own MQTT connections; libmosquitto leaves Nagle's algorithm on by default, which holds
    /// small publishes back for up to a delayed-ACK period and would count as gateway latency).
    /// Returns how many sockets it set.
    @discardableResult
    static func disableNagle(towardsPort port: Int) -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name) else { continue }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { continue }
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
            }
            guard ok, address.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: address.sin_port)) == port else { continue }
            var one: Int32 = 1
            if setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 { count += 1 }
        }
        return count
    }
}
