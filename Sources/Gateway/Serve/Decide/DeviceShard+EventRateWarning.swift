import GeotriggerCore
import Synchronization

extension DeviceShard {
    /// `input.maxEventsPerDevice`, shared by all shards: one status warning naming the last
    /// device whose events were refused, raised by a device's first refused event in a minute
    /// (or any refused event while it is down) and cleared by the pool's clock once no event
    /// was refused for ``clearAfter`` seconds of the gateway's clock.
    ///
    /// The time of the last refused event (0: the warning is down) and the warning change
    /// together under one lock: a refusal and the clock's clearing, in either order, never
    /// leave the warning down while the time says up (or up while it says down).
    final class EventRateWarning: Sendable {
        static let key = "event-rate-limited"
        static let clearAfter: Double = 60
        let limit: Int
        /// The gateway clock of the last refused event; 0 while the warning is down.
        private let lastRefused = LeveledMutex<Double>(0, level: .eventRateWarning)
        let warnings: Warnings

        init(limit: Int, warnings: Warnings) {
            self.limit = limit
            self.warnings = warnings
        }

        /// An event of `device` refused at gateway-clock time `now` by `window`; `first`: its
        /// first in that window's minute.
        func refused(device: String, now: Double, first: Bool, window: EventRateLimiter.Window = .fixTime) {
            lastRefused.withLock { last in
                let wasDown = last == 0
                last = max(now, .leastNonzeroMagnitude)
                guard first || wasDown else { return }
                warnings.set(Self.key, Self.message(device: device, limit: limit, window: window), origin: .client)
            }
        }

        /// The warning for `device` refused by `window`.
        static func message(device: String, limit: Int, window: EventRateLimiter.Window) -> String {
            switch window {
            case .fixTime:
                "device \(device) decided more than \(limit) events in a minute of fix time (input.maxEventsPerDevice): the rest are counted as eventRateLimited, neither journaled nor published"
            case .runningClock:
                "device \(device) decided more than \(EventRateLimiter.runningLimit(limit)) events in a minute of the gateway's clock (\(EventRateLimiter.runningFactor) x input.maxEventsPerDevice; its fix time runs faster than real time): the rest are counted as eventRateLimited, neither journaled nor published"
            }
        }

        /// When ``clearIfQuiet(now:)`` clears the warning if no event is refused before (gateway
        /// clock; nil: the warning is down).
        var clearDue: Double? {
            lastRefused.withLock { $0 == 0 ? nil : $0 + Self.clearAfter }
        }

        /// Clears the warning once no event was refused for ``clearAfter`` seconds before `now`.
        func clearIfQuiet(now: Double) {
            lastRefused.withLock { last in
                guard last != 0, now - last >= Self.clearAfter else { return }
                last = 0
                warnings.clear(Self.key, resolved: "no device is past input.maxEventsPerDevice any more")
            }
        }
    }
}
