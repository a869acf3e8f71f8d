// StoreHelper: a small program the Store tests and measurements run as a separate process.
//
//   StoreHelper crash-writer DATABASE DEVICES   write until killed (the kill -9 test)
//   StoreHelper measure DIRECTORY [SECONDS]     commits/s, single vs group commits (release build)
//
// crash-writer: DEVICES concurrent writers; writer k owns device "dK" and, for n = 1, 2, ...,
// submits one batch {state of dK = "n", journal event "dK-n", local outbox message "dK-n"},
// then prints "dK n" on stdout once that batch has committed. It resumes from the stored
// states, as the gateway does after a restart.
import Store

#if canImport(Glibc)
import Glibc
#endif

func writeLine(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}

func fail(_ text: String) -> Never {
    var line = "StoreHelper: " + text + "\n"
    line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
    exit(2)
}

func batch(device: String, number: Int, time: Double) -> StoreBatch {
    let id = "\(device)-\(number)"
    let payload = #"{"id":"\#(id)","trigger":"t","device":"\#(device)","type":"enter","fence":{"id":"f","layer":"layer"},"n":\#(number)}"#
    var batch = StoreBatch()
    batch.upsertState(device: device, state: Array(String(number).utf8))
    batch.append(JournalEvent(id: id, device: device, trigger: "t", layer: "layer", fence: "f", type: "enter",
                              fixTime: time, emittedTime: time, payload: payload))
    batch.enqueue(OutboxMessage(destination: .local, eventID: id, topic: "geotriggers/events/t/\(device)",
                                payload: Array(payload.utf8), qos: 1))
    return batch
}

func crashWriter(database: String, devices: Int) async throws {
    let store = try await GatewayStore(path: database)
    let states = try await store.deviceStates()
    writeLine("ready")
    await withThrowingTaskGroup(of: Void.self) { group in
        for k in 0..<devices {
            let device = "d\(k)"
            let start = states[device].map { Int(String(decoding: $0, as: UTF8.self)) ?? 0 } ?? 0
            group.addTask {
                var number = start
                while true {
                    number += 1
                    _ = try await store.commit(batch(device: device, number: number, time: Double(number)))
                    writeLine("\(device) \(number)")
                }
            }
        }
    }
}

/// User + system CPU seconds of this process so far (a loaded machine stretches wall time, not this).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `round` until `budget` seconds have passed; returns (rounds, seconds).
func timed(_ budget: Double, _ round: () async throws -> Void) async rethrows -> (Int, Double) {
    let clock = ContinuousClock()
    let start = clock.now
    var rounds = 0
    while seconds(clock.now - start) < budget {
        try await round()
        rounds += 1
    }
    return (rounds, seconds(clock.now - start))
}

/// CPU microseconds per event since `start` (then reset to now).
func cpuPerEvent(_ start: inout Double, _ events: Int) -> Int {
    let now = cpuSeconds()
    defer { start = now }
    return Int((now - start) * 1e6 / Double(max(events, 1)))
}

func measure(directory: String, budget: Double) async throws {
    writeLine("SQLite \(SQLiteLibrary.version), WAL; an event = journal row + state upsert + outbox row; \(budget) s per figure")
    for durability in StoreDurability.allCases {
        let path = "\(directory)/measure-\(durability.rawValue).db"
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        let store = try await GatewayStore(path: path, options: .init(durability: durability))
        var number = 0

        // 1. One event per transaction, one submitter waiting for each commit.
        var cpu = cpuSeconds()
        let (singles, singleTime) = try await timed(budget) {
            number += 1
            _ = try await store.commit(batch(device: "single", number: number, time: Double(number)))
        }
        writeLine("\(durability.rawValue): 1 event per transaction, 1 submitter: \(Int(Double(singles) / singleTime)) commits/s = events/s, \(cpuPerEvent(&cpu, singles)) CPU us/event")

        // 2. Batches of 100 events, one submitter.
        cpu = cpuSeconds()
        let (hundreds, hundredTime) = try await timed(budget) {
            var combined = StoreBatch()
            for _ in 0..<100 {
                number += 1
                let one = batch(device: "batch\(number % 100)", number: number, time: Double(number))
                combined.stateChanges += one.stateChanges
                combined.events += one.events
                combined.outbox += one.outbox
            }
            _ = try await store.commit(combined)
        }
        writeLine("\(durability.rawValue): 100 events per batch, 1 submitter: \(Int(Double(hundreds) / hundredTime)) commits/s, \(Int(Double(hundreds * 100) / hundredTime)) events/s, \(cpuPerEvent(&cpu, hundreds * 100)) CPU us/event")

        // 3. Group commit: 100 concurrent submitters of one-event batches.
        let before = await store.statistics
        cpu = cpuSeconds()
        let clock = ContinuousClock()
        let start = clock.now
        let base = number
        let perWriter = try await withThrowingTaskGroup(of: Int.self) { group in
            for k in 0..<100 {
                group.addTask {
                    var count = 0
                    while seconds(clock.now - start) < budget {
                        count += 1
                        let n = base + count * 100 + k
                        _ = try await store.commit(batch(device: "group\(k)", number: n, time: Double(n)))
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = seconds(clock.now - start)
        let after = await store.statistics
        let transactions = after.transactions - before.transactions
        writeLine("\(durability.rawValue): group commit, 100 submitters of 1 event: \(Int(Double(transactions) / elapsed)) commits/s, \(Int(Double(perWriter) / elapsed)) events/s, \(perWriter / max(transactions, 1)) batches per commit, \(cpuPerEvent(&cpu, perWriter)) CPU us/event")
        await store.close()
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "crash-writer":
    guard arguments.count == 3, let devices = Int(arguments[2]) else { fail("usage: crash-writer DATABASE DEVICES") }
    do { try await crashWriter(database: arguments[1], devices: devices) } catch { fail("\(error)") }
case "measure":
    guard arguments.count >= 2 else { fail("usage: measure DIRECTORY [SECONDS]") }
    let budget = arguments.count > 2 ? Double(arguments[2]) ?? 2 : 2
    do { try await measure(directory: arguments[1], budget: budget) } catch { fail("\(error)") }
default:
    fail("usage: StoreHelper crash-writer DATABASE DEVICES | measure DIRECTORY [SECONDS]")
}
