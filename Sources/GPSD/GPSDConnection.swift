internal import CGPS

#if canImport(Glibc)
import Glibc
#endif

/// One open connection to gpsd, watching JSON reports: owns libgps's `gps_data_t`.
///
/// `init` loads libgps if no connection did before (`GPSDLibrary`), opens the connection
/// (`gps_open`) and starts watching (`gps_stream` with `WATCH_ENABLE | WATCH_JSON`); `deinit`
/// stops watching and closes it. Not Sendable: libgps handles are not thread-safe, so one
/// thread uses a connection (see `GPSDReader`). Its calls block; never use it on the
/// cooperative thread pool.
public final class GPSDConnection {
    /// Where gpsd listens.
    public let host: String
    public let port: Int
    private let library: LoadedLibrary
    private let data: UnsafeMutablePointer<gps_data_t>
    private let message: UnsafeMutablePointer<CChar>
    private static let messageCapacity: Int32 = 16_384

    /// Connects to gpsd at `host`:`port` and starts watching JSON reports. Throws a
    /// `GPSDError` whose `isLibraryUnavailable` is true if libgps cannot be loaded.
    public convenience init(host: String = "127.0.0.1", port: Int = 2947) throws(GPSDError) {
        try self.init(host: host, port: port, loader: .shared)
    }

    /// Connects with the libgps of `loader` (tests give one that tries other files).
    init(host: String, port: Int, loader: LibraryLoader) throws(GPSDError) {
        let library = try loader.library()
        self.library = library
        self.host = host
        self.port = port
        // gps_data_t is ~24 kB on API 11: allocated once per connection, zeroed as libgps expects.
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        UnsafeMutableRawPointer(data).initializeMemory(
            as: UInt8.self, repeating: 0, count: MemoryLayout<gps_data_t>.size)
        let endpoint = "\(host):\(port)"
        do {
            try GPSDError.check(
                geotrigger_gps_open(library.functions, host, String(port), data),
                "gps_open(\(endpoint))", library: library)
        } catch {
            data.deallocate()
            throw error
        }
        do {
            try GPSDError.check(
                geotrigger_gps_stream(library.functions, data, geotrigger_watch_enable_json()),
                "gps_stream(WATCH_ENABLE|WATCH_JSON) on \(endpoint)", library: library)
        } catch {
            _ = geotrigger_gps_close(library.functions, data)
            data.deallocate()
            throw error
        }
        self.data = data
        self.message = .allocate(capacity: Int(GPSDConnection.messageCapacity))
        self.message.initialize(to: 0)
    }

    deinit {
        _ = geotrigger_gps_stream(library.functions, data, geotrigger_watch_disable())
        _ = geotrigger_gps_close(library.functions, data)
        data.deallocate()
        message.deallocate()
    }

    /// Waits up to `timeout` seconds for a report to arrive (`gps_waiting`); true if one did
    /// (or the connection closed: the next `readReport()` then throws).
    public func waitForReport(timeout: Double) -> Bool {
        let microseconds = Int32(clamping: Int((max(0, timeout) * 1_000_000).rounded()))
        return geotrigger_gps_waiting(library.functions, data, microseconds)
    }

    /// Reads one report (`gps_read`); throws when the connection is closed or broken.
    public func readReport() throws(GPSDError) -> GPSDReport {
        message[0] = 0
        errno = 0
        let result = geotrigger_gps_read(library.functions, data, message, GPSDConnection.messageCapacity)
        let call = "gps_read from \(host):\(port)"
        // libgps returns -1 for the end of the stream too, leaving errno alone: gpsd closed the
        // connection (code 0), not libgps's own -1 ("can't get service entry").
        if result == -1 && errno == 0 { throw GPSDError(code: 0, call: call, library: library) }
        let count = try GPSDError.check(result, call, library: library)
        guard count > 0 else { return .incomplete }
        let length = strnlen(message, Int(GPSDConnection.messageCapacity))
        let line = UnsafeRawBufferPointer(start: message, count: length)
        guard let className = GPSDReport.className(ofJSON: line) else { return .incomplete }
        guard className == "TPV" else { return .other(className: className) }
        return .tpv(currentTPV())
    }

    /// The TPV fields of the report just read.
    private func currentTPV() -> TPVReport {
        let fix = data.pointee.fix
        return withUnsafePointer(to: fix) { fixPointer in
            TPVReport(
                mode: Int(fix.mode),
                modeSet: geotrigger_set_has(data, geotrigger_mode_set()) != 0,
                latLonSet: geotrigger_set_has(data, geotrigger_latlon_set()) != 0,
                timeSet: geotrigger_set_has(data, geotrigger_time_set()) != 0,
                time: geotrigger_fix_time(fixPointer),
                latitude: fix.latitude, longitude: fix.longitude,
                epx: fix.epx, epy: fix.epy, eph: fix.eph,
                speed: fix.speed, track: fix.track,
                altitude: geotrigger_fix_altitude_msl(fixPointer))
        }
    }
}
