import Foundation

/// A real `/usr/sbin/mosquitto` for one test: its own config, password, ACL and persistence
/// files in a temp directory, a plain listener on a free loopback port (and a TLS listener on
/// another when asked), launched directly with `posix_spawn` so `pid` is the broker's, stopped
/// by SIGTERM to that PID. `restart()` keeps the ports, files and persistence database.
public final class MosquittoProcess: @unchecked Sendable {
    // @unchecked: the mutable `pid` is only touched with `lock` held.

    /// How to configure the broker.
    public struct Options: Sendable {
        /// `persistence true` with `persistence_location` in the temp directory, so sessions,
        /// subscriptions and queued QoS 1 messages survive `restart()`.
        public var persistence = false
        /// User name -> password, written with `mosquitto_passwd -b` (a shipped config with the
        /// dynamic security plugin has none: `afterFirstStart` creates them there). When not
        /// empty, anonymous clients are refused unless `allowAnonymous` says otherwise.
        public var users: [String: String] = [:]
        /// `allow_anonymous`; `nil`: true without `users`, false with.
        public var allowAnonymous: Bool?
        /// The ACL file's text (`user NAME` / `topic readwrite|read|write TOPIC`, `pattern`),
        /// or `nil` for no ACL.
        public var acl: String?
        /// Certificates for a TLS listener on `tlsPort` that requires a client certificate
        /// (`require_certificate true`, `use_identity_as_username` when `identityAsUsername`).
        public var tls: TestCertificates?
        /// Use the client certificate's CN as the user name on the TLS listener.
        public var identityAsUsername = false
        /// `max_inflight_messages` (also the v5 receive maximum the broker announces; mosquitto's
        /// default is 20).
        public var maxInflightMessages: Int?
        /// `max_queued_messages` for offline persistent sessions (mosquitto's default 1000).
        public var maxQueuedMessages: Int?
        /// Further config lines, written before the listeners.
        public var extraLines: [String] = []
        /// A shipped config's text (`deploy/mosquitto/geotrigger.conf`, with more files
        /// appended) used instead of the settings above, with the test's ports and files put in.
        /// Each `listener` is bound to 127.0.0.1 on a port chosen by its kind (the lines up to
        /// the next `listener`): plain MQTT gets `port`, MQTT with a `certfile` `tlsPort`, a
        /// `protocol websockets` listener `websocketsPort`, and with a `certfile`
        /// `secureWebsocketsPort` (`tls` is required for the TLS kinds and gives `cafile`,
        /// `certfile`, `keyfile`); `http_dir` becomes `httpDir` (or an empty folder in the temp
        /// directory); `persistence_location`, `password_file` (`users`) and `acl_file` (`acl`)
        /// point into the temp directory. Every other line is kept as written;
        /// `allowAnonymous`, `identityAsUsername` and the message counts are not used
        /// (`extraLines` are, before the shipped text).
        public var shipped: String?
        /// The folder a shipped config's `http_dir` is replaced with (websockets listeners
        /// serve its files over HTTP).
        public var httpDir: String?
        /// Run once the broker first listens (not after a restart): e.g. a shipped config's
        /// dynamic security setup through `mosquitto_ctrl` as ``dynamicSecurityAdmin``.
        public var afterFirstStart: (@Sendable (MosquittoProcess) throws -> Void)?

        public init(
            persistence: Bool = false, users: [String: String] = [:], allowAnonymous: Bool? = nil,
            acl: String? = nil, tls: TestCertificates? = nil, identityAsUsername: Bool = false,
            maxInflightMessages: Int? = nil, maxQueuedMessages: Int? = nil, extraLines: [String] = [],
            shipped: String? = nil, httpDir: String? = nil
        ) {
            self.persistence = persistence
            self.users = users
            self.allowAnonymous = allowAnonymous
            self.acl = acl
            self.tls = tls
            self.identityAsUsername = identityAsUsername
            self.maxInflightMessages = maxInflightMessages
            self.maxQueuedMessages = maxQueuedMessages
            self.extraLines = extraLines
            self.shipped = shipped
            self.httpDir = httpDir
        }
    }

    /// The plain MQTT port on 127.0.0.1.
    public let port: Int
    /// The TLS port on 127.0.0.1 when `Options.tls` was given.
    public let tlsPort: Int?
    /// The port of a shipped config's websockets listener (MQTT over WebSockets and its
    /// `http_dir` over HTTP), if it has one.
    public let websocketsPort: Int?
    /// The port of a shipped config's websockets listener with TLS, if it has one.
    public let secureWebsocketsPort: Int?
    /// Where the config, log, password, ACL and persistence files live.
    public let directory: TemporaryDirectory
    /// The config file passed with `-c`.
    public let configPath: String
    /// The broker's log file (stdout and stderr, plus `log_dest file`).
    public let logPath: String
    /// The options it was made with.
    public let options: Options

    private let executable: String
    private let lock = NSLock()
    private var runningPid: pid_t?

