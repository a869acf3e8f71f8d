import FoundationEssentials
import GeotriggerCore
import Synchronization

/// The system's tzdata as a ``TimeZoneSource``: zone `NAME` is the TZif file
/// `/usr/share/zoneinfo/NAME` (Debian's `tzdata` package), read once per process and kept.
/// The environment variable `GEOTRIGGER_ZONEINFO` names another folder (tests).
package enum SystemTimeZones {
    /// The folder zone files are read from.
    static let directory: String = {
        if let dir = ProcessInfo.processInfo.environment["GEOTRIGGER_ZONEINFO"], !dir.isEmpty { return dir }
        return "/usr/share/zoneinfo"
    }()

    /// The process's source over ``directory`` (cached: a SIGHUP reload or a runtime fence
    /// change finds every zone the start found).
    package static let source = TimeZoneSource(directory: directory)
}

extension TimeZoneSource {
    /// Zones read from the TZif files under `directory`, each once.
    init(directory: String) {
        let cache = Mutex<[String: Result<TimeZoneRules, TimeZoneError>]>([:])
        self.init { name throws(TimeZoneError) in
            if let known = cache.withLock({ $0[name] }) { return try known.get() }
            let result = Result { () throws(TimeZoneError) in try TimeZoneSource.read(name, directory: directory) }
            cache.withLock { $0[name] = result }
            return try result.get()
        }
    }

    /// Why `name` cannot be a zone file name below the folder, or nil if it can.
    static func problem(withName name: String) -> String? {
        if name.isEmpty { return "expected an IANA time zone name such as \"Europe/Berlin\", found an empty string" }
        if name.hasPrefix("/") { return "a time zone name is relative (\"Europe/Berlin\"), found \"\(name)\"" }
        if name.contains("..") { return "a time zone name must not contain \"..\", found \"\(name)\"" }
        let allowed = name.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "/_-+.".unicodeScalars.contains($0)
        }
        if !allowed { return "unknown time zone \"\(name)\" (a zone name is letters, digits and / _ - + .)" }
        return nil
    }

    /// Reads and parses `directory/name`.
    static func read(_ name: String, directory: String) throws(TimeZoneError) -> TimeZoneRules {
        if let problem = problem(withName: name) { throw TimeZoneError(problem) }
        let path = directory + "/" + name
        var isFolder = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            let hint = FileManager.default.fileExists(atPath: directory) ? "" : "; is the tzdata package installed?"
            throw TimeZoneError("unknown time zone \"\(name)\" (no \(path)\(hint))")
        }
        guard !isFolder, let data = FileManager.default.contents(atPath: path) else {
            throw TimeZoneError("unknown time zone \"\(name)\" (\(path) is not a zone file)")
        }
        do throws(TimeZoneError) {
            return try TimeZoneRules(name: name, tzif: [UInt8](data))
        } catch {
            throw TimeZoneError("time zone \"\(name)\": \(path): \(error.message)")
        }
    }
}
