internal import CGPS

/// libgps, the gpsd client library: the API the wrapper was compiled for and whether this
/// process has loaded it.
///
/// The gateway does not link libgps: the first `GPSDConnection` loads it with `dlopen`, so a
/// process that never opens a gpsd connection never maps it (nor libdbus, libsystemd, ...,
/// which it pulls in). Files tried: the value of `GEOTRIGGER_LIBGPS` if set; else the soname(s)
/// of the compiled API (`libgps.so.28` for API 11: Debian package libgps28), then `libgps.so`.
public enum GPSDLibrary {
    /// The libgps API version as "major.minor", from the headers the wrapper was compiled with.
    public static var apiVersion: String { "\(GPSD_API_MAJOR_VERSION).\(GPSD_API_MINOR_VERSION)" }

    /// Whether this process has loaded libgps (the first gpsd connection attempt does).
    public static var isLoaded: Bool { LibraryLoader.shared.isLoaded }

    /// `GEOTRIGGER_LIBGPS`: the environment variable naming the libgps file to load instead of
    /// the default search (a soname such as `libgps.so.30`, or a path), for a distribution whose
    /// libgps has another soname. Only that file is tried; it must be a libgps of the API this
    /// gateway was compiled for (`apiVersion`). Read when the first gpsd connection is opened.
    public static let fileEnvironmentVariable = "GEOTRIGGER_LIBGPS"
}
