import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

/// Every test that runs the real `geotrigger serve` against a real mosquitto is in a suite
/// nested here, so they run one at a time (2 loaded cores). Each test owns its broker, temp
/// directory, client ids and topic prefix (`ServeHarness`).
@Suite(.serialized) struct ServeTests {}

/// What one `geotrigger serve` integration test owns: a temp directory, a broker on a free
/// port, a topic prefix and gateway id nobody else uses, the gateway processes it started and
/// the MQTT probes it made. `close()` stops them all (by PID / clean disconnect).
final class ServeHarness: @unchecked Sendable {
    // @unchecked: the test that owns the harness is its only user (one task).

    /// The repository's `fences/` folder.
    static let repositoryFences = repositoryRoot + "/fences"

    let directory: TemporaryDirectory
    let broker: MosquittoProcess
    /// `output.prefix`, also the first level of the test's input topics.
    let prefix: String
    /// `gateway.id` (also the base of the gateway's client id).
    let gatewayID: String
    private(set) var gateways: [GatewayProcess] = []
    private(set) var probes: [MQTTProbe] = []
    private var collectors: [Task<Void, Never>] = []

    init(_ name: String, broker options: MosquittoProcess.Options = .init()) throws {
        directory = try TemporaryDirectory(prefix: "serve-\(name)")
        // The broker's stdout is block-buffered into its log file; a file destination is
        // written as it happens, so tests can read it while the broker runs.
        var options = options
        options.extraLines.append("log_dest file \(directory.file("broker.log"))")
        broker = try MosquittoProcess(options)
        let tag = UUID().uuidString.prefix(6).lowercased()
        prefix = "\(name)-\(tag)"
        gatewayID = "gw-\(tag)"
    }

    /// Stops every gateway still running (SIGTERM, SIGKILL after a while), every probe and the
    /// broker, and then removes the temp directory, on a thread of its own (``BackgroundCleanup``):
    /// returns at once.
    func close() {
        for task in collectors { task.cancel() }
        let (gateways, probes, broker, directory) = (self.gateways, self.probes, self.broker, self.directory)
        BackgroundCleanup.run {
            for gateway in gateways where gateway.isRunning { gateway.terminate(timeout: 10) }
            for probe in probes { probe.stop() }
            broker.stop()
            withExtendedLifetime(directory) {}
        }
    }

    /// The broker's log so far (connections, refusals), written as it happens.
    var brokerLog: String { (try? String(contentsOfFile: directory.file("broker.log"), encoding: .utf8)) ?? "" }

    // MARK: Files

    /// Copies the repository's fence files into `NAME/` of the temp directory (for tests that
    /// edit or add fences) and returns its path.
    func copyFences(to name: String = "fences") throws -> String {
        let target = directory.file(name)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for file in try FileManager.default.contentsOfDirectory(atPath: Self.repositoryFences) where file.hasSuffix(".geojson") {
            try FileManager.default.copyItem(atPath: "\(Self.repositoryFences)/\(file)", toPath: "\(target)/\(file)")
        }
        return target
    }

    /// Writes `text` into the temp directory and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try directory.write(name, text) }

    /// A JSON5 config: the gateway id, a database in the temp directory (or at `database` when
    /// that is an absolute path), `fences`, this test's broker port and prefix, a 1 s status
    /// interval; `extra` adds top-level keys and `broker`/`output`/`gateway` add keys to those
    /// sections (JSON5 member text).
    func config(
        fences: String = ServeHarness.repositoryFences, database: String = "gateway.db", gatewayID: String? = nil,
        prefix: String? = nil, port: Int? = nil, broker: String = "", output: String = "", gateway: String = "", extra: String = ""
    ) -> String {
        """
        // Written by the test.
        {
          gateway: { id: "\(gatewayID ?? self.gatewayID)", database: "\(database.hasPrefix("/") ? database : directory.file(database))", fences: "\(fences)", \(gateway) },
          broker: { host: "127.0.0.1", port: \(port ?? self.broker.port), keepalive: 5, \(broker) },
          output: { prefix: "\(prefix ?? self.prefix)", statusInterval: 1, \(output) },
          \(extra)
        }
        """
    }

    // MARK: Processes

    /// Starts `geotrigger serve --config CONFIG` in the temp directory, log into `LOG`.
    func startGateway(config: String, log: String = "gateway.log", environment: [String: String] = [:]) throws -> GatewayProcess {
        let gateway = try GatewayProcess(
            ["serve", "--config", config], directory: directory.path, logFile: directory.file(log), environment: environment)
        gateways.append(gateway)
        return gateway
    }