    /// Writes the files and starts the broker, waiting until every listener accepts
    /// connections.
    /// - Throws: `TestSupportError` if mosquitto_passwd fails or the broker does not come up
    ///   (the message includes its log).
    public init(_ options: Options = Options(), executable: String = "/usr/sbin/mosquitto") throws {
        self.options = options
        self.executable = executable
        directory = try TemporaryDirectory(prefix: "mosquitto")
        port = try FreePort.next()
        tlsPort = options.tls == nil ? nil : try FreePort.next()
        let kinds = options.shipped.map(Self.listenerKinds) ?? []
        websocketsPort = kinds.contains(.websockets) ? try FreePort.next() : nil
        secureWebsocketsPort = kinds.contains(.secureWebsockets) ? try FreePort.next() : nil
        logPath = directory.file("mosquitto.log")
        configPath = directory.file("mosquitto.conf")
        try writeConfiguration()
        try start()
        do {
            try options.afterFirstStart?(self)
        } catch {
            stop()
            throw error
        }
    }

    /// The admin of a shipped config's dynamic security plugin (`plugin_opt_config_file`, made
    /// with `mosquitto_ctrl dynsec init`): user and password.
    public static let dynamicSecurityAdmin = (user: "geotrigger-admin", password: "admin-secret")

    /// `mosquitto_ctrl` options that reach the plain listener as ``dynamicSecurityAdmin``.
    public var dynamicSecurityConnect: String {
        "-h 127.0.0.1 -p \(port) -u \(Self.dynamicSecurityAdmin.user) -P \(Self.dynamicSecurityAdmin.password)"
    }

    /// The dynamic security plugin of this machine's mosquitto.
    static func dynamicSecurityPlugin() throws -> String {
        for folder in ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf", "/usr/lib"] {
            let path = folder + "/mosquitto_dynamic_security.so"
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        throw TestSupportError("mosquitto_dynamic_security.so is not installed (Debian's mosquitto ships it)")
    }

    deinit {
        stop()
    }

    /// The broker's PID while it runs.
    public var pid: pid_t? {
        lock.lock()
        defer { lock.unlock() }
        return runningPid
    }

