internal import CGPS

/// The libgps the gateway is linked against.
public enum GPSDLibrary {
    /// The libgps API version as "major.minor".
    public static var apiVersion: String { "\(GPSD_API_MAJOR_VERSION).\(GPSD_API_MINOR_VERSION)" }
}
