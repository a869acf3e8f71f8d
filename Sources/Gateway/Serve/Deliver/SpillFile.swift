import FoundationEssentials
import GeotriggerCore
import Glibc
import Store

/// Where the committer keeps what the database refuses while it fails (a full disk, an I/O
/// error): one JSON line per refused batch (monitor states, journal events, outbox messages),
/// on a RAM file system, so that a process kill during the fault loses neither the events
/// published from memory nor the state that decided them. The next successful commit (which
/// takes the retried batch) removes the file; a gateway that starts and finds one applies it
/// first (docs/configuration.md "Durability").
///
/// The file lives in `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`, kept across restarts
/// by `RuntimeDirectoryPreserve=yes`), else in `/dev/shm`, else beside the database; its name
/// holds a hash of the database path, so gateways on one host keep theirs apart.
///
/// `/dev/shm` is writable by every user, so the file is only ever the gateway's own: it is
/// created exclusively with mode 0600 and opened without following a symbolic link, and a file
/// found there that is not a regular file of the gateway's user with mode 0600 is refused
/// (``SpillError``): never applied, never written, never removed. It holds at most ``cap``
/// bytes: past it the oldest batches are dropped (``append(_:)`` says how many).
package struct SpillFile: Sendable {
    let path: String
    /// The most bytes the file holds.
    let cap: Int

    /// What ``append(_:)`` dropped to stay within ``cap``: refused batches (lines) and the
    /// journal events in them.
    struct Dropped: Sendable, Equatable {
        var batches = 0
        var events = 0
    }

    init(path: String, cap: Int = 64 << 20) {
        self.path = path
        self.cap = cap
    }

    /// The file rewritten without its oldest lines, renamed over ``path``.
    private var temporary: String { path + ".tmp" }

    /// The spill file of the database at `database` (a resolved path).
    static func path(forDatabase database: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let name = "geotrigger-spill-\(String(StableHash.of(database), radix: 16)).jsonl"
        if let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first, !runtime.isEmpty {
            return "\(runtime)/\(name)"
        }
        var info = stat()
        if stat("/dev/shm", &info) == 0, info.st_mode & S_IFMT == S_IFDIR, access("/dev/shm", W_OK) == 0 {
            return "/dev/shm/\(name)"
        }
        let folder = database.lastIndex(of: "/").map { String(database[..<$0]) } ?? "."
        return "\(folder)/\(name)"
    }

    /// Appends `batch` as one line. When that would take the file past ``cap``, its oldest
    /// lines are dropped first (and `batch` too if it alone is larger than the cap): the rest
    /// and the new line go to a new file that replaces it.
    @discardableResult
    func append(_ batch: StoreBatch) throws(SpillError) -> Dropped {
        var line = Self.encode(batch).serializedBytes()
        line.append(UInt8(ascii: "\n"))
        let fd = try openForAppend()
        defer { close(fd) }
        let size = try Self.ownSize(fd, path)
        guard size + line.count > cap else {
            try write(line[...], to: fd, path)
            return Dropped()
        }
        return try rewrite(from: fd, size: size, appending: line, events: batch.events.count)
    }

    /// Every batch the file holds, merged in order (nil: no file). A line that cannot be read
    /// (the last one, cut by a kill) is skipped and counted in `unreadable`. Throws for a file
    /// that is not the gateway's own (and when it cannot be read).
    func read() throws(SpillError) -> (batch: StoreBatch, unreadable: Int)? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP { throw .notOwn(path, found: "a symbolic link") }
            throw .call("open", path, code)
        }
        defer { close(fd) }
        let size = try Self.ownSize(fd, path)
        var data = [UInt8](repeating: 0, count: size)
        var count = 0
        while count < size {
            let n = data.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, size - count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw .call("read", path, errno) }
            if n == 0 { break }
            count += n
        }
        var merged = StoreBatch()
        var unreadable = 0
        for line in data[..<count].split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let batch = Self.batch(line) else {
                unreadable += 1
                continue
            }
            merged.append(contentsOf: batch)
        }
        return (merged, unreadable)
    }

    /// Removes the file (and a temporary left by a kill), if they are the gateway's own.
    func remove() {
        for file in [path, temporary] {
            var info = stat()
            guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o7777 == 0o600
            else { continue }
            unlink(file)
        }
    }

    // MARK: Files

    /// The file opened for appending: created exclusively (mode 0600) when there is none,
    /// else opened without following a symbolic link and checked (``ownSize(_:_:)``).
    private func openForAppend() throws(SpillError) -> Int32 {
        let flags = O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
        for _ in 0..<3 {
            let created = open(path, flags | O_CREAT | O_EXCL, 0o600)
            if created >= 0 {
                // The umask may have taken bits away; never more than 0600.
                guard fchmod(created, 0o600) == 0 else {
                    let code = errno
                    close(created)
                    throw .call("chmod", path, code)
                }
                return created
            }
            guard errno == EEXIST else { throw .call("create", path, errno) }
            let fd = open(path, flags)
            if fd >= 0 {
                do {
                    _ = try Self.ownSize(fd, path)
                } catch {
                    close(fd)
                    throw error
                }
                return fd
            }
            if errno == ELOOP { throw .notOwn(path, found: "a symbolic link") }
            // Removed since the create found it: try again.
            guard errno == ENOENT else { throw .call("open", path, errno) }
        }
        throw .call("open", path, ENOENT)
    }

    /// The size of the open file `fd`, if it is a regular file of the gateway's user with mode
    /// 0600; else a ``SpillError`` saying what was found.
    private static func ownSize(_ fd: Int32, _ path: String) throws(SpillError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .call("fstat", path, errno) }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = "a regular file"
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR, S_IFBLK: kind = "a device"
        default: kind = "not a regular file"
        }
        let mode = info.st_mode & 0o7777
        guard info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), mode == 0o600 else {
            throw .notOwn(path, found: "\(kind) owned by uid \(info.st_uid), mode \(SpillError.octal(mode))")
        }
        return Int(info.st_size)
    }

    /// Writes `bytes` whole to `fd`.
    private func write(_ bytes: ArraySlice<UInt8>, to fd: Int32, _ file: String) throws(SpillError) {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw .call("write", file, errno) }
            written += n
        }
    }

    /// Drops the oldest lines of the file (`size` bytes, open as `fd`) until the rest and
    /// `line` fit in ``cap``, or all of them and `line` too when `line` alone does not: the
    /// kept lines and `line` go to ``temporary`` (created exclusively, 0600), renamed over
    /// ``path``. `events`: the journal events in `line`.
    private func rewrite(from fd: Int32, size: Int, appending line: [UInt8], events: Int) throws(SpillError) -> Dropped {
        let excess = size + line.count - cap
        var dropped = Dropped()
        // Find the first line start at or after `excess`, counting what comes before it.
        var cut = size
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        scan: while offset < size {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, min($0.count, size - offset), off_t(offset)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw .call("read", path, n < 0 ? errno : EIO) }
            var start = 0
            while let newline = buffer[start..<n].firstIndex(of: UInt8(ascii: "\n")) {
                pending += buffer[start..<newline]
                dropped.batches += 1
                dropped.events += Self.batch(pending[...])?.events.count ?? 0
                pending.removeAll(keepingCapacity: true)
                start = newline + 1
                if offset + start >= excess {
                    cut = offset + start
                    break scan
                }
            }
            pending += buffer[start..<n]
            offset += n
        }
        // A last line cut by a kill, dropped with the rest.
        if cut == size, !pending.isEmpty { dropped.batches += 1 }
        let keepsLine = line.count <= cap
        if !keepsLine {
            dropped.batches += 1
            dropped.events += events
        }

        unlink(temporary)  // one a kill left; a symbolic link itself, never what it points to
        let out = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw .call("create", temporary, errno) }
        do throws(SpillError) {
            guard fchmod(out, 0o600) == 0 else { throw .call("chmod", temporary, errno) }
            offset = cut
            while offset < size {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, min($0.count, size - offset), off_t(offset)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw .call("read", path, n < 0 ? errno : EIO) }
                try write(buffer[..<n], to: out, temporary)
                offset += n
            }
            if keepsLine { try write(line[...], to: out, temporary) }
        } catch {
            close(out)
            unlink(temporary)
            throw error
        }
        guard close(out) == 0 else {
            let code = errno
            unlink(temporary)
            throw .call("close", temporary, code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw .call("rename \(temporary) to", path, code)
        }
        return dropped
    }

    /// One line of the file, or nil when it cannot be read.
    private static func batch(_ line: ArraySlice<UInt8>) -> StoreBatch? {
        guard let value = try? JSONReader.parse(Array(line), file: "spill", dialect: .json).value else { return nil }
        return decode(value)
    }

    // MARK: Encoding

    static func encode(_ batch: StoreBatch) -> JSONValue {
        .object([
            "states": .array(batch.stateChanges.map { change in
                var state: JSONObject = [
                    "device": .string(change.device), "state": change.state.map { .string(Data($0).base64EncodedString()) } ?? .null]
                if let before = change.eventsBefore { state["eventsBefore"] = .number(Double(before)) }
                return .object(state)
            }),
            "events": .array(batch.events.map { e in
                .object(["id": .string(e.id), "device": .string(e.device), "trigger": .string(e.trigger), "layer": .string(e.layer),
                         "fence": .string(e.fence), "type": .string(e.type), "fixTime": .number(e.fixTime),
                         "emittedTime": .number(e.emittedTime), "payload": .string(e.payload)])
            }),
            "outbox": .array(batch.outbox.map { m in
                .object(["destination": .string(m.destination.rawValue), "event": .string(m.eventID), "topic": .string(m.topic),
                         "payload": .string(Data(m.payload).base64EncodedString()), "qos": .number(Double(m.qos)),
                         "inJournal": .bool(m.payloadInJournal)])
            }),
        ])
    }

    static func decode(_ value: JSONValue) -> StoreBatch? {
        guard case .object(let o) = value, case .array(let states)? = o["states"], case .array(let events)? = o["events"],
            case .array(let outbox)? = o["outbox"]
        else { return nil }
        var batch = StoreBatch()
        for case .object(let s) in states {
            guard let device = s["device"]?.stringValue else { return nil }
            var state: [UInt8]?
            if let text = s["state"]?.stringValue {
                guard let data = Data(base64Encoded: text) else { return nil }
                state = [UInt8](data)
            }
            // A file written before states counted their events: the state is the newest.
            batch.stateChanges.append(DeviceStateChange(device: device, state: state, eventsBefore: s["eventsBefore"]?.numberValue.map { Int($0) }))
        }
        for case .object(let e) in events {
            guard let id = e["id"]?.stringValue, let device = e["device"]?.stringValue, let trigger = e["trigger"]?.stringValue,
                let layer = e["layer"]?.stringValue, let fence = e["fence"]?.stringValue, let type = e["type"]?.stringValue,
                let fixTime = e["fixTime"]?.numberValue, let emittedTime = e["emittedTime"]?.numberValue,
                let payload = e["payload"]?.stringValue
            else { return nil }
            batch.events.append(JournalEvent(id: id, device: device, trigger: trigger, layer: layer, fence: fence, type: type,
                                             fixTime: fixTime, emittedTime: emittedTime, payload: payload))
        }
        for case .object(let m) in outbox {
            guard let destination = m["destination"]?.stringValue.flatMap(OutboxDestination.init(rawValue:)),
                let event = m["event"]?.stringValue, let topic = m["topic"]?.stringValue,
                let payload = m["payload"]?.stringValue.flatMap({ Data(base64Encoded: $0) }),
                let qos = m["qos"]?.numberValue.flatMap({ Int(exactly: $0) }), case .bool(let inJournal)? = m["inJournal"]
            else { return nil }
            batch.outbox.append(OutboxMessage(destination: destination, eventID: event, topic: topic, payload: [UInt8](payload),
                                              qos: qos, payloadInJournal: inJournal))
        }
        return batch
    }
}

/// A spill file could not be written or read, or the file found at its path is not the
/// gateway's own.
struct SpillError: Error, CustomStringConvertible {
    var description: String

    /// A failed system call on `path`.
    static func call(_ name: String, _ path: String, _ code: Int32) -> SpillError {
        SpillError(description: "\(name) \(path): \(String(cString: strerror(code)))")
    }

    /// The file at `path` is `found` ("a symbolic link", "a regular file owned by uid 1000,
    /// mode 0644"), not a regular file of the gateway's user with mode 0600.
    static func notOwn(_ path: String, found: String) -> SpillError {
        SpillError(description: "\(path) is \(found), expected a regular file owned by uid \(geteuid()) (the gateway's user), mode 0600")
    }

    /// `mode` as four octal digits (`0644`).
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
