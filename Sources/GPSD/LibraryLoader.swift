internal import CGPS
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Loads libgps with `dlopen` the first time a gpsd connection needs it, once per process.
///
/// The gateway does not link libgps (it would map libgps and the ~1 MB of libraries it pulls
/// in, libdbus, libsystemd, libgcrypt, ..., into every process, gpsd feed or not). Loading
/// happens under a lock, so concurrent first connections load it once; a success is kept for the
/// life of the process (libgps is never unloaded), a failure is not, so the next connection
/// attempt tries again (installing the package fixes a running gateway at its next retry).
///
/// Files tried, in order (`files`): the one named by `GEOTRIGGER_LIBGPS` if set, alone; else
/// the sonames of the libgps releases built with the compiled headers' API major version
/// (`libgps.so.28` for API 11, Debian 12), then `libgps.so` (the symlink libgps-dev installs,
/// to the library the headers belong to). Never the soname of another API: the wrapper reads
/// `struct gps_data_t` at the compiled headers' offsets.
final class LibraryLoader: Sendable {
    /// The process's loader; its file list is read from the environment at first use.
    static let shared = LibraryLoader(
        files: candidateFiles(override: getenv(GPSDLibrary.fileEnvironmentVariable).map { String(cString: $0) }))

    /// The files tried, in order.
    let files: [String]
    private let loaded = Mutex<LoadedLibrary?>(nil)

    init(files: [String]) {
        self.files = files
    }

    /// The loaded library, loading it now if no earlier call did; throws a `GPSDError` that
    /// names every file tried, `dlerror()`'s text for each, and the package to install.
    func library() throws(GPSDError) -> LoadedLibrary {
        try loaded.withLock { loaded throws(GPSDError) -> LoadedLibrary in
            if let loaded { return loaded }
            var failures: [LoadedLibrary.LoadFailure] = []
            for file in files {
                switch LoadedLibrary.open(file) {
                case .success(let library):
                    loaded = library
                    return library
                case .failure(let failure):
                    failures.append(failure)
                }
            }
            throw GPSDError.libraryUnavailable(failures)
        }
    }

    /// Whether a `library()` call has loaded libgps.
    var isLoaded: Bool { loaded.withLock { $0 != nil } }

    /// The files to try: `override` alone when set and not empty; else the sonames for the
    /// compiled API (shim.h's table), then `libgps.so`.
    static func candidateFiles(override: String?) -> [String] {
        if let override, !override.isEmpty { return [override] }
        return sonames + ["libgps.so"]
    }

    /// The sonames shim.h lists for the compiled API major version (none for an unknown one).
    static let sonames: [String] = {
        var names: [String] = []
        while let name = geotrigger_gps_soname(Int32(names.count)) {
            names.append(String(cString: name))
        }
        return names
    }()

    /// The Debian package that ships the first soname (`libgps.so.28` -> `libgps28`), or nil.
    static var debianPackage: String? {
        guard let soname = sonames.first, let dot = soname.lastIndex(of: ".") else { return nil }
        return "libgps" + soname[soname.index(after: dot)...]
    }
}
