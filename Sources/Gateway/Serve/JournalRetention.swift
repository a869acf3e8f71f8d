import GeotriggerCore
import Store
import Synchronization

/// Removes journal events older than `journal.retentionDays`, at start and every hour.
final class JournalRetention: Service, Sendable {
    let name = "journal-retention"
    let store: GatewayStore
    let days: Double
    let logger: Logger
    private let stopped = Atomic<Bool>(false)

    init(store: GatewayStore, days: Double, logger: Logger) {
        self.store = store
        self.days = days
        self.logger = logger
    }

    func run() async throws {
        await repeating(every: 3600, until: stopped) {
            do {
                let removed = try await store.applyRetention(days: days, now: WallClock.now())
                if removed > 0 { logger.info("journal retention removed old events", ["events": "\(removed)", "days": "\(days)"]) }
            } catch {
                logger.warning("journal retention failed", ["error": "\(error)"])
            }
        }
    }

    func shutdown() async { stopped.store(true, ordering: .relaxed) }
}
