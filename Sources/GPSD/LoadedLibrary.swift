internal import CGPS

/// libgps opened with `dlopen` (see `LibraryLoader`): the functions resolved in it, valid for
/// as long as this object lives (it holds the handle open).
///
/// `@unchecked Sendable`: every stored property is written once in `open` and only read after;
/// the function table points into a library this object keeps mapped.
final class LoadedLibrary: @unchecked Sendable {
    /// gps_open, gps_close, gps_stream, gps_read, gps_waiting and gps_errstr of this library,
    /// for the `geotrigger_gps_*` wrappers of shim.h.
    let functions: UnsafeMutablePointer<geotrigger_gps_functions>
    private let handle: UnsafeMutableRawPointer

    private init(handle: UnsafeMutableRawPointer, functions: UnsafeMutablePointer<geotrigger_gps_functions>) {
        self.handle = handle
        self.functions = functions
    }

    deinit {
        geotrigger_gps_unload(handle)
        functions.deallocate()
    }

    /// Opens `file` and resolves the functions; on failure returns `dlerror()`'s text.
    static func open(_ file: String) -> Result<LoadedLibrary, LoadFailure> {
        let functions = UnsafeMutablePointer<geotrigger_gps_functions>.allocate(capacity: 1)
        functions.initialize(to: geotrigger_gps_functions())
        let capacity = 1_024
        let error = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        defer { error.deallocate() }
        guard let handle = geotrigger_gps_load(file, functions, error, capacity) else {
            functions.deallocate()
            return .failure(LoadFailure(file: file, reason: String(cString: error)))
        }
        return .success(LoadedLibrary(handle: handle, functions: functions))
    }

    /// A file that could not be loaded, and `dlerror()`'s text for it.
    struct LoadFailure: Error, Sendable, Equatable {
        var file: String
        var reason: String

        /// "file: reason", without repeating the file when `dlerror` already starts with it.
        var text: String { reason.hasPrefix(file) ? reason : "\(file): \(reason)" }
    }
}
