/// Turns one MQTT message of a feed into a ``LocationUpdate``, or an ``InputDrop`` naming the
/// contract's reason. Pure and cheap: it runs once per received message.
public struct LocationDecoder: Sendable {
    public var format: PayloadFormat
    public var topicFilter: TopicFilter
    /// `input.maxPayload`: larger payloads are dropped as `oversize`.
    public var maxPayload: Int
    /// `input.maxFutureSkew`: fix times further ahead of the clock are dropped as `futureTime`.
    public var maxFutureSkew: Double

    public init(format: PayloadFormat, topicFilter: TopicFilter, maxPayload: Int = 65536, maxFutureSkew: Double = 300) {
        self.format = format
        self.topicFilter = topicFilter
        self.maxPayload = maxPayload
        self.maxFutureSkew = maxFutureSkew
    }

    /// A decoded message: the update, and OwnTracks' tracker id (`tid`) when one was sent.
    public struct Decoded: Sendable, Equatable {
        public var update: LocationUpdate
        public var trackerID: String?
    }

    /// Decodes `payload` received on `topic` when the gateway clock reads `now` (epoch seconds).
    public func decode(topic: String, payload: UnsafeRawBufferPointer, now: Double) -> Result<Decoded, InputDrop> {
        guard let device = topicFilter.deviceID(in: topic) else {
            return .failure(InputDrop(.badDeviceId, "topic '\(topic)' does not match the feed's filter '\(topicFilter)'"))
        }
        if let problem = DeviceID.problem(with: device) {
            return .failure(InputDrop(.badDeviceId, "\(problem) (topic '\(topic)')"))
        }
        guard payload.count <= maxPayload else {
            return .failure(InputDrop(.oversize, "\(payload.count) bytes is over input.maxPayload (\(maxPayload))"))
        }
        var fields = Fields()
        do {
            try PayloadScanner.scan(payload.bindMemory(to: UInt8.self)) { key, value in fields.set(key, value) }
        } catch {
            switch error {
            case .invalidUTF8: return .failure(InputDrop(.invalidUTF8, "the payload is not valid UTF-8"))
            case .notJSON(let why): return .failure(InputDrop(.notJSON, why))
            }
        }
        do {
            switch format {
            case .owntracks: return .success(try owntracks(fields, device: device, now: now))
            case .json: return .success(try json(fields, device: device, now: now))
            }
        } catch {
            return .failure(error)
        }
    }

    /// Convenience for tests and tools: decodes a byte array.
    public func decode(topic: String, payload: [UInt8], now: Double) -> Result<Decoded, InputDrop> {
        payload.withUnsafeBytes { decode(topic: topic, payload: $0, now: now) }
    }

