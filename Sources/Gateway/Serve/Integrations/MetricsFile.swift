#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import GeotriggerCore
import Synchronization

/// `output.metricsFile`: the gateway's counters and gauges in the Prometheus text exposition
/// format (``MetricsExposition``) for node_exporter's textfile collector (docs/metrics.md).
///
/// ``StatusReporter`` hands it a ``StatusSample`` at start, every `output.statusInterval` and
/// at a graceful stop; it is written only when its text differs from what the file holds. The file is replaced atomically: the text goes to a hidden temporary
/// file in the same folder (`.NAME.tmp`, which the collector's `*.prom` pattern skips), mode
/// 0644 whatever the umask (the collector runs as another user), then is renamed over `path`.
/// Neither is ever written through a symbolic link planted at its name: the temporary is
/// created exclusively without following one (what is at its name is removed first), and the
/// rename replaces a link at `path` rather than the file it points to.
/// The writes run on a serial queue of their own, never on the network thread, the update
/// path or the cooperative pool; a write asked for while one waits replaces it. A failure is
/// the status warning `metricsFile` (logged once per change by ``Warnings``), cleared once
/// a write succeeds again; never a crash.
final class MetricsFile: Sendable {
    /// The file, resolved against the config file's folder.
    let path: String
    private let temporary: String
    private let warnings: Warnings
    private let queue = DispatchQueue(label: "geotrigger.metrics")
    /// The text waiting to be written (a newer one replaces it), whether a write is queued, and
    /// the text the file holds (written last with success): the same text is not written again.
    private let pending = Mutex<(text: String?, queued: Bool, written: String?)>((nil, false, nil))

    init(path: String, warnings: Warnings) {
        self.path = path
        self.warnings = warnings
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        temporary = folder + "." + name + ".tmp"
    }

    /// The exposition text of `sample`: every metric of docs/metrics.md "Metrics", with HELP and
    /// TYPE; no device ids as labels.
    static func exposition(_ sample: StatusSample) -> String {
        var e = MetricsExposition()
        let c = sample.counters
        e.family("geotrigger_updates_received_total", .counter, help: "Messages received: feed updates, gpsd fixes, queries and runtime fences (the status counter received).", [.init(c.received)])
        e.family("geotrigger_updates_accepted_total", .counter, help: "Location updates handed to the device monitors.", [.init(c.accepted)])
        e.family("geotrigger_updates_dropped_total", .counter, help: "Location updates dropped, by reason (every reason, zeros included).",
                 DropReason.allCases.map { .init(c.dropped[$0] ?? 0, labels: [("reason", $0.rawValue)]) })
        e.family("geotrigger_events_total", .counter, help: "Geotrigger events emitted, by trigger and type (enter, exit, dwell); a kind appears once seen.",
                 c.eventsByKind.map { .init($0.value, labels: [("trigger", $0.key.trigger), ("type", $0.key.type)]) })
        e.family("geotrigger_events_undeliverable_total", .counter, help: "Events no broker would take (too large, say): kept in the journal, not published.", [.init(c.undeliverable)])
        e.family("geotrigger_events_rate_limited_total", .counter, help: "Events past input.maxEventsPerDevice in a minute of their device's fix time (or 10 times it in a minute of the gateway's clock): neither journaled nor published.", [.init(c.eventRateLimited)])
        if let phones = c.phones {
            e.family("geotrigger_phone_pushes_total", .counter, help: "setWaypoints commands pushed to OwnTracks phones, by trigger with phones on.",
                     phones.triggers.map { .init($0.value.pushes, labels: [("trigger", $0.key)]) })
            e.family("geotrigger_phone_transitions_total", .counter,
                     help: "OwnTracks phones' transitions judged against the gateway's decisions, by trigger and verdict (agree, disagree).",
                     phones.triggers.flatMap { trigger, tally in
                         [MetricsExposition.Series(tally.agree, labels: [("trigger", trigger), ("verdict", "agree")]),
                          MetricsExposition.Series(tally.disagree, labels: [("trigger", trigger), ("verdict", "disagree")])]
                     })
            e.family("geotrigger_phone_transitions_unjudged_total", .counter,
                     help: "OwnTracks phones' transitions for a region the gateway did not give (unknownRegion) or of a device it does not track (unknownDevice).",
                     [.init(phones.unknownRegion, labels: [("reason", "unknownRegion")]), .init(phones.unknownDevice, labels: [("reason", "unknownDevice")])])
        }
        e.family("geotrigger_trips", .gauge, help: "Open trips, by state (pending, onRoute, offRoute).", [
            .init(c.trips.pending, labels: [("state", "pending")]), .init(c.trips.onRoute, labels: [("state", "onRoute")]),
            .init(c.trips.offRoute, labels: [("state", "offRoute")]),
        ])
        e.family("geotrigger_devices", .gauge, help: "Devices tracked (in memory or hibernated).", [.init(sample.devices)])
        e.family("geotrigger_queue_depth", .gauge, help: "Location updates waiting to be handled.", [.init(sample.queueDepth)])
        e.family("geotrigger_outbox_messages", .gauge, help: "Events in the outbox not yet acknowledged by the broker, by destination.",
                 [.init(sample.outbox.local, labels: [("destination", "local")]), .init(sample.outbox.remote, labels: [("destination", "remote")])])
        e.family("geotrigger_broker_connected", .gauge, help: "1 while the gateway is connected to the broker (local: broker, remote: remote), else 0.",
                 sample.brokers.map { .init($0.connected ? 1 : 0, labels: [("broker", $0.name)]) })
        e.family("geotrigger_build_info", .gauge, help: "The gateway's version (always 1).", [.init(1, labels: [("version", sample.version)])])
        return e.text
    }

