/// One position report of one device, as every feed produces it (docs/topics-and-payloads.md "Inputs").
public struct LocationUpdate: Sendable, Equatable {
    /// The device id (`USER/DEVICE` for OwnTracks, topic wildcard levels for `json`, the feed's
    /// `device` for gpsd).
    public var device: String
    public var lat: Double
    public var lon: Double
    /// Fix time: seconds since 1970-01-01 UTC, from the device or receiver.
    public var time: Double
    /// Horizontal accuracy in metres as a 68 % radius, if known.
    public var accuracy: Double?
    /// Speed in metres per second, if known.
    public var speed: Double?
    /// Heading (course over ground) in degrees clockwise from north, if known.
    public var heading: Double?
    /// Altitude in metres, if known.
    public var altitude: Double?

    public init(
        device: String, lat: Double, lon: Double, time: Double, accuracy: Double? = nil,
        speed: Double? = nil, heading: Double? = nil, altitude: Double? = nil
    ) {
        self.device = device
        self.lat = lat
        self.lon = lon
        self.time = time
        self.accuracy = accuracy
        self.speed = speed
        self.heading = heading
        self.altitude = altitude
    }

    public var coordinate: Coordinate { Coordinate(lat: lat, lon: lon) }
}
