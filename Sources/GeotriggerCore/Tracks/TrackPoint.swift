/// One position of a recorded track or a route, as read from a track file.
///
/// Everything but the position is optional: a GeoJSON route has no times, an NMEA log has no
/// device. ``TrackPoint/locationUpdate(defaultDevice:)`` turns a timed point into the
/// ``LocationUpdate`` the engine takes.
public struct TrackPoint: Sendable, Equatable {
    /// The device this point belongs to, when the file says (JSON lines `device`, GPX track
    /// `<name>`, TCX course `<Name>`, KML Placemark `<name>`, GeoJSON `properties.device` or
    /// `properties.name`, the OwnTracks recorder's `rec/USER/DEVICE/` folders), as the file
    /// has it: replay makes a part's name a valid device id (``DeviceID/made(from:fallback:)``).
    public var device: String?
    /// Latitude in degrees (WGS84).
    public var lat: Double
    /// Longitude in degrees (WGS84).
    public var lon: Double
    /// Fix time in seconds since 1970-01-01 UTC, if the file has one.
    public var time: Double?
    /// Horizontal accuracy in metres as a 68 % radius, if known. From a dilution of precision
    /// (GPX `<hdop>`, NMEA GGA) it is estimated as ``TrackPoint/metresPerHDOP`` × HDOP.
    public var accuracy: Double?
    /// Speed in metres per second, if known.
    public var speed: Double?
    /// Heading (course over ground) in degrees clockwise from north, if known.
    public var heading: Double?
    /// Altitude in metres, if known.
    public var altitude: Double?

    public init(
        device: String? = nil, lat: Double, lon: Double, time: Double? = nil, accuracy: Double? = nil,
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

    /// The position as a coordinate.
    public var coordinate: Coordinate { Coordinate(lat: lat, lon: lon) }

    /// Metres of 68 % horizontal accuracy per unit of HDOP: gpsd's horizontal user equivalent
    /// range error without DGPS (15 m at 95 %) divided by 1.96, the same 95 % to 68 % step
    /// the `gpsd` feed takes for gpsd's `eph` (docs/topics-and-payloads.md "Inputs").
    public static let metresPerHDOP = 15.0 / 1.96
}
