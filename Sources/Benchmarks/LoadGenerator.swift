import Gateway
import GeotriggerCore
@_spi(Benchmarks) import MQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The end-to-end benchmark's load: N devices, each walking to and fro along a straight line
/// through the centre of "its" fence (and across whatever other fences lie on the way), one
/// update per step, published round-robin over the devices with the project's MQTT client.
///
/// The devices do not walk in step: each starts up to a quarter of a pass (25 steps) before or
/// after the end of its line, so their fence crossings are spread over the whole cycle. In
/// lockstep (all from the same end) every device crosses within the same 5 steps: at 36,000
/// updates/s that is 1,000 events in 150 ms, six times the mean event rate, twice per pass.
///
/// Everything is deterministic: update number `i` is step `i / N` of device `i % N`, and its fix
/// time is `baseTime + step * fixStep`, so an event's device and `position.time` name the
/// update that caused it, and with it the moment it was published.
final class LoadGenerator: Sendable {
    /// One device's line: the centre, the unit direction (east, north) and the half length in
    /// metres, and where on its to-and-fro it is at step 0 (steps into the cycle of two passes).
    struct Track: Sendable {
        var centre: Coordinate
        var east: Double
        var north: Double
        var halfLength: Double
        var offset = 0
    }

    /// What one publishing run did.
    struct Run: Sendable {
        /// The number of the run's first update.
        var first = 0
        /// Updates published (handed to libmosquitto).
        var sent: Int
        /// Monotonic time of each update's publish, by update number from `first`.
        var sendTimes: [Double]
        var start: Double
        var end: Double
        var seconds: Double { end - start }
    }

    /// Fix-time step between two updates of one device (events carry milliseconds).
    static let fixStep = 0.01
    /// Microseconds the generator sleeps at least when ahead of a fixed rate: it then sends
    /// every update that fell due meanwhile, each stamped when it is written. Waking for each
    /// update (every 28 us at 36,000/s) preempted the broker and the gateway thousands of
    /// times a second on a 2-core box: the raw phase alone then had p99 62-146 ms at 36,000/s,
    /// against 6-20 ms with this floor.
    static let minimumSleep = 1000.0
    /// Steps from one end of a track to the other.
    static let stepsPerPass = 100

    let tracks: [Track]
    let format: PayloadFormat
    /// Device ids as the gateway names them, and the topics they are published to.
    let deviceIDs: [String]
    let topics: [String]
    /// The feed's topic filter (for the gateway config).
    let topicFilter: String
    /// The raw pass-through's topics and filter: the feed's with the first level in capitals
    /// (MQTT topics are case-sensitive), as long and as deep, and outside the feed, so a
    /// gateway kept running between the phases does not take them.
    let rawTopics: [String]
    let rawTopicFilter: String
    /// Fix time of step 0 (a day ago, whole seconds, so every fix time is in the past).
    let baseTime: Double

    /// Steps a device starts at most before or after the end of its line (without `lockstep`).
    /// A quarter pass: every device starts outside its own fence, which spans at most the
    /// middle 40 % of the line, so its first update is no crossing.
    static let maximumOffset = 25

    /// Tracks for `devices` devices through `fences` (device d walks through fence d * 7919 mod
    /// F); `lockstep`: all start at the same end of their lines.
    init(devices: Int, fences: [Fence], format: PayloadFormat, baseTime: Double, lockstep: Bool = false) {
        let centres = fences.map(LoadGenerator.centreAndRadius)
        var tracks: [Track] = []
        tracks.reserveCapacity(devices)
        for d in 0..<devices {
            let (centre, radius) = centres.isEmpty ? (Coordinate(lat: 40.73, lon: -73.95), 100) : centres[(d &* 7919 &+ 13) % centres.count]
            let angle = Double(d) * 2.399_963_229_728_653  // the golden angle: directions spread evenly
            // Offsets -25...25 (mod one cycle), spread evenly over the devices.
            let span = 2 * LoadGenerator.maximumOffset + 1
            let offset = lockstep ? 0 : ((d &* 37) % span - LoadGenerator.maximumOffset + 2 * LoadGenerator.stepsPerPass) % (2 * LoadGenerator.stepsPerPass)
            tracks.append(Track(centre: centre, east: cos(angle), north: sin(angle), halfLength: 2.5 * radius + 20, offset: offset))
        }
        self.tracks = tracks
        self.format = format
        self.baseTime = baseTime
        switch format {
        case .json:
            deviceIDs = (0..<devices).map { "d\($0)" }
            topics = deviceIDs.map { "bench/\($0)/location" }
            topicFilter = "bench/+/location"
        case .owntracks:
            deviceIDs = (0..<devices).map { "bench/d\($0)" }
            topics = deviceIDs.map { "owntracks/\($0)" }
            topicFilter = "owntracks/+/+"
        }
        func capitalFirstLevel(_ topic: String) -> String {
            let level = topic.prefix { $0 != "/" }
            return level.uppercased() + topic.dropFirst(level.count)
        }
        rawTopics = topics.map(capitalFirstLevel)
        rawTopicFilter = capitalFirstLevel(topicFilter)
    }