    private func owntracks(_ f: Fields, device: String, now: Double) throws(InputDrop) -> Decoded {
        switch f.value("_type") {
        case nil: throw InputDrop(.missingField, "'_type' is missing")
        case .string("location"): break
        case .string(let other): throw InputDrop(.ignoredType, "_type '\(other)' is not a location")
        default: throw InputDrop(.wrongType, "'_type' must be a string")
        }
        let (lat, lon) = try position(f)
        guard let tst = try f.number("tst") else { throw InputDrop(.missingField, "'tst' is missing") }
        let time = try checkedTime(tst, now: now, field: "tst")
        let accuracy = try f.number("acc")
        if let accuracy, accuracy < 0 { throw InputDrop(.outOfRange, "'acc' must be >= 0, found \(accuracy)") }
        // OwnTracks iOS reports vel and cog as -1 when unknown.
        let vel = try f.number("vel").flatMap { $0 < 0 ? nil : $0 / 3.6 }
        let cog = try f.number("cog").flatMap { $0 < 0 ? nil : $0 }
        if let cog, cog > 360 { throw InputDrop(.outOfRange, "'cog' must be 0 to 360, found \(cog)") }
        let update = LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: vel, heading: cog,
            altitude: try f.number("alt"))
        var trackerID: String?
        if case .string(let tid) = f.value("tid") { trackerID = tid }
        return Decoded(update: update, trackerID: trackerID)
    }

    private func json(_ f: Fields, device: String, now: Double) throws(InputDrop) -> Decoded {
        let (lat, lon) = try position(f)
        let time: Double
        switch f.value("time") {
        case nil: throw InputDrop(.missingField, "'time' is missing")
        case .number(let n):
            guard n.isFinite else { throw InputDrop(.notFinite, "'time' is not finite") }
            time = try checkedTime(n > 1e11 ? n / 1000 : n, now: now, field: "time")
        case .string(let s):
            guard let t = ISO8601Time.parse(s) else {
                throw InputDrop(.wrongType, "'time' must be ISO-8601 (2026-11-30T12:00:00Z) or epoch seconds, found '\(s)'")
            }
            time = try checkedTime(t, now: now, field: "time")
        default: throw InputDrop(.wrongType, "'time' must be a string or a number")
        }
        let accuracy = try f.number("accuracy")
        if let accuracy, accuracy < 0 { throw InputDrop(.outOfRange, "'accuracy' must be >= 0, found \(accuracy)") }
        let speed = try f.number("speed")
        if let speed, speed < 0 { throw InputDrop(.outOfRange, "'speed' must be >= 0, found \(speed)") }
        let heading = try f.number("heading")
        if let heading, heading < 0 || heading > 360 {
            throw InputDrop(.outOfRange, "'heading' must be 0 to 360, found \(heading)")
        }
        let update = LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: speed, heading: heading,
            altitude: try f.number("altitude"))
        return Decoded(update: update, trackerID: nil)
    }

    private func position(_ f: Fields) throws(InputDrop) -> (Double, Double) {
        guard let lat = try f.number("lat") else { throw InputDrop(.missingField, "'lat' is missing") }
        guard let lon = try f.number("lon") else { throw InputDrop(.missingField, "'lon' is missing") }
        guard (-90...90).contains(lat) else { throw InputDrop(.outOfRange, "'lat' must be -90 to 90, found \(lat)") }
        guard (-180...180).contains(lon) else { throw InputDrop(.outOfRange, "'lon' must be -180 to 180, found \(lon)") }
        return (lat, lon)
    }

    private func checkedTime(_ t: Double, now: Double, field: String) throws(InputDrop) -> Double {
        guard t > 0 else { throw InputDrop(.outOfRange, "'\(field)' must be after 1970, found \(t)") }
        guard t <= now + maxFutureSkew else {
            throw InputDrop(
                .futureTime,
                "'\(field)' is \(Int((t - now).rounded())) s ahead of the gateway clock (input.maxFutureSkew is \(Int(maxFutureSkew)))")
        }
        return t
    }

    /// The top-level members a format reads; others are validated and skipped.
    private struct Fields {
        private var values: [(String, PayloadScanner.Value)] = []

        static let wanted: Set<String> = [
            "_type", "lat", "lon", "tst", "acc", "alt", "vel", "cog", "tid",
            "time", "accuracy", "speed", "heading", "altitude",
        ]

        mutating func set(_ key: String, _ value: PayloadScanner.Value) {
            guard Fields.wanted.contains(key) else { return }
            if let i = values.firstIndex(where: { $0.0 == key }) {
                values[i].1 = value
            } else {
                values.append((key, value))
            }
        }

        func value(_ key: String) -> PayloadScanner.Value? {
            values.first { $0.0 == key }?.1
        }

        /// The member as a finite number: nil if absent or null; a drop if of another type.
        func number(_ key: String) throws(InputDrop) -> Double? {
            switch value(key) {
            case nil, .null?: return nil
            case .number(let n)?:
                guard n.isFinite else { throw InputDrop(.notFinite, "'\(key)' is not finite") }
                return n
            default: throw InputDrop(.wrongType, "'\(key)' must be a number")
            }
        }
    }
}
