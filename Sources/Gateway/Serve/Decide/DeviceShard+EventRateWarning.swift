import GeotriggerCore
import Synchronization

extension DeviceShard {
    /// `input.maxEventsPerDevice`, shared by all shards: one status warning naming the last
    /// device whose events were refused, raised by a device's first refused event in a minute of
    /// its fix time (or any refused event while it is down) and cleared by the pool's clock once
    /// no event was refused for ``clearAfter`` seconds of the gateway's clock.
    final class EventRateWarning: Sendable {
        static let key = "event-rate-limited"
        static let clearAfter: Double = 60
        let limit: Int
        /// The gateway clock of the last refused event (its bit pattern); 0 while the warning is down.
        private let lastRefused = Atomic<UInt64>(0)
        let warnings: Warnings

        init(limit: Int, warnings: Warnings) {
            self.limit = limit
            self.warnings = warnings
        }

        /// An event of `device` refused at gateway-clock time `now` by `window`; `first`: its
        /// first in that window's minute.
        func refused(device: String, now: Double, first: Bool, window: EventRateLimiter.Window = .fixTime) {
            let wasDown = lastRefused.exchange(max(now, .leastNonzeroMagnitude).bitPattern, ordering: .relaxed) == 0
            guard first || wasDown else { return }
            warnings.set(Self.key, Self.message(device: device, limit: limit, window: window), origin: .client)
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
            let last = lastRefused.load(ordering: .relaxed)
            return last == 0 ? nil : Double(bitPattern: last) + Self.clearAfter
        }

        /// Clears the warning once no event was refused for ``clearAfter`` seconds before `now`.
        func clearIfQuiet(now: Double) {
            let last = lastRefused.load(ordering: .relaxed)
            guard last != 0, now - Double(bitPattern: last) >= Self.clearAfter,
                  lastRefused.compareExchange(expected: last, desired: 0, ordering: .relaxed).exchanged else { return }
            warnings.clear(Self.key, resolved: "no device is past input.maxEventsPerDevice any more")
        }
    }
}
