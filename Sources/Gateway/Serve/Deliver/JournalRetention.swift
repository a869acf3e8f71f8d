import GeotriggerCore
import Store
import Synchronization

/// Keeps the journal within its age and its size: removes events older than
/// `journal.retentionDays` at start and every hour, and, at start and then at most once a
/// minute after the journal grew (the committer calls ``journalGrew()``), the oldest delivered
/// events past `journal.maxRows` (``GatewayStore/trimJournal(toRows:batch:while:)``, in short
/// steps between the commits). Events an outbox still has to send stay either way. While no
/// event is committed it sleeps until the hourly pass.
final class JournalRetention: Service, Sendable {
    let name = "journal-retention"
    let store: GatewayStore
    let days: Double
    let maxRows: Int
    let logger: Logger
    private let stop = StopSignal()
    /// Events were committed since the size was last looked at (true at start).
    private let grew = Atomic<Bool>(true)
    /// Poked by the first ``journalGrew()`` after a look at the size.
    private let wakeup = Wakeup()
    /// The least time between two looks at the size: reading the newest sequence is two B-tree lookups.
    static let rowsInterval: Double = 60
    static let ageInterval: Double = 3600

    init(store: GatewayStore, days: Double, maxRows: Int, logger: Logger) {
        self.store = store
        self.days = days
        self.maxRows = maxRows
        self.logger = logger
    }

    /// The committer stored journal rows (any thread, never waits).
    func journalGrew() {
        if !grew.exchange(true, ordering: .relaxed) { wakeup.poke() }
    }

    func run() async throws {
        var nextByAge = 0.0
        var nextByRows = 0.0
        await repeating(until: stop, wakeup: wakeup) {
            let now = MonotonicClock.now()
            if now >= nextByAge {
                nextByAge = now + Self.ageInterval
                do {
                    let removed = try await store.applyRetention(days: days, now: WallClock.now())
                    if removed > 0 { logger.info("journal retention removed old events", ["events": "\(removed)", "days": "\(days)"]) }
                } catch {
                    logger.warning("journal retention failed", ["error": "\(error)"])
                }
            }
            if now >= nextByRows, grew.exchange(false, ordering: .relaxed) {
                nextByRows = now + Self.rowsInterval
                do {
                    let removed = try await store.trimJournal(toRows: maxRows) { [self] in !self.stop.isFired }
                    if removed > 0 { logger.info("journal retention removed the oldest delivered events past journal.maxRows", ["events": "\(removed)", "maxRows": "\(maxRows)"]) }
                } catch {
                    logger.warning("journal retention (journal.maxRows) failed", ["error": "\(error)"])
                }
            }
            return grew.load(ordering: .relaxed) ? min(nextByAge, nextByRows) : nextByAge
        }
    }

    func shutdown() async { stop.fire() }
}
