import GeotriggerCore
import Store

/// Keeps the journal within its age and its size: removes events older than
/// `journal.retentionDays` at start and every hour, and, at start and every minute, the oldest
/// delivered events past `journal.maxRows` (``GatewayStore/trimJournal(toRows:batch:while:)``, in
/// short steps between the commits). Events an outbox still has to send stay either way.
final class JournalRetention: Service, Sendable {
    let name = "journal-retention"
    let store: GatewayStore
    let days: Double
    let maxRows: Int
    let logger: Logger
    private let stop = StopSignal()
    /// How often the size is looked at: reading the newest sequence is two B-tree lookups.
    static let rowsInterval: Double = 60

    init(store: GatewayStore, days: Double, maxRows: Int, logger: Logger) {
        self.store = store
        self.days = days
        self.maxRows = maxRows
        self.logger = logger
    }

    func run() async throws {
        var nextByAge = 0.0
        await repeating(every: Self.rowsInterval, until: stop) {
            let now = MonotonicClock.now()
            if now >= nextByAge {
                nextByAge = now + 3600
                do {
                    let removed = try await store.applyRetention(days: days, now: WallClock.now())
                    if removed > 0 { logger.info("journal retention removed old events", ["events": "\(removed)", "days": "\(days)"]) }
                } catch {
                    logger.warning("journal retention failed", ["error": "\(error)"])
                }
            }
            do {
                let removed = try await store.trimJournal(toRows: maxRows) { [self] in !self.stop.isFired }
                if removed > 0 { logger.info("journal retention removed the oldest delivered events past journal.maxRows", ["events": "\(removed)", "maxRows": "\(maxRows)"]) }
            } catch {
                logger.warning("journal retention (journal.maxRows) failed", ["error": "\(error)"])
            }
        }
    }

    func shutdown() async { stop.fire() }
}
