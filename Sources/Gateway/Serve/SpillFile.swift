import FoundationEssentials
import GeotriggerCore
import Glibc
import Store

/// Where the committer keeps what the database refuses while it fails (a full disk, an I/O
/// error): one JSON line per refused batch (monitor states, journal events, outbox messages),
/// on a RAM file system, so that a process kill during the fault loses neither the events
/// published from memory nor the state that decided them. The next successful commit (which
/// takes the retried batch) removes the file; a gateway that starts and finds one applies it
/// first (README "Durability").
///
/// The file lives in `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`, kept across restarts
/// by `RuntimeDirectoryPreserve=yes`), else in `/dev/shm`, else beside the database; its name
/// holds a hash of the database path, so gateways on one host keep theirs apart.
package struct SpillFile: Sendable {
    let path: String

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

    /// Appends `batch` as one line.
    func append(_ batch: StoreBatch) throws(SpillError) {
        var line = Self.encode(batch).serializedBytes()
        line.append(UInt8(ascii: "\n"))
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SpillError(path: path, what: "open", code: errno) }
        defer { close(fd) }
        var written = 0
        while written < line.count {
            let n = line.withUnsafeBytes { write(fd, $0.baseAddress! + written, line.count - written) }
            guard n > 0 else { throw SpillError(path: path, what: "write", code: errno) }
            written += n
        }
    }

    /// Every batch the file holds, merged in order (nil: no file). A line that cannot be read
    /// (the last one, cut by a kill) is skipped and counted in `unreadable`.
    func read() -> (batch: StoreBatch, unreadable: Int)? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var merged = StoreBatch()
        var unreadable = 0
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let value = try? JSONReader.parse(Array(line), file: path, dialect: .json).value, let batch = Self.decode(value) else {
                unreadable += 1
                continue
            }
            merged.stateChanges += batch.stateChanges
            merged.events += batch.events
            merged.outbox += batch.outbox
        }
        return (merged, unreadable)
    }

    func remove() { unlink(path) }

    // MARK: Encoding

    static func encode(_ batch: StoreBatch) -> JSONValue {
        .object([
            "states": .array(batch.stateChanges.map { change in
                .object(["device": .string(change.device), "state": change.state.map { .string(Data($0).base64EncodedString()) } ?? .null])
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
            batch.stateChanges.append(DeviceStateChange(device: device, state: state))
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

/// A spill file could not be written.
struct SpillError: Error, CustomStringConvertible {
    var path: String
    var what: String
    var code: Int32
    var description: String { "\(what) \(path): \(String(cString: strerror(code)))" }
}
