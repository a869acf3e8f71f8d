import FoundationEssentials
import Store
import Synchronization

/// A test hook for database faults (tests run as root, so file modes cannot make the disk
/// "full"): when the environment variable `GEOTRIGGER_TEST_STORE_PAGE_LIMIT` names a file, the
/// number in it is applied as `PRAGMA max_page_count` to the gateway's database connection at
/// start and on every SIGHUP, so commits that need a new page fail with `SQLITE_FULL`. A missing
/// or empty file, or 0, restores the limit SQLite had. Without the variable nothing happens.
enum StoreFaultHook {
    static let variable = "GEOTRIGGER_TEST_STORE_PAGE_LIMIT"

    /// The connection's own `max_page_count`, read before the hook first lowered it.
    private static let original = Mutex<Int64?>(nil)

    /// Applies the limit the hook's file asks for (if the variable is set).
    static func apply(to store: GatewayStore, logger: Logger) async {
        guard let file = ProcessInfo.processInfo.environment[variable], !file.isEmpty else { return }
        let text = FileManager.default.contents(atPath: file).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let requested = Int64(text.filter(\.isNumber)) ?? 0
        do {
            let before = original.withLock { $0 }
            let saved = try await store.withConnection { try $0.scalarInt64("PRAGMA max_page_count") ?? 0 }
            if before == nil { original.withLock { $0 = saved } }
            let limit = requested > 0 ? requested : (before ?? saved)
            let applied = try await store.withConnection { try $0.scalarInt64("PRAGMA max_page_count = \(limit)") ?? -1 }
            logger.warning("test hook: the database page count is capped", ["hook": variable, "file": file, "pages": "\(applied)"])
        } catch {
            logger.error("test hook failed", ["hook": variable, "error": "\(error)"])
        }
    }
}