    /// Writes `sample` soon, on the metrics queue (returns at once); nothing when the file
    /// already holds that text (an idle gateway does not rewrite it every interval).
    func write(_ sample: StatusSample) {
        let text = Self.exposition(sample)
        let queue: Bool = pending.withLock { p in
            if p.text == nil, p.written == text { return false }
            p.text = text
            if p.queued { return false }
            p.queued = true
            return true
        }
        if queue { self.queue.async { self.drain() } }
    }

    /// Writes `sample` and returns once it is written (or failed): the last write at a stop.
    func writeAndWait(_ sample: StatusSample) async {
        write(sample)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async { done.resume() }
        }
    }

    /// On the queue: writes the newest pending text.
    private func drain() {
        guard let text: String = pending.withLock({ p in
            p.queued = false
            defer { p.text = nil }
            return p.text
        }) else { return }
        // A write asked for while the previous one waited may hold what the file already has.
        if pending.withLock({ $0.written == text }) { return }
        do {
            try replace(with: text)
            pending.withLock { $0.written = text }
            warnings.clear("metricsFile", resolved: "the metrics file \(path) is written again")
        } catch {
            pending.withLock { $0.written = nil }
            warnings.set("metricsFile", "cannot write the metrics file \(path): \(error.message)")
        }
    }

    /// A failed file-system call: what was done and the C library's message.
    struct WriteError: Error {
        var message: String
    }

    /// Writes `text` to the temporary file and renames it over ``path``.
    private func replace(with text: String) throws(WriteError) {
        func failure(_ call: String) -> WriteError {
            WriteError(message: "\(call): \(String(cString: strerror(errno)))")
        }
        // Created afresh, never opened through a symbolic link planted at its name: one left
        // there (or a temporary a kill left) is removed first, the link itself, not its target.
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("create \(temporary)") }
        let bytes = Array(text.utf8)
        var problem: WriteError?
        if fchmod(fd, 0o644) != 0 { problem = failure("chmod \(temporary)") }
        var offset = 0
        while problem == nil, offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                problem = failure("write \(temporary)")
            } else {
                offset += n
            }
        }
        if close(fd) != 0, problem == nil { problem = failure("close \(temporary)") }
        // rename replaces a symbolic link at `path` itself, never the file it points to.
        if problem == nil, rename(temporary, path) != 0 { problem = failure("rename \(temporary) to \(path)") }
        if let problem {
            unlink(temporary)
            throw problem
        }
    }
}