    /// The centre of a fence's bounds and half its diagonal in metres.
    static func centreAndRadius(_ fence: Fence) -> (Coordinate, Double) {
        var coordinates: [Coordinate] = []
        switch fence.geometry {
        case .polygons(let ps): for p in ps { coordinates += p.exterior }
        case .points(let ps): coordinates = ps
        case .lines(let ls): for l in ls { coordinates += l }
        }
        let bounds = GeoBounds(of: coordinates)
        let centre = Coordinate(lat: (bounds.minLat + bounds.maxLat) / 2, lon: (bounds.minLon + bounds.maxLon) / 2)
        let north = (bounds.maxLat - bounds.minLat) * 111_000
        let east = (bounds.maxLon - bounds.minLon) * 111_000 * cos(centre.lat * .pi / 180)
        return (centre, (north * north + east * east).squareRoot() / 2 + (fence.buffer ?? 0))
    }

    /// Where device `d` is at step `k`: at step `-offset` it is `halfLength` before the centre.
    func position(device d: Int, step k: Int) -> Coordinate {
        let track = tracks[d]
        let n = LoadGenerator.stepsPerPass
        let phase = (k + track.offset) % (2 * n)
        let along = -track.halfLength + 2 * track.halfLength * Double(phase <= n ? phase : 2 * n - phase) / Double(n)
        let metresPerDegreeLat = 111_000.0
        let metresPerDegreeLon = 111_000.0 * cos(track.centre.lat * .pi / 180)
        return Coordinate(
            lat: track.centre.lat + along * track.north / metresPerDegreeLat,
            lon: track.centre.lon + along * track.east / metresPerDegreeLon)
    }

    /// The fix time of step `k`.
    func fixTime(step k: Int) -> Double { baseTime + Double(k) * LoadGenerator.fixStep }

    /// The step of a fix time (from an event's `position.time`).
    func step(fixTime t: Double) -> Int { Int(((t - baseTime) / LoadGenerator.fixStep).rounded()) }

    /// The device number of a device id (nil if it is not one of the generator's).
    func deviceNumber(_ id: Substring) -> Int? {
        let prefix = format == .json ? "d" : "bench/d"
        guard id.hasPrefix(prefix), let n = Int(id.dropFirst(prefix.count)), n >= 0, n < tracks.count else { return nil }
        return n
    }

