import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// Every durability test that starts brokers and the real `geotrigger` binary lives in a suite
/// nested here, so they run one at a time (2 loaded cores); each test has its own brokers,
/// directories, database files and client ids.
@Suite(.serialized) struct DurabilityIntegrationTests {}

/// Plumbing shared by the durability, delivery and database-fault tests.
enum DurabilityRig {
    /// The example fences (`garden-sections`, `garden-poi`, `fleet`).
    static var fencesFolder: String { repositoryRoot + "/fences" }

    /// A folder holding only `garden-sections.geojson`, for tests that want one layer.
    static func sectionsOnlyFolder(in directory: TemporaryDirectory) throws -> String {
        let folder = directory.file("fences")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fencesFolder + "/garden-sections.geojson",
                                         toPath: folder + "/garden-sections.geojson")
        return folder
    }

    /// A persistent-session subscriber on `port` that collects `filter` at QoS 1.
    static func subscriber(port: Int, clientId: String, filter: String,
                           configure: (inout MQTTConfiguration) -> Void = { _ in }) async throws -> MQTTProbe {
        let probe = try MQTTProbe(port: port, clientId: clientId, configure: configure)
        probe.collect()
        try probe.client.subscribe(filter, qos: .atLeastOnce)
        try probe.client.start()
        #expect(await probe.waitSubscribed(filter), "subscriber \(clientId) was not subscribed to \(filter)")
        return probe
    }

    /// Runs `geotrigger ARGUMENTS` to completion (the `events` command) and returns its output.
    static func runGeotrigger(_ arguments: [String], in directory: String) throws -> String {
        try ExternalProgram.run(GatewayProcess.executable, arguments, in: directory)
    }

    /// The event ids in the journal of `database` (read with `geotrigger events --json`).
    static func journalEventIDs(database: String, in directory: String) throws -> [String] {
        let output = try runGeotrigger(["events", "--json", "--database", database], in: directory)
        return output.split(separator: "\n").compactMap { line in
            guard let data = line.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return nil }
            return object["id"] as? String
        }
    }
}

/// One location update a test publishes as `devices/DEVICE/location` (the default `json` feed).
struct DriveUpdate: Sendable {
    var device: String
    var lat: Double
    var lon: Double
    /// Fix time, epoch seconds.
    var time: Double

    var topic: String { "devices/\(device)/location" }
    var payload: String { "{\"lat\":\(lat),\"lon\":\(lon),\"time\":\(time)}" }
}

/// A deterministic walk of several devices over the Santa Barbara Botanic Garden example
/// fences, as rounds of one update per device (fix times increase per device).
///
/// Each device stays on a spot (a point inside a section, on a point of interest, or outside
/// the garden) for `dwell` consecutive updates at the very same position, then jumps to
/// another spot in one update, so every jump crosses fences. Its last update is on the
/// Entrance Gate, where no other spot is, so every device's last event is an enter there:
/// the tests wait for those to know a run is complete.
struct Drive: Sendable {
    /// `rounds[r][d]`: update `r` of device `d`.
    var rounds: [[DriveUpdate]]
    var devices: [String]

    /// Where devices stay (lat, lon): one inside each section, the points of interest (not the
    /// Entrance Gate) and four outside the garden.
    static let spots: [(Double, Double)] = [
        (34.4574423, -119.7090841), (34.4551623, -119.7095177), (34.4577669, -119.7066223),
        (34.4550251, -119.7068706), (34.4554557, -119.7043547), (34.4567921, -119.7043159),
        (34.4577010, -119.7046353),
        (34.4569203, -119.7091739), (34.4575874, -119.7071865), (34.4567376, -119.7063809),
        (34.4570943, -119.7041269), (34.4559334, -119.7040208), (34.4543962, -119.7051911),
        (34.4552898, -119.7072737), (34.4556401, -119.7078378), (34.4543656, -119.7067350),
        (34.4555675, -119.7094914),
        (34.4600, -119.7070), (34.4515, -119.7070), (34.4560, -119.7130), (34.4560, -119.7010),
    ]
    /// The Entrance Gate point of interest (buffer 10 m), every device's last position.
    static let finish = (34.4548652, -119.7102201)

    /// `devices` devices (`dev-00`...) with `updates` updates each (the last on the finish),
    /// staying `dwell` updates per spot; fix times start at `start`, `step` seconds apart.
    static func garden(devices deviceCount: Int, updates: Int, dwell: ClosedRange<Int>, seed: UInt64,
                       start: Double, step: Double = 2) -> Drive {
        var random = SplitMix64(seed: seed)
        let devices = (0..<deviceCount).map { String(format: "dev-%02d", $0) }
        var tracks: [[DriveUpdate]] = []
        for device in devices {
            var track: [DriveUpdate] = []
            var spot = Int.random(in: 0..<spots.count, using: &random)
            var remaining = updates - 1
            while remaining > 0 {
                // Every stay is at least dwell.lowerBound long: the last one takes the rest.
                var length = Int.random(in: dwell, using: &random)
                if remaining - length < dwell.lowerBound { length = remaining }
                for _ in 0..<length {
                    let (lat, lon) = spots[spot]
                    track.append(DriveUpdate(device: device, lat: lat, lon: lon, time: start + Double(track.count) * step))
                }
                remaining -= length
                var next = spot
                while next == spot { next = Int.random(in: 0..<spots.count, using: &random) }
                spot = next
            }
            track.append(DriveUpdate(device: device, lat: finish.0, lon: finish.1, time: start + Double(track.count) * step))
            tracks.append(track)
        }
        let rounds = (0..<updates).map { r in tracks.map { $0[r] } }
        return Drive(rounds: rounds, devices: devices)
    }

