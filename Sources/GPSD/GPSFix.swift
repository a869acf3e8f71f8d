internal import CGPS

/// One position fix of the gateway's own receiver, as gpsd reported it in a TPV report.
public struct GPSFix: Sendable, Equatable {
    /// Receiver fix time: seconds since 1970-01-01 UTC.
    public var time: Double
    /// WGS84 latitude and longitude in degrees.
    public var lat: Double
    public var lon: Double
    /// Fix mode: 2 (two-dimensional) or 3 (three-dimensional).
    public var mode: Int
    /// Horizontal accuracy in metres as a 68 % radius (see `accuracy(epx:epy:eph:)`), if known.
    public var accuracy: Double?
    /// Speed over ground in m/s, if known.
    public var speed: Double?
    /// Course over ground in degrees clockwise from true north, if known.
    public var track: Double?
    /// Altitude above mean sea level in metres, if known (3D fixes only).
    public var altitude: Double?

    public init(
        time: Double, lat: Double, lon: Double, mode: Int, accuracy: Double? = nil,
        speed: Double? = nil, track: Double? = nil, altitude: Double? = nil
    ) {
        self.time = time
        self.lat = lat
        self.lon = lon
        self.mode = mode
        self.accuracy = accuracy
        self.speed = speed
        self.track = track
        self.altitude = altitude
    }

    /// The fix a TPV report carries, or nil when it carries none.
    ///
    /// gpsd's own rule: the mode is set and at least 2, and latitude and longitude are set and
    /// finite (and within ±90 / ±180). The gateway adds one: the fix time is set, finite and
    /// after 1970, since every update is ordered by fix time. Speed, track and altitude are kept
    /// only when finite (altitude only for a 3D fix, as libgps documents).
    public init?(report: TPVReport) {
        guard report.modeSet, report.mode >= 2 else { return nil }
        guard report.latLonSet, report.latitude.isFinite, report.longitude.isFinite,
            abs(report.latitude) <= 90, abs(report.longitude) <= 180
        else { return nil }
        guard report.timeSet, report.time.isFinite, report.time > 0 else { return nil }
        self.init(
            time: report.time, lat: report.latitude, lon: report.longitude, mode: report.mode,
            accuracy: GPSFix.accuracy(epx: report.epx, epy: report.epy, eph: report.eph),
            speed: report.speed.isFinite ? report.speed : nil,
            track: report.track.isFinite ? report.track : nil,
            altitude: report.mode >= 3 && report.altitude.isFinite ? report.altitude : nil)
    }

    /// Horizontal accuracy as a 68 % radius in metres (docs/topics-and-payloads.md "Inputs", the `gpsd` feed).
    ///
    /// gpsd's epx and epy are 95 % per axis: accuracy = sqrt(epx² + epy²) / 1.96; without both,
    /// its 95 % horizontal estimate eph / 1.96; without that, nil. Values that are not finite
    /// or are negative count as absent.
    public static func accuracy(epx: Double, epy: Double, eph: Double) -> Double? {
        func known(_ value: Double) -> Bool { value.isFinite && value >= 0 }
        if known(epx), known(epy) { return (epx * epx + epy * epy).squareRoot() / 1.96 }
        if known(eph) { return eph / 1.96 }
        return nil
    }
}