    /// The broker's log so far, for failure messages.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log at \(logPath))"
    }

    /// The password file of `options.users` (nil without users).
    private func writePasswords() throws -> String? {
        guard !options.users.isEmpty else { return nil }
        let passwords = directory.file("passwords")
        _ = FileManager.default.createFile(atPath: passwords, contents: nil)
        for (user, password) in options.users.sorted(by: { $0.key < $1.key }) {
            try ExternalProgram.run("/usr/bin/mosquitto_passwd", ["-b", passwords, user, password])
        }
        return passwords
    }

    private func writeConfiguration() throws {
        var lines = [
            "# written by TestSupport.MosquittoProcess",
            "user root",
            "log_dest stdout",
            "log_type all",
            "connection_messages true",
        ]
        if let shipped = options.shipped {
            lines += options.extraLines
            lines += try substituted(shipped)
            try directory.write("mosquitto.conf", lines.joined(separator: "\n") + "\n")
            return
        }
        lines.append("allow_anonymous \(options.allowAnonymous ?? options.users.isEmpty)")
        if options.persistence {
            lines += ["persistence true", "persistence_location \(directory.path)/", "autosave_interval 1"]
        }
        if let passwords = try writePasswords() {
            lines.append("password_file \(passwords)")
        }
        if let acl = options.acl {
            lines.append("acl_file \(try directory.write("acl", acl))")
        }
        if let count = options.maxInflightMessages { lines.append("max_inflight_messages \(count)") }
        if let count = options.maxQueuedMessages { lines.append("max_queued_messages \(count)") }
        lines += options.extraLines
        lines.append("listener \(port) 127.0.0.1")
        if let tls = options.tls, let tlsPort {
            lines += [
                "listener \(tlsPort) 127.0.0.1",
                "cafile \(tls.ca)",
                "certfile \(tls.serverCertificate)",
                "keyfile \(tls.serverKey)",
                "require_certificate true",
                "use_identity_as_username \(options.identityAsUsername)",
            ]
        }
        try directory.write("mosquitto.conf", lines.joined(separator: "\n") + "\n")
    }

    /// What a shipped config's listener serves, in the order of its `listener` lines.
    enum ListenerKind: Equatable {
        case mqtt, tls, websockets, secureWebsockets
    }

    /// The kind of each `listener` of `text`, from the lines up to the next one.
    static func listenerKinds(_ text: String) -> [ListenerKind] {
        var kinds: [ListenerKind] = []
        var websockets = false
        var secure = false
        func finish() {
            guard !kinds.isEmpty else { return }
            kinds[kinds.count - 1] = websockets ? (secure ? .secureWebsockets : .websockets) : (secure ? .tls : .mqtt)
        }
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            switch words.first {
            case "listener":
                finish()
                kinds.append(.mqtt)
                websockets = false
                secure = false
            case "protocol": websockets = words.dropFirst().first == "websockets"
            case "certfile": secure = true
            default: break
            }
        }
        finish()
        return kinds
    }

    /// `shipped` with the test's ports and files (see ``Options/shipped``).
    private func substituted(_ shipped: String) throws -> [String] {
        let kinds = Self.listenerKinds(shipped)
        var listeners = 0
        var lines: [String] = []
        for line in shipped.split(separator: "\n", omittingEmptySubsequences: false) {
            let key = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            func required<T>(_ value: T?, _ what: String) throws -> T {
                guard let value else { throw TestSupportError("the shipped config's `\(line)` needs \(what)") }
                return value
            }
            switch key {
            case "listener":
                let listenerPort: Int
                switch kinds[listeners] {
                case .mqtt: listenerPort = port
                case .tls: listenerPort = try required(tlsPort, "Options.tls")
                case .websockets: listenerPort = try required(websocketsPort, "a websockets port")
                case .secureWebsockets:
                    _ = try required(options.tls, "Options.tls")
                    listenerPort = try required(secureWebsocketsPort, "a websockets port")
                }
                listeners += 1
                lines.append("listener \(listenerPort) 127.0.0.1")
            case "http_dir":
                let folder = try options.httpDir ?? {
                    let empty = directory.file("http")
                    try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
                    return empty
                }()
                lines.append("http_dir \(folder)")
            case "persistence_location": lines.append("persistence_location \(directory.path)/")
            case "password_file": lines.append("password_file \(try required(try writePasswords(), "Options.users"))")
            case "acl_file": lines.append("acl_file \(try directory.write("acl", try required(options.acl, "Options.acl")))")
            case "plugin" where line.hasSuffix("/mosquitto_dynamic_security.so"):
                lines.append("plugin \(try Self.dynamicSecurityPlugin())")
            case "plugin_opt_config_file":
                // A file with only the admin, as deploy/install.sh makes it.
                let file = directory.file("dynamic-security.json")
                if !FileManager.default.fileExists(atPath: file) {
                    try ExternalProgram.run("/usr/bin/mosquitto_ctrl", [
                        "dynsec", "init", file, Self.dynamicSecurityAdmin.user, Self.dynamicSecurityAdmin.password,
                    ])
                }
                lines.append("plugin_opt_config_file \(file)")
            case "cafile": lines.append("cafile \(try required(options.tls, "Options.tls").ca)")
            case "certfile": lines.append("certfile \(try required(options.tls, "Options.tls").serverCertificate)")
            case "keyfile": lines.append("keyfile \(try required(options.tls, "Options.tls").serverKey)")
            default: lines.append(String(line))
            }
        }
        return lines
    }

    /// Starts the broker if it is not running and waits (up to `timeout`) until its
    /// listeners accept connections.
    public func start(timeout: Duration = .seconds(30)) throws {
        lock.lock()
        defer { lock.unlock() }
        if runningPid != nil { return }
        let child = try DirectSpawn.start(executable, ["-c", configPath], logPath: logPath)
        runningPid = child
        let ports = [port] + [tlsPort, websocketsPort, secureWebsocketsPort].compactMap { $0 }
        let ready = pollBlocking(timeout: timeout) {
            if Self.hasExited(child) { return true }
            return ports.allSatisfy(FreePort.isListening)
        }
        if Self.hasExited(child) || !ready {
            if !Self.hasExited(child) { Glibc.kill(child, SIGKILL); Self.reap(child) }
            runningPid = nil
            throw TestSupportError(
                "mosquitto (\(configPath)) did not start listening on \(ports) within \(timeout):\n\(log)")
        }
    }

    /// Stops the broker with SIGTERM (it saves its persistence database) and waits for it to
    /// exit; SIGKILL after `timeout`. Does nothing when it is not running.
    public func stop(timeout: Duration = .seconds(20)) {
        lock.lock()
        defer { lock.unlock() }
        guard let child = runningPid else { return }
        Glibc.kill(child, SIGTERM)
        if !pollBlocking(timeout: timeout, until: { Self.hasExited(child) }) {
            Glibc.kill(child, SIGKILL)
            Self.reap(child)
        }
        runningPid = nil
    }

    /// Kills the broker with SIGKILL (no database save, sockets dropped) and reaps it.
    public func kill() {
        lock.lock()
        defer { lock.unlock() }
        guard let child = runningPid else { return }
        Glibc.kill(child, SIGKILL)
        Self.reap(child)
        runningPid = nil
    }

    /// `stop()` then `start()` on the same ports with the same files.
    public func restart() throws {
        stop()
        try start()
    }

    /// Whether `child` has exited (reaps it if so).
    private static func hasExited(_ child: pid_t) -> Bool {
        var status: Int32 = 0
        let result = waitpid(child, &status, WNOHANG)
        return result == child || (result == -1 && errno == ECHILD)
    }

    private static func reap(_ child: pid_t) {
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1 && errno == EINTR {}
    }
}
