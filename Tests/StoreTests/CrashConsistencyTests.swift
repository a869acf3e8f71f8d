import Foundation
import Synchronization
import Testing
import TestSupport
import Store

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of a process writing through ``GatewayStore`` (the StoreHelper executable), at
/// several points, restarting it each time: every state change and the event it caused are
/// both stored or both absent, and every commit the writer saw acknowledged survived.
@Suite(.serialized) struct CrashConsistencyTests {
    /// Collects a child's stdout lines from the pipe's handler thread.
    final class Lines: Sendable {
        private let state = Mutex<(pending: [UInt8], lines: [String])>(([], []))

        func append(_ data: Data) {
            state.withLock { state in
                state.pending.append(contentsOf: data)
                while let newline = state.pending.firstIndex(of: 10) {
                    state.lines.append(String(decoding: state.pending[..<newline], as: UTF8.self))
                    state.pending.removeSubrange(...newline)
                }
            }
        }

        var all: [String] { state.withLock { $0.lines } }
    }

    @Test func killDashNineLeavesStateAndEventsTogether() async throws {
        let helper = try BuiltProducts.path("StoreHelper")
        let directory = try TemporaryDirectory()
        let database = directory.file("crash.db")
        let devices = 8
        var acknowledged: [String: Int] = [:]  // the highest commit each device was told about

        for (round, killAfter) in [60, 250, 20, 400].enumerated() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: helper)
            process.arguments = ["crash-writer", database, String(devices)]
            let pipe = Pipe()
            process.standardOutput = pipe
            let lines = Lines()
            pipe.fileHandleForReading.readabilityHandler = { handle in lines.append(handle.availableData) }
            try process.run()
            _ = await poll(timeout: .seconds(60), interval: .milliseconds(5)) {
                lines.all.count >= killAfter + 1 || !process.isRunning
            }
            let running = process.isRunning
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
            #expect(running, "round \(round): the writer stopped by itself: \(lines.all.suffix(3))")
            #expect(process.terminationReason == .uncaughtSignal)
            let output = lines.all
            try #require(output.first == "ready", "round \(round): \(output.prefix(3))")
            #expect(output.count > killAfter, "round \(round): only \(output.count - 1) commits before the deadline")
            for line in output.dropFirst() {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let number = Int(parts[1]) else { continue }  // a line cut by the kill
                acknowledged[String(parts[0]), default: 0] = max(acknowledged[String(parts[0]), default: 0], number)
            }

            // Read what survived with a plain connection (recovering the WAL the kill left).
            let connection = try SQLiteConnection(path: database)
            let states = Dictionary(uniqueKeysWithValues: try connection.query("SELECT device, state FROM device_state") {
                ($0.string(0), Int(String(decoding: $0.bytes(1), as: UTF8.self)) ?? -1)
            })
            for k in 0..<devices {
                let device = "d\(k)"
                let state = states[device] ?? 0
                let journal = Set(try connection.query("SELECT id FROM journal WHERE json_extract(payload, '$.device') = ?", [.text(device)]) { $0.string(0) })
                let outbox = try connection.query("SELECT event_id FROM outbox_local WHERE event_id LIKE ?",
                                                  [.text(device + "-%")]) { $0.string(0) }
                let expected = Set((0..<state).map { "\(device)-\($0 + 1)" })
                let missing = expected.subtracting(journal).sorted()
                let extra = journal.subtracting(expected).sorted()
                #expect(missing.isEmpty && extra.isEmpty,
                        "round \(round) \(device): state \(state); events missing \(missing), events beyond the state \(extra)")
                #expect(Set(outbox) == expected && outbox.count == state,
                        "round \(round) \(device): state \(state), \(outbox.count) outbox messages")
                #expect(state >= acknowledged[device, default: 0],
                        "round \(round) \(device): commit \(acknowledged[device, default: 0]) was acknowledged, state is \(state)")
            }
        }
        #expect(acknowledged.count == devices)
    }
}
