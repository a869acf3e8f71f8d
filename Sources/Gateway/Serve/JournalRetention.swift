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
        var next = 0.0
        while !stopped.load(ordering: .relaxed) {
            let now = MonotonicClock.now()
            if now >= next {
                next = now + 3600
                do {
                    let removed = try await store.applyRetention(days: days, now: WallClock.now())
                    if removed > 0 { logger.info("journal retention removed old events", ["events": "\(removed)", "days": "\(days)"]) }
                } catch {
                    logger.warning("journal retention failed", ["error": "\(error)"])
                }
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    func shutdown() async { stopped.store(true, ordering: .relaxed) }
}