    /// The payload of update `step` of device `d`, in the generator's format.
    func payload(device d: Int, step k: Int) -> String {
        var bytes: [UInt8] = []
        writePayload(device: d, step: k, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the payload of update `step` of device `d` into `bytes` (emptied first, its
    /// capacity kept). Latitude and longitude are rounded to 7 decimals and the fix time to
    /// hundredths (`fixStep`), each written as a whole number of those units with the point put
    /// in and trailing zeros dropped: the text Swift would print for those values, without
    /// formatting a `Double` (which was a tenth of the generator's time per update).
    func writePayload(device d: Int, step k: Int, into bytes: inout [UInt8]) {
        let p = position(device: d, step: k)
        let lat = Int((p.lat * 1e7).rounded()), lon = Int((p.lon * 1e7).rounded())
        let time = Int(baseTime) * 100 + k
        bytes.removeAll(keepingCapacity: true)
        let json = format == .json
        if json {
            bytes += #"{"lat":"#.utf8
        } else {
            bytes += #"{"_type":"location","tid":"d"#.utf8
            Self.appendDecimal(d % 100, decimals: 0, to: &bytes)
            bytes += #"","lat":"#.utf8
        }
        Self.appendDecimal(lat, decimals: 7, to: &bytes)
        bytes += #","lon":"#.utf8
        Self.appendDecimal(lon, decimals: 7, to: &bytes)
        bytes += json ? #","time":"#.utf8 : #","tst":"#.utf8
        Self.appendDecimal(time, decimals: 2, to: &bytes)
        bytes += json ? #","accuracy":5}"#.utf8 : #","acc":5}"#.utf8
    }

    /// Appends `units` / 10^`decimals` in decimal: trailing zeros of the fraction dropped, but
    /// one digit kept after the point ("40.73", "-73.9", "5.0"); no point when `decimals` is 0.
    static func appendDecimal(_ units: Int, decimals: Int, to bytes: inout [UInt8]) {
        if units < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // up to 32 digits, last first
        withUnsafeMutableBytes(of: &digits) { buffer in
            var value = units.magnitude
            var count = 0
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
                count += 1
            } while value > 0 || count <= decimals
            // Digits before the point, then the fraction without its trailing zeros.
            for i in stride(from: count - 1, through: decimals, by: -1) { bytes.append(buffer[i]) }
            guard decimals > 0 else { return }
            var last = 0
            while last < decimals - 1, buffer[last] == UInt8(ascii: "0") { last += 1 }
            bytes.append(UInt8(ascii: "."))
            for i in stride(from: decimals - 1, through: last, by: -1) { bytes.append(buffer[i]) }
        }
    }

    /// A publishing connection, driven by the generator's own thread (no network thread: each
    /// publish is written at once, without waking another thread), and the count of its
    /// messages libmosquitto has finished with (QoS 0 written, QoS 1 acknowledged), for flow
    /// control. It connects when made.
    final class Connection: Sendable {
        let publisher: MQTTDirectPublisher

        init(_ configuration: MQTTConfiguration) throws {
            publisher = try MQTTDirectPublisher(configuration)
        }

        /// Messages libmosquitto has finished with so far.
        var done: Int { publisher.finished }
    }

    final class CounterBox: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Publishes updates round-robin over the devices on `connections` (device d on connection
    /// d mod count) for `duration` seconds, from update number `first` on (a whole step: `first`
    /// is a multiple of the device count), to the feed's topics or, `raw`, to ``rawTopics``:
    /// `rate` updates per second, or as fast as the connections take them (nil). At most
    /// `window` updates per connection are left with libmosquitto (not yet written, or not yet
    /// acknowledged at QoS 1), so the publisher cannot run ahead of the broker. Runs on its own
    /// thread (not the cooperative pool).
    func publish(
        on connections: [Connection], qos: MQTTQoS, rate: Double?, duration: Double, window: Int, from first: Int = 0, raw: Bool = false
    ) async -> Run {
        await BenchThread.run { [self] in
            Self.publishLoop(
                connections, topics: raw ? rawTopics : topics, qos: qos, rate: rate, duration: duration, window: window, first: first,
                payload: { writePayload(device: $0, step: $1, into: &$2) })
        }
    }

    /// The publishing loop of ``publish(on:qos:rate:duration:window:from:raw:)``, for any
    /// devices: update `i` is step `i / topics.count` of device `i % topics.count`, published to
    /// `topics[device]` with the bytes `payload(device, step, &bytes)` writes (`bench endurance`
    /// writes its fleet's payloads with it). Blocks the calling thread.
    static func publishLoop(
        _ connections: [Connection], topics: [String], qos: MQTTQoS, rate: Double?, duration: Double, window: Int, first: Int,
        payload writePayload: (_ device: Int, _ step: Int, _ bytes: inout [UInt8]) -> Void
    ) -> Run {
        let devices = topics.count
        var sendTimes: [Double] = []
        sendTimes.reserveCapacity(Int((rate ?? 150_000) * duration * 1.05) + 1024)
        var published = [Int](repeating: 0, count: connections.count)
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        let baseline = connections.map(\.done)
        let start = MonotonicClock.now()
        var i = first
        var now = start
        var serviced = start
        loop: while true {
            now = MonotonicClock.now()
            let elapsed = now - start
            if elapsed >= duration { break }
            if now - serviced >= 0.01 {
                // Acknowledgements and keepalive, every 10 ms.
                serviced = now
                for connection in connections { try? connection.publisher.service() }
            }
            var due = i + 256
            if let rate {
                due = min(due, first + Int(elapsed * rate) + 1)
                if i >= due {
                    // Ahead of schedule: sleep until the next update is due.
                    let wait = Double(i - first) / rate - elapsed
                    if wait > 0 { usleep(UInt32(max(Self.minimumSleep, min(wait * 1e6, 100_000)))) }
                    continue
                }
            }
            while i < due {
                let d = i % devices, k = i / devices
                let c = d % connections.count
                while published[c] - (connections[c].done - baseline[c]) >= window {
                    // Write what the socket would not take, read acknowledgements: up to 1 ms.
                    try? connections[c].publisher.service(timeout: 0.001)
                    if MonotonicClock.now() - start >= duration { break loop }
                }
                writePayload(d, k, &payload)
                let t = MonotonicClock.now()
                let ok: Bool = payload.withUnsafeBytes { bytes in
                    (try? connections[c].publisher.publish(topic: topics[d], payload: bytes, qos: qos)) != nil
                }
                if !ok {
                    // Not connected (QoS 0): try again shortly.
                    usleep(1000)
                    continue loop
                }
                sendTimes.append(t)
                published[c] += 1
                i += 1
            }
        }
        let end = MonotonicClock.now()
        // What the sockets did not take yet is written now (for up to 2 s).
        for (c, connection) in connections.enumerated() {
            while published[c] > connection.done - baseline[c], MonotonicClock.now() - end < 2 {
                try? connection.publisher.service(timeout: 0.001)
            }
        }
        return Run(first: first, sent: i - first, sendTimes: sendTimes, start: start, end: end)
    }
}

/// Runs blocking work on a thread of its own, away from the cooperative pool.
enum BenchThread {
    private final class Work {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let work = Work { continuation.resume(returning: body()) }
            let argument = Unmanaged.passRetained(work).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(
                &thread, nil,
                { argument in
                    let work = Unmanaged<Work>.fromOpaque(argument!).takeRetainedValue()
                    work.body()
                    return nil
                }, argument)
            if created == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<Work>.fromOpaque(argument).release()
                continuation.resume(returning: body())
            }
        }
    }
}
