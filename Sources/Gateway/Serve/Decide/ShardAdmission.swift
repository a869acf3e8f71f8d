/// Whether a device new to this run is tracked, as values: `input.maxDevices` over all shards,
/// `input.maxDevicesPerUser` per broker user (the feed's `userLevel`; docs/limits.md),
/// and what the shard does about it (the update dropped as `tooManyDevices`, the warnings
/// raised or cleared).
///
/// It does nothing itself: no locks, no atomics, no counters. ``DeviceShard/Census`` holds the
/// shared numbers (the total as an atomic, the "refusing" flag under its admission lock, the
/// per-user ``Users`` in its lock), asks ``decide(total:refusing:user:admitToUser:)`` under the
/// admission lock and carries out the count and the flag's warning; the shard carries out the
/// rest of the ``Decision`` (`ShardAdmissionTests`).
struct ShardAdmission: Sendable, Equatable {
    /// `input.maxDevices`: devices of all shards together.
    let limit: Int
    /// `input.maxDevicesPerUser`.
    let perUserLimit: Int

    static let limitWarning = "too-many-devices"
    static let userWarning = "too-many-devices-per-user"

    /// Devices per user, and each counted device's user (kept under the census's lock, taken
    /// only for a device new to this run with a user, and when a device is forgotten).
    struct Users: Sendable, Equatable {
        private(set) var count: [String: Int] = [:]
        private(set) var of: [String: String] = [:]

        /// Counts `device` for `user` if the user has fewer than `limit` devices (or counted it
        /// already); false: refused, nothing counted.
        mutating func admit(_ device: String, user: String, limit: Int) -> Bool {
            if of[device] != nil { return true }
            guard count[user, default: 0] < limit else { return false }
            count[user, default: 0] += 1
            of[device] = user
            return true
        }

        /// Counts `device` for `user` whatever the room (a device tracked before).
        mutating func attribute(_ device: String, user: String) {
            guard of[device] == nil else { return }
            count[user, default: 0] += 1
            of[device] = user
        }

        /// `device` was forgotten: its user has room for another.
        mutating func release(_ device: String) {
            guard let user = of.removeValue(forKey: device) else { return }
            let left = count[user, default: 1] - 1
            count[user] = left > 0 ? left : nil
        }
    }

    /// What the `too-many-devices` warning (and the census's "refusing" flag beside it) does.
    enum LimitWarning: Sendable, Equatable {
        /// Nothing changes.
        case unchanged
        /// New devices are refused: set the flag; the one whose swap raised it sets the warning.
        case raise
        /// The flag was up and the devices are under the limit again: lower it; the one whose
        /// swap lowered it clears the warning.
        case clear
    }

    /// What the shard does about one new device.
    struct Decision: Sendable, Equatable {
        enum Verdict: Sendable, Equatable {
            /// Tracked: a monitor is made for it.
            case admitted
            /// `input.maxDevices` devices are tracked: dropped as `tooManyDevices`.
            case overLimit
            /// Its user has `input.maxDevicesPerUser` devices: dropped as `tooManyDevices`, and
            /// the per-user warning (origin: client) names the user.
            case overUserLimit(String)
        }

        var verdict: Verdict
        var limitWarning: LimitWarning = .unchanged

        var admitted: Bool { verdict == .admitted }
    }

    /// The user a device id names: its `level`-th level (1-based; the feed's `userLevel`, whose
    /// wildcards are the id's levels); nil for level 0 (none) or an id with fewer levels.
    static func user(of device: String, level: Int) -> String? {
        guard level > 0 else { return nil }
        var remaining = level
        for part in device.split(separator: "/", omittingEmptySubsequences: false) {
            remaining -= 1
            if remaining == 0 { return String(part) }
        }
        return nil
    }

    /// Decides about a new device. `total`: the devices of all shards now; `refusing`: the
    /// census's flag as last seen; `user`: the device's user (``user(of:level:)``);
    /// `admitToUser`: counts the device for that user if there is room (``Users/admit(_:user:limit:)``
    /// under the census's lock), asked only when the device is under `input.maxDevices` and
    /// has a user, so a device without one never takes that lock.
    func decide(total: Int, refusing: Bool, user: String?, admitToUser: (String) -> Bool) -> Decision {
        if total >= limit { return Decision(verdict: .overLimit, limitWarning: .raise) }
        let warning: LimitWarning = refusing ? .clear : .unchanged
        if let user, !admitToUser(user) { return Decision(verdict: .overUserLimit(user), limitWarning: warning) }
        return Decision(verdict: .admitted, limitWarning: warning)
    }

    /// The status text of the `too-many-devices` warning.
    var limitWarningText: String {
        "\(limit) devices are tracked (input.maxDevices): updates of new devices are dropped as tooManyDevices"
    }

    /// The status text of the `too-many-devices-per-user` warning for `user`.
    func userWarningText(_ user: String) -> String {
        "user \(user) has \(perUserLimit) devices (input.maxDevicesPerUser): updates of its new device ids are dropped as tooManyDevices"
    }
}
