internal import CGPS

#if canImport(Glibc)
import Glibc
#endif

/// A failed libgps call: the raw code, libgps's (or the C library's) text for it, and the call.
///
/// Negative codes are libgps's own (`NL_NOCONNECT` = -6: "can't connect to host/port pair");
/// positive codes are `errno` values; 0 means gpsd closed the connection;
/// `GPSDError.libraryUnavailableCode` means libgps itself could not be loaded (see
/// `libraryUnavailable`).
public struct GPSDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The raw code libgps reported (kept even when unknown to this wrapper).
    public var code: Int32
    /// The text for `code`: `gps_errstr` for libgps codes, `strerror` for `errno` values.
    public var message: String
    /// The call that failed, with its target, e.g. `gps_open(127.0.0.1:2947)`.
    public var call: String

    public init(code: Int32, message: String, call: String) {
        self.code = code
        self.message = message
        self.call = call
    }

    /// The error for `code` as returned by `call`, with the text `library` gives it.
    init(code: Int32, call: String, library: LoadedLibrary) {
        self.init(code: code, message: GPSDError.text(for: code, library: library), call: call)
    }

    /// The code of a `libraryUnavailable` error: not a libgps code (those are small negatives).
    public static let libraryUnavailableCode: Int32 = -1_000

    /// Whether this is the failure to load libgps (the gpsd client library) itself.
    public var isLibraryUnavailable: Bool { code == GPSDError.libraryUnavailableCode }

    public var description: String {
        isLibraryUnavailable ? "gpsd: \(message)" : "gpsd: \(call) failed: \(message) (code \(code))"
    }

    /// libgps could not be loaded from any of the files tried: the message names each file with
    /// `dlerror()`'s text, the Debian package that provides it and `GEOTRIGGER_LIBGPS`.
    static func libraryUnavailable(_ failures: [LoadedLibrary.LoadFailure]) -> GPSDError {
        let api = "API \(GPSD_API_MAJOR_VERSION)"
        let package = LibraryLoader.debianPackage.map { "the Debian package \($0)" }
            ?? "the libgps package of gpsd's client \(api)"
        let tried = failures.isEmpty ? "no file to try" : failures.map(\.text).joined(separator: "; ")
        return GPSDError(
            code: libraryUnavailableCode,
            message: "cannot load libgps, the gpsd client library (\(api)): \(tried); install \(package),"
                + " or set \(GPSDLibrary.fileEnvironmentVariable) to the libgps file to load",
            call: "dlopen(\(failures.map(\.file).joined(separator: ", ")))")
    }

    /// Checks a libgps return value: 0 or more is success; below 0 throws with the code libgps
    /// left in `errno` (libgps stores its own negative codes there), or `result` if `errno` is 0.
    @discardableResult
    static func check(_ result: Int32, _ call: @autoclosure () -> String, library: LoadedLibrary)
        throws(GPSDError) -> Int32
    {
        guard result < 0 else { return result }
        let code = errno
        throw GPSDError(code: code != 0 ? code : result, call: call(), library: library)
    }

    private static func text(for code: Int32, library: LoadedLibrary) -> String {
        if code == 0 { return "connection closed by gpsd" }
        if code > 0, let text = strerror(code) { return String(cString: text) }
        guard let text = geotrigger_gps_errstr(library.functions, code) else { return "unknown libgps error" }
        return String(cString: text)
    }
}
