/// Turns one MQTT message of a feed into a ``LocationUpdate``, or an ``InputDrop`` naming the
/// contract's reason. Pure and cheap: it runs once per received message.
public struct LocationDecoder: Sendable {
    public var format: PayloadFormat
    public var topicFilter: TopicFilter
    /// `input.maxPayload`: larger payloads are dropped as `oversize`.
    public var maxPayload: Int
    /// `input.maxFutureSkew`: fix times further ahead of the clock are dropped as `futureTime`.
    public var maxFutureSkew: Double
    /// `input.maxAccuracy` (metres): a larger accuracy is dropped as `outOfRange` (an accuracy
    /// circle that wide would be tested against every fence it covers).
    public var maxAccuracy: Double

    public init(
        format: PayloadFormat, topicFilter: TopicFilter, maxPayload: Int = 65536, maxFutureSkew: Double = 300,
        maxAccuracy: Double = 10000
    ) {
        self.format = format
        self.topicFilter = topicFilter
        self.maxPayload = maxPayload
        self.maxFutureSkew = maxFutureSkew
        self.maxAccuracy = maxAccuracy
    }

    /// The most UTF-8 bytes of an OwnTracks `tid` kept (longer: cut).
    public static let maxTrackerIDBytes = 8

    /// A decoded message: the update, and OwnTracks' tracker id (`tid`, at most
    /// ``maxTrackerIDBytes``) when one was sent.
    public struct Decoded: Sendable, Equatable {
        public var update: LocationUpdate
        public var trackerID: String?
    }

    /// Decodes `payload` received on `topic` when the gateway clock reads `now` (epoch seconds).
    /// `size` is the payload's length as received when the caller did not copy all of it (a
    /// payload over `maxPayload` need not be copied to be dropped as `oversize`).
    public func decode(topic: String, payload: UnsafeRawBufferPointer, size: Int? = nil, now: Double) -> Result<Decoded, InputDrop> {
        guard let device = topicFilter.deviceID(in: topic) else {
            return .failure(InputDrop(.badDeviceId, "topic '\(topic)' does not match the feed's filter '\(topicFilter)'"))
        }
        if let problem = DeviceID.problem(with: device) {
            return .failure(InputDrop(.badDeviceId, "\(problem) (topic '\(topic)')"))
        }
        let received = max(size ?? payload.count, payload.count)
        guard received <= maxPayload else {
            return .failure(InputDrop(.oversize, "\(received) bytes is over input.maxPayload (\(maxPayload))"))
        }
        let bytes = payload.bindMemory(to: UInt8.self)
        do {
            switch format {
            case .owntracks:
                var fields = OwnTracksFields()
                try LocationDecoder.scan(bytes, into: &fields)
                return .success(try owntracks(fields, device: device, now: now))
            case .json:
                var fields = JSONFields()
                try LocationDecoder.scan(bytes, into: &fields)
                return .success(try json(fields, device: device, now: now))
            }
        } catch {
            return .failure(error)
        }
    }

    /// Scans the payload into the format's fields; the scanner's failures become the contract's drops.
    private static func scan<Fields: PayloadScanner.Receiver>(
        _ bytes: UnsafeBufferPointer<UInt8>, into fields: inout Fields
    ) throws(InputDrop) {
        do {
            try PayloadScanner.scan(bytes, into: &fields)
        } catch {
            switch error {
            case .invalidUTF8: throw InputDrop(.invalidUTF8, "the payload is not valid UTF-8")
            case .notJSON(let why): throw InputDrop(.notJSON, why)
            }
        }
    }

    /// Convenience for tests and tools: decodes a byte array.
    public func decode(topic: String, payload: [UInt8], now: Double) -> Result<Decoded, InputDrop> {
        payload.withUnsafeBytes { decode(topic: topic, payload: $0, now: now) }
    }

