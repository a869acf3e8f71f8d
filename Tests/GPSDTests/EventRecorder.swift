import Foundation
import GPSD

/// Collects a reader's events with the time each arrived, and waits for conditions on them.
actor EventRecorder {
    struct Entry {
        var event: GPSDEvent
        var at: ContinuousClock.Instant
    }

    private(set) var entries: [Entry] = []
    private(set) var finished = false

    func record(_ event: GPSDEvent) {
        entries.append(Entry(event: event, at: .now))
    }

    func finish() { finished = true }

    var events: [GPSDEvent] { entries.map(\.event) }

    var fixes: [GPSFix] {
        entries.compactMap { if case .fix(let fix) = $0.event { fix } else { nil } }
    }

    /// The events as runs of one kind with the time of each run's first, from the first event
    /// ("0.0s 5x disconnected, 0.6s connected, 0.7s 30x noFix"), for failure messages.
    var summary: String {
        guard let start = entries.first?.at else { return "no events" }
        var runs: [(kind: String, count: Int, at: ContinuousClock.Instant)] = []
        for entry in entries {
            let kind = switch entry.event {
            case .connected: "connected"
            case .fix: "fix"
            case .noFix: "noFix"
            case .disconnected(let error): "disconnected(\(error.code))"
            case .clockSkew: "clockSkew"
            }
            if runs.last?.kind == kind { runs[runs.count - 1].count += 1 } else { runs.append((kind, 1, entry.at)) }
        }
        return runs.map { run in
            let seconds = Double((run.at - start).components.attoseconds) / 1e18 + Double((run.at - start).components.seconds)
            return String(format: "%.1fs ", seconds) + (run.count > 1 ? "\(run.count)x " : "") + run.kind
        }.joined(separator: ", ")
    }

    /// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; returns whether
    /// it held.
    func wait(timeout: Double, until condition: ([GPSDEvent]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(events)
    }

    /// Consumes `reader.events` into a new recorder until the stream finishes.
    static func consuming(_ reader: GPSDReader) -> (EventRecorder, Task<Void, Never>) {
        let recorder = EventRecorder()
        let task = Task {
            for await event in reader.events {
                await recorder.record(event)
            }
            await recorder.finish()
        }
        return (recorder, task)
    }
}

extension GPSDEvent {
    var isFix: Bool { if case .fix = self { true } else { false } }
    var isConnected: Bool { self == .connected }
    var isDisconnected: Bool { if case .disconnected = self { true } else { false } }
    var isClockSkew: Bool { if case .clockSkew = self { true } else { false } }
}