    /// The fix time of every device's last update.
    var finishTime: Double { rounds.last!.first!.time }

    /// Publishes `rounds[range]` through `publisher` at QoS 1, pausing `pause` after each round.
    func publish(_ range: Range<Int>, through publisher: MQTTClient, pause: Duration = .milliseconds(25)) async throws {
        for r in range {
            for update in rounds[r] {
                try publisher.publish(topic: update.topic, payload: update.payload, qos: .atLeastOnce)
            }
            try await Task.sleep(for: pause)
        }
    }
}

/// An event as a subscriber received it (the fields the tests compare).
struct ReceivedEvent: Sendable, Hashable {
    var id: String
    var visit: String
    var device: String
    var trigger: String
    var fence: String
    var type: String
    /// `position.time` (ISO-8601, so it sorts as text).
    var time: String
    /// The payload as received (an outbox re-send repeats it byte for byte, `emitted` included).
    var payload: [UInt8]

    init?(_ message: MQTTMessage) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(message.payload)) as? [String: Any],
            let id = object["id"] as? String, let visit = object["visit"] as? String,
            let device = object["device"] as? String, let trigger = object["trigger"] as? String,
            let type = object["type"] as? String, let fence = (object["fence"] as? [String: Any])?["id"] as? String,
            let time = (object["position"] as? [String: Any])?["time"] as? String
        else { return nil }
        (self.id, self.visit, self.device, self.trigger, self.fence, self.type, self.time, self.payload) =
            (id, visit, device, trigger, fence, type, time, message.payload)
    }

    /// `time` in epoch seconds.
    var fixTime: Double { ISO8601Time.parse(time) ?? .nan }

    /// (trigger, fence, type): what the per-device counts compare.
    var kind: String { "\(trigger) \(fence) \(type)" }
}

extension Array where Element == ReceivedEvent {
    /// The first occurrence of every event id, in arrival order.
    var deduplicated: [ReceivedEvent] {
        var seen: Set<String> = []
        return filter { seen.insert($0.id).inserted }
    }

    /// Event ids received more than once with different payloads: the same event decided
    /// twice (a re-send from the outbox repeats the committed payload exactly, `emitted`
    /// included; deciding it again after the state went backwards gives a new `emitted`).
    var decidedTwice: [String] {
        var first: [String: [UInt8]] = [:]
        var twice: Set<String> = []
        for event in self {
            if let payload = first[event.id] {
                if payload != event.payload { twice.insert(event.id) }
            } else {
                first[event.id] = event.payload
            }
        }
        return twice.sorted()
    }

    /// Per device, how many events of each (trigger, fence, type).
    var countsByDevice: [String: [String: Int]] {
        var counts: [String: [String: Int]] = [:]
        for event in self { counts[event.device, default: [:]][event.kind, default: 0] += 1 }
        return counts
    }

    /// Violations of "no enter re-fired": per (device, trigger, fence), by fix time, events
    /// must alternate enter, exit, enter... and every exit must close the visit its enter opened.
    var visitProblems: [String] {
        var problems: [String] = []
        let groups = Dictionary(grouping: filter { $0.type != "dwell" }) { "\($0.device) \($0.trigger) \($0.fence)" }
        for (key, events) in groups.sorted(by: { $0.key < $1.key }) {
            var open: ReceivedEvent?
            for event in events.sorted(by: { $0.time < $1.time }) {
                switch (event.type, open) {
                case ("enter", nil):
                    open = event
                case ("enter", let previous?):
                    problems.append("\(key): enter \(event.id) at \(event.time) while inside since \(previous.time) (visit \(previous.id))")
                    open = event
                case ("exit", nil):
                    problems.append("\(key): exit \(event.id) at \(event.time) without an enter")
                case ("exit", let previous?):
                    if event.visit != previous.id {
                        problems.append("\(key): exit \(event.id) closes visit \(event.visit), the open visit is \(previous.id)")
                    }
                    open = nil
                default:
                    problems.append("\(key): unexpected type \(event.type)")
                }
            }
        }
        return problems
    }
}

extension MQTTProbe {
    /// The events collected so far (messages that are not events are skipped).
    var receivedEvents: [ReceivedEvent] { messages.all.compactMap(ReceivedEvent.init) }
}

