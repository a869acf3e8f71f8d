internal import CMosquitto

/// The libmosquitto the gateway is linked against.
public enum MosquittoLibrary {
    /// The library version as "major.minor.revision".
    public static var version: String {
        var major: Int32 = 0, minor: Int32 = 0, revision: Int32 = 0
        _ = mosquitto_lib_version(&major, &minor, &revision)
        return "\(major).\(minor).\(revision)"
    }
}
