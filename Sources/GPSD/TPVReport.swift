internal import CGPS

/// The fields of one gpsd TPV (time-position-velocity) report as libgps decoded them, in plain
/// values. Numbers gpsd did not send are NaN, as in libgps; the `...Set` flags mirror the
/// report's `set` mask (`MODE_SET`, `LATLON_SET`, `TIME_SET`).
public struct TPVReport: Sendable, Equatable {
    /// NMEA-style fix mode: 0 not seen, 1 no fix, 2 two-dimensional, 3 three-dimensional.
    public var mode: Int
    public var modeSet: Bool
    public var latLonSet: Bool
    public var timeSet: Bool
    /// Receiver fix time in seconds since 1970-01-01 UTC.
    public var time: Double
    public var latitude: Double
    public var longitude: Double
    /// Longitude and latitude error estimates in metres (95 % per axis in gpsd).
    public var epx: Double
    public var epy: Double
    /// Horizontal position error estimate in metres (95 % in gpsd).
    public var eph: Double
    /// Speed over ground in m/s.
    public var speed: Double
    /// Course over ground in degrees from true north.
    public var track: Double
    /// Altitude above mean sea level in metres.
    public var altitude: Double

    public init(
        mode: Int, modeSet: Bool = true, latLonSet: Bool, timeSet: Bool = true, time: Double,
        latitude: Double, longitude: Double, epx: Double = .nan, epy: Double = .nan,
        eph: Double = .nan, speed: Double = .nan, track: Double = .nan, altitude: Double = .nan
    ) {
        self.mode = mode
        self.modeSet = modeSet
        self.latLonSet = latLonSet
        self.timeSet = timeSet
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.epx = epx
        self.epy = epy
        self.eph = eph
        self.speed = speed
        self.track = track
        self.altitude = altitude
    }

    /// Whether gpsd says the receiver has no fix: the mode is present and below 2.
    public var reportsNoFix: Bool { modeSet && mode < 2 }
}

extension TPVReport {
    /// Two reports are equal when every field is, NaN counting as equal to NaN (a field gpsd
    /// did not send).
    public static func == (lhs: TPVReport, rhs: TPVReport) -> Bool {
        func same(_ a: Double, _ b: Double) -> Bool { a == b || (a.isNaN && b.isNaN) }
        return lhs.mode == rhs.mode && lhs.modeSet == rhs.modeSet
            && lhs.latLonSet == rhs.latLonSet && lhs.timeSet == rhs.timeSet
            && same(lhs.time, rhs.time) && same(lhs.latitude, rhs.latitude)
            && same(lhs.longitude, rhs.longitude) && same(lhs.epx, rhs.epx)
            && same(lhs.epy, rhs.epy) && same(lhs.eph, rhs.eph) && same(lhs.speed, rhs.speed)
            && same(lhs.track, rhs.track) && same(lhs.altitude, rhs.altitude)
    }
}