    /// A started MQTT probe on the plain port collecting what it receives; subscribed to
    /// `filters` (waits for the SUBACKs). Persistent session unless `cleanStart`.
    func probe(
        _ name: String, subscribe filters: [String] = [], cleanStart: Bool = false,
        configure: (inout MQTTConfiguration) -> Void = { _ in }
    ) async throws -> MQTTProbe {
        let probe = try MQTTProbe(port: broker.port, clientId: "\(prefix)-\(name)") { configuration in
            configuration.cleanStart = cleanStart
            configure(&configuration)
        }
        probes.append(probe)
        collectors.append(probe.collect())
        for filter in filters { try probe.client.subscribe(filter, qos: .atLeastOnce) }
        try probe.client.start()
        guard await probe.waitConnected(timeout: .seconds(60)) else {
            throw TestSupportError("probe \(name) did not connect to port \(broker.port):\n\(broker.log)")
        }
        for filter in filters {
            guard await probe.waitSubscribed(filter, timeout: .seconds(60)) else {
                throw TestSupportError("probe \(name) did not get a SUBACK for \(filter)")
            }
        }
        return probe
    }

    // MARK: Topics

    var statusTopic: String { GatewayStatus.topic(prefix: prefix, gatewayID: gatewayID) }
    func eventsFilter(prefix: String? = nil) -> String { "\(prefix ?? self.prefix)/events/#" }
    func stateTopic(_ device: String, prefix: String? = nil) -> String { "\(prefix ?? self.prefix)/devices/\(device)/state" }
}

// MARK: - Reading what the gateway published

/// A received message parsed as JSON (nil if it is not a JSON object).
func json(_ message: MQTTMessage) -> JSONObject? {
    (try? JSONReader.parse(message.payload, file: message.topic, dialect: .json))?.value.objectValue
}

extension MQTTProbe {
    /// The messages received on `topic` so far, in order.
    func received(on topic: String) -> [MQTTMessage] { messages.all.filter { $0.topic == topic } }

    /// The messages whose topic starts with `prefix`.
    func received(under prefix: String) -> [MQTTMessage] { messages.all.filter { $0.topic.hasPrefix(prefix) } }

    /// Publishes the query `{"KIND": query, "replyTo": replyTo}` to `h`'s gateway and returns its
    /// reply (this probe subscribed to `replyTo`), or nil after 30 s.
    func ask(_ kind: String, _ query: String, of h: ServeHarness, replyTo: String) async throws -> JSONObject? {
        try client.publish(
            topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"{"\#(kind)": \#(query), "replyTo": "\#(replyTo)"}"#, qos: .atLeastOnce)
        _ = await poll(timeout: .seconds(30)) { !self.received(on: replyTo).isEmpty }
        return received(on: replyTo).first.flatMap(json)
    }
}

// MARK: - Writing location updates

/// Payloads of the two MQTT feed formats.
enum Payload {
    /// A `json` feed payload; `time` as epoch seconds unless `timeText` is given; `speed` m/s.
    static func json(
        lat: Double, lon: Double, time: Double? = nil, timeText: String? = nil, accuracy: Double? = nil, speed: Double? = nil
    ) -> String {
        var members = ["\"lat\":\(lat)", "\"lon\":\(lon)"]
        if let timeText { members.append("\"time\":\"\(timeText)\"") } else if let time { members.append("\"time\":\(number(time))") }
        if let accuracy { members.append("\"accuracy\":\(accuracy)") }
        if let speed { members.append("\"speed\":\(number(speed))") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// An OwnTracks `_type: location` payload.
    static func owntracks(lat: Double, lon: Double, tst: Double, acc: Double? = nil, tid: String? = nil) -> String {
        var members = ["\"_type\":\"location\"", "\"lat\":\(lat)", "\"lon\":\(lon)", "\"tst\":\(number(tst))"]
        if let acc { members.append("\"acc\":\(number(acc))") }
        if let tid { members.append("\"tid\":\"\(tid)\"") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// `12` for whole numbers, else the shortest decimal form.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }
}

/// `2026-11-30T12:00:00Z` (milliseconds only when not whole, or always when asked).
func iso8601(_ seconds: Double, milliseconds: Bool = false) -> String {
    ISO8601Time.format(seconds, milliseconds: milliseconds)
}

/// A whole-second fix time base a little in the past, so a test's updates are never in the future.
func fixTimeBase(secondsAgo: Double = 900) -> Double {
    (Date().timeIntervalSince1970 - secondsAgo).rounded(.down)
}

/// The last lines of a log, for failure messages.
func tail(_ text: String, lines: Int = 60) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
}
