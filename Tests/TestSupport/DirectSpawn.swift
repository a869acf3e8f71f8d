import Foundation

/// Starts a server program for a test directly with `posix_spawn`, so the PID is the program's
/// own (stop it by signals to that PID), with stdin from /dev/null and stdout and stderr
/// appended to a log file.
public enum DirectSpawn {
    /// Starts `executable` (a path) with `arguments`; returns its PID.
    ///
    /// The child inherits none of this process's sockets (libmosquitto's are not close-on-exec:
    /// a client socket kept open in a broker would hide a disconnect), and starts with no signal
    /// blocked and default handlers (threads of a test process may block signals, and then
    /// SIGTERM would not stop it).
    /// - Throws: `TestSupportError` naming the program when it cannot be started.
    public static func start(_ executable: String, _ arguments: [String], logPath: String) throws -> pid_t {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fileActions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&fileActions, 1, 2)
        addCloseFrom(&fileActions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2] { sigaddset(&defaultSignals, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &fileActions, &attributes, &argv, environ)
        guard spawned == 0 else {
            throw TestSupportError("posix_spawn \(executable) failed: \(String(cString: strerror(spawned)))")
        }
        return child
    }

    /// glibc >= 2.34 `posix_spawn_file_actions_addclosefrom_np` (Debian 12 has 2.36); Swift's
    /// Glibc module does not declare it (it needs _GNU_SOURCE), so it is looked up by name.
    private static func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
    }
}