    private func owntracks(_ f: OwnTracksFields, device: String, now: Double) throws(InputDrop) -> Decoded {
        switch f.type {
        case nil: throw InputDrop(.missingField, "'_type' is missing")
        case .string("location"): break
        case .string(let other): throw InputDrop(.ignoredType, "_type '\(other)' is not a location")
        default: throw InputDrop(.wrongType, "'_type' must be a string")
        }
        let (lat, lon) = try position(lat: f.lat, lon: f.lon)
        guard let tst = try number(f.tst, "tst") else { throw InputDrop(.missingField, "'tst' is missing") }
        let time = try checkedTime(tst, now: now, field: "tst")
        let accuracy = try number(f.acc, "acc")
        if let accuracy, accuracy < 0 { throw InputDrop(.outOfRange, "'acc' must be >= 0, found \(accuracy)") }
        if let accuracy, accuracy > maxAccuracy { throw LocationDecoder.tooInaccurate(accuracy, field: "acc", limit: maxAccuracy) }
        // OwnTracks iOS reports vel and cog as -1 when unknown.
        let vel = try number(f.vel, "vel").flatMap { $0 < 0 ? nil : $0 / 3.6 }
        let cog = try number(f.cog, "cog").flatMap { $0 < 0 ? nil : $0 }
        if let cog, cog > 360 { throw InputDrop(.outOfRange, "'cog' must be 0 to 360, found \(cog)") }
        let update = LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: vel, heading: cog,
            altitude: try number(f.alt, "alt"))
        var trackerID: String?
        // Kept per device and copied into every transition: a phone's `tid` is two letters, and
        // a client's 60,000-byte one must not be kept (docs/limits.md).
        if case .string(let tid) = f.tid { trackerID = String(tid.prefix(utf8Bytes: LocationDecoder.maxTrackerIDBytes)) }
        return Decoded(update: update, trackerID: trackerID)
    }

    private func json(_ f: JSONFields, device: String, now: Double) throws(InputDrop) -> Decoded {
        let (lat, lon) = try position(lat: f.lat, lon: f.lon)
        let time: Double
        switch f.time {
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
        let accuracy = try number(f.accuracy, "accuracy")
        if let accuracy, accuracy < 0 { throw InputDrop(.outOfRange, "'accuracy' must be >= 0, found \(accuracy)") }
        if let accuracy, accuracy > maxAccuracy { throw LocationDecoder.tooInaccurate(accuracy, field: "accuracy", limit: maxAccuracy) }
        let speed = try number(f.speed, "speed")
        if let speed, speed < 0 { throw InputDrop(.outOfRange, "'speed' must be >= 0, found \(speed)") }
        let heading = try number(f.heading, "heading")
        if let heading, heading < 0 || heading > 360 {
            throw InputDrop(.outOfRange, "'heading' must be 0 to 360, found \(heading)")
        }
        let update = LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: speed, heading: heading,
            altitude: try number(f.altitude, "altitude"))
        return Decoded(update: update, trackerID: nil)
    }

    private func position(lat: PayloadScanner.Value?, lon: PayloadScanner.Value?) throws(InputDrop) -> (Double, Double) {
        guard let lat = try number(lat, "lat") else { throw InputDrop(.missingField, "'lat' is missing") }
        guard let lon = try number(lon, "lon") else { throw InputDrop(.missingField, "'lon' is missing") }
        guard (-90...90).contains(lat) else { throw InputDrop(.outOfRange, "'lat' must be -90 to 90, found \(lat)") }
        guard (-180...180).contains(lon) else { throw InputDrop(.outOfRange, "'lon' must be -180 to 180, found \(lon)") }
        return (lat, lon)
    }

    private func checkedTime(_ t: Double, now: Double, field: String) throws(InputDrop) -> Double {
        guard t > 0 else { throw InputDrop(.outOfRange, "'\(field)' must be after 1970, found \(t)") }
        guard t <= now + maxFutureSkew else {
            throw InputDrop(
                .futureTime,
                "'\(field)' is \(LocationDecoder.wholeSeconds(t - now)) s ahead of the gateway clock (input.maxFutureSkew is \(LocationDecoder.wholeSeconds(maxFutureSkew)))")
        }
        return t
    }

    /// The drop of an update whose accuracy (`field`, metres) is over `input.maxAccuracy`.
    public static func tooInaccurate(_ accuracy: Double, field: String, limit: Double) -> InputDrop {
        InputDrop(.outOfRange, "'\(field)' is \(accuracy) m, over input.maxAccuracy (\(limit) m)")
    }

    /// Seconds rounded to a whole number for a message; a value too large for an Int (a fix
    /// time of 1e22) is written as it is instead of trapping.
    static func wholeSeconds(_ seconds: Double) -> String {
        abs(seconds) < 1e15 ? "\(Int(seconds.rounded()))" : "\(seconds)"
    }

    /// A member's value as a finite number: nil if absent or null; a drop if of another type.
    private func number(_ value: PayloadScanner.Value?, _ name: String) throws(InputDrop) -> Double? {
        switch value {
        case nil, .null?: return nil
        case .number(let n)?:
            guard n.isFinite else { throw InputDrop(.notFinite, "'\(name)' is not finite") }
            return n
        default: throw InputDrop(.wrongType, "'\(name)' must be a number")
        }
    }
}