/// One gateway (the real binary) with its config, database and log in a directory; restarted
/// with the same config, database and client id.
final class GatewayUnderTest: @unchecked Sendable {
    let directory: TemporaryDirectory
    let configPath: String
    let environment: [String: String]
    /// The database file: `gw.db` in the directory unless the config puts it elsewhere.
    let database: String
    private(set) var process: GatewayProcess?
    private(set) var starts = 0

    /// Writes `config` (JSON5) as `gw.json5` in a fresh directory. `database`: where `config`
    /// puts it, when not `gw.db` there.
    init(config: String, database: String? = nil, environment: [String: String] = [:]) throws {
        directory = try TemporaryDirectory(prefix: "gateway")
        configPath = try directory.write("gw.json5", config)
        self.database = database ?? directory.file("gw.db")
        self.environment = environment
    }
    /// One log per start (`GatewayProcess` truncates its log file).
    func logFile(_ start: Int) -> String { directory.file("gateway-\(start).log") }
    /// Every start's log, in order.
    var log: String {
        (0...max(starts, 0)).map { (try? String(contentsOfFile: logFile($0), encoding: .utf8)) ?? "" }.joined()
    }
    /// The end of the log, for failure messages.
    var logTail: String { String(log.suffix(6000)) }

    func start() throws {
        starts += 1
        process = try GatewayProcess(["serve", "--config", configPath], directory: directory.path, logFile: logFile(starts),
                                     environment: environment)
    }

    /// `kill -9`.
    func kill() { process?.kill() }

    /// SIGTERM and wait; the exit status.
    @discardableResult
    func terminate() -> Int32 { process?.terminate() ?? -1 }

    deinit { process?.kill() }
}

/// An event a scripted walk must produce (per trigger).
struct WalkEvent: Sendable, Hashable, CustomStringConvertible {
    var device: String
    var fence: String
    var type: String
    var time: Double
    var description: String { "\(device) \(type) \(fence) @\(Int(time))" }
}

/// A walk over the `garden-sections` layer alone, whose events are known in advance: devices
/// stay on points well inside one section each (or outside the garden) and jump between them,
/// so every jump exits the old section and enters the new one at the jump's fix time.
struct SectionWalk: Sendable {
    /// One point inside each section (shapely's representative point), and four outside.
    static let spots: [(lat: Double, lon: Double, fence: String?)] = [
        (34.4574423, -119.7090841, "meadow"), (34.4551623, -119.7095177, "arroyo"),
        (34.4577669, -119.7066223, "desert"), (34.4550251, -119.7068706, "redwood"),
        (34.4554557, -119.7043547, "oak-woodland"), (34.4567921, -119.7043159, "manzanita"),
        (34.4577010, -119.7046353, "island"),
        (34.4600, -119.7070, nil), (34.4515, -119.7070, nil), (34.4560, -119.7130, nil), (34.4560, -119.7010, nil),
    ]

    var drive: Drive
    /// Per round, the events its updates cause (for a trigger with rule enterOrExit).
    var expectedByRound: [[WalkEvent]]

    /// Events of rounds `range`, in round order.
    func expected(_ range: Range<Int>) -> [WalkEvent] { expectedByRound[range].flatMap { $0 } }

    static func make(devices deviceCount: Int, updates: Int, dwell: ClosedRange<Int>, seed: UInt64, start: Double,
                     step: Double = 2) -> SectionWalk {
        var random = SplitMix64(seed: seed)
        let devices = (0..<deviceCount).map { String(format: "walker-%02d", $0) }
        var rounds = [[DriveUpdate]](repeating: [], count: updates)
        var expected = [[WalkEvent]](repeating: [], count: updates)
        for device in devices {
            var spot = Int.random(in: 0..<spots.count, using: &random)
            var previous: Int?
            var index = 0
            while index < updates {
                let length = Int.random(in: dwell, using: &random)
                for _ in 0..<length where index < updates {
                    let time = start + Double(index) * step
                    rounds[index].append(DriveUpdate(device: device, lat: spots[spot].lat, lon: spots[spot].lon, time: time))
                    if previous != spot {
                        if let p = previous, let fence = spots[p].fence {
                            expected[index].append(WalkEvent(device: device, fence: fence, type: "exit", time: time))
                        }
                        if let fence = spots[spot].fence {
                            expected[index].append(WalkEvent(device: device, fence: fence, type: "enter", time: time))
                        }
                        previous = spot
                    }
                    index += 1
                }
                var next = spot
                while next == spot { next = Int.random(in: 0..<spots.count, using: &random) }
                spot = next
            }
        }
        return SectionWalk(drive: Drive(rounds: rounds, devices: devices), expectedByRound: expected)
    }
}

extension Array where Element == ReceivedEvent {
    /// The events of `trigger` as expected-event values, in arrival order.
    func expectedForm(trigger: String) -> [WalkEvent] {
        filter { $0.trigger == trigger }.map { WalkEvent(device: $0.device, fence: $0.fence, type: $0.type, time: $0.fixTime) }
    }
}

extension Array where Element == WalkEvent {
    /// Per device, in order.
    var byDevice: [String: [WalkEvent]] { Dictionary(grouping: self, by: \.device) }
}
